package kernel

import (
	"bytes"
	"encoding/json"

	"github.com/nexuskernel/nexus/core/model"
	"github.com/nexuskernel/nexus/core/runs"
)

// WordInvalidArguments is the refusal word of a kernel tool's argument checks
// (docs/agent-tools.md#what-a-model-reads).
const WordInvalidArguments = model.CodeInvalidArguments

// refusedTitle is the title of a kernel tool's error result: "<wire name> refused"
// (docs/agent-tools.md#what-a-model-reads).
func refusedTitle(wire string) string { return wire + " refused" }

// ErrorResult is a kernel tool's error result (docs/agent-tools.md#what-a-model-reads): content
// "<word>: <detail>" (the word alone without a detail), is_error, title "<wire> refused", and
// structured_content {"error":{"key","detail"}} ({"error":{"key"}} without a detail).
func ErrorResult(wire, word, detail string) *runs.KernelOutcome {
	text := word
	if detail != "" {
		text += ": " + detail
	}
	type errorWire struct {
		Key    string `json:"key"`
		Detail string `json:"detail,omitempty"`
	}
	sc, _ := compactJSON(struct {
		Error errorWire `json:"error"`
	}{errorWire{word, detail}})
	return &runs.KernelOutcome{Result: &runs.KernelResult{Content: text, StructuredContent: sc, IsError: true, Title: refusedTitle(wire)}}
}

// argumentsRefused is the invalid_arguments error result of a
// docs/agent-tools.md#what-a-model-reads sentence.
func argumentsRefused(wire string, e *ArgumentsError) *runs.KernelOutcome {
	return ErrorResult(wire, WordInvalidArguments, e.Sentence)
}

// jsonResult is a JSON-answering tool's result (docs/agent-tools.md#what-a-model-reads): the object
// as compact JSON with HTML escaping off and no trailing line feed in content, the same value as
// structured_content.
func jsonResult(body []byte, title string) *runs.KernelOutcome {
	return &runs.KernelOutcome{Result: &runs.KernelResult{Content: string(body), StructuredContent: json.RawMessage(body), Title: title}}
}

// compactJSON encodes v compactly without HTML escaping and without the encoder's line feed.
func compactJSON(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}
