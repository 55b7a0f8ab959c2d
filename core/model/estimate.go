package model

import "github.com/nexuskernel/nexus/sdk/jsonwire"

// bytesPerToken is the estimate's exchange rate (docs/development.md#how-the-kernel-runs-work): a
// rough, provider-neutral average of four bytes of JSON per token, used where no tokenizer is at
// hand.
const bytesPerToken = 4

// EstimateBytes is the byte count the size estimate divides: the canonical JSON of the entries
// array plus the canonical JSON of the tools array (always present, "[]" when none is offered, as
// request_options.tools always is), each encoded in the
// docs/development.md#how-the-kernel-runs-work grammar.
//
// The entries' encoder already writes canonical strings and numbers and never repeats a key, so
// their canonical form differs from it only in key order, which does not change the length:
// the entries are measured as encoded. The tools carry author-written parameter schemas and are
// canonicalized for real.
func EstimateBytes(entries []Entry, tools []ToolSchema) (int64, error) {
	var b []byte
	var err error
	b = append(b, '[')
	for i, e := range entries {
		if i > 0 {
			b = append(b, ',')
		}
		if b, err = e.appendJSON(b); err != nil {
			return 0, err
		}
	}
	entryBytes := len(b) + 1 // the closing bracket
	b = append(b[:0], '[')
	for i, t := range tools {
		if i > 0 {
			b = append(b, ',')
		}
		if b, err = t.appendJSON(b); err != nil {
			return 0, err
		}
	}
	b = append(b, ']')
	ct, err := jsonwire.CanonicalValue(b)
	if err != nil {
		return 0, err
	}
	return int64(entryBytes + len(ct)), nil
}

// EstimateTokens is the size estimate of docs/development.md#how-the-kernel-runs-work and
// docs/mock.md#usage-and-cost: EstimateBytes ÷ 4, rounded up. The history budget and the mock's
// input_tokens both use it, so they agree.
func EstimateTokens(entries []Entry, tools []ToolSchema) (int64, error) {
	n, err := EstimateBytes(entries, tools)
	if err != nil {
		return 0, err
	}
	return ceilDiv(n, bytesPerToken), nil
}

func ceilDiv(n, d int64) int64 { return (n + d - 1) / d }
