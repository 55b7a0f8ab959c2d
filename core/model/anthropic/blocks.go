package anthropic

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/nexuskernel/nexus/core/model/wire"
)

// providerBlockTypes are the content blocks returned as provider_block parts and replayed by
// the kernel: thinking blocks with their signatures, and the tool search blocks of native
// deferral.
var providerBlockTypes = map[string]bool{
	"thinking": true, "redacted_thinking": true, "server_tool_use": true, "tool_search_tool_result": true,
}

// member is one top-level member of a JSON object, in its order.
type member struct {
	key   string
	value json.RawMessage
}

// members reads an object's top-level members in order.
func members(obj []byte) ([]member, error) {
	dec := json.NewDecoder(bytes.NewReader(obj))
	tok, err := dec.Token()
	if err != nil || tok != json.Delim('{') {
		return nil, fmt.Errorf("not an object")
	}
	var out []member
	for dec.More() {
		k, err := dec.Token()
		if err != nil {
			return nil, err
		}
		key, ok := k.(string)
		if !ok {
			return nil, fmt.Errorf("not an object")
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, err
		}
		out = append(out, member{key, v})
	}
	return out, nil
}

// withValues rewrites an object with some members' values replaced, keeping its key order; a
// replaced key the object lacks is added last.
func withValues(obj []byte, set map[string][]byte) ([]byte, error) {
	ms, err := members(obj)
	if err != nil {
		return nil, err
	}
	b := &wire.Body{}
	b.Raw(`{`)
	done := map[string]bool{}
	for _, m := range ms {
		b.Key(m.key)
		if v, ok := set[m.key]; ok {
			b.Bytes(v)
			done[m.key] = true
		} else if err := b.Compact(m.value); err != nil {
			return nil, err
		}
	}
	for _, k := range []string{"thinking", "signature", "input"} {
		if v, ok := set[k]; ok && !done[k] {
			b.Key(k)
			b.Bytes(v)
		}
	}
	b.Raw(`}`)
	return b.B, nil
}

// jsonString is s as a JSON string.
func jsonString(s string) []byte {
	b := &wire.Body{}
	b.String(s)
	return b.B
}
