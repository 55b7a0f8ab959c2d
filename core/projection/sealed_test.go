package projection

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/nexuskernel/nexus/core/declare/jsonv"
	"github.com/nexuskernel/nexus/core/refusal"
)

// runsExample is the sealed request of docs/development.md#how-the-kernel-runs-work, as written
// there (indented).
const runsExample = `{"request": {
  "model": "mock/scripted",
  "sealed_at": "2025-03-01T09:30:01.050Z",
  "entries": [
    {"role": "system", "content": [{"type": "text", "text": "You are a careful assistant."}]},
    {"role": "user", "content": [{"type": "text", "text": "What is on this page?"}]},
    {"role": "assistant", "content": [],
     "tool_calls": [{"id": "mock_r1_0", "name": "screenshot", "arguments": "{\"url\":\"https://example.test\"}"}]},
    {"role": "tool", "tool_call_id": "mock_r1_0", "name": "screenshot", "is_error": false,
     "content": [{"type": "text", "text": "Captured the page."}]},
    {"role": "user", "content": [
      {"type": "attachment", "upload_public_id": "6f1b2c3d-0000-4000-8000-00000000aa01",
       "media_type": "image/png", "name": "page.png", "byte_size": 48213,
       "sha256": "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
       "source_task": "r2t0"}
    ]}
  ],
  "request_options": {
    "tools": [
      {"type": "function", "function": {"name": "screenshot", "description": "Capture a page.",
        "parameters": {"type": "object", "properties": {"url": {"type": "string"}}, "required": ["url"]},
        "strict": false}}
    ],
    "tool_choice": "auto",
    "max_output_tokens": 8192
  }
}}`

func exampleRequest(t *testing.T) *Request {
	t.Helper()
	tool, err := jsonv.DecodeString(`{"type":"function","function":{"name":"screenshot","description":"Capture a page.","parameters":{"type":"object","properties":{"url":{"type":"string"}},"required":["url"]},"strict":false}}`)
	if err != nil {
		t.Fatal(err)
	}
	return &Request{
		Model:    "mock/scripted",
		SealedAt: time.Date(2025, 3, 1, 9, 30, 1, 50_000_000, time.UTC),
		Entries: []Entry{
			{Role: RoleSystem, Content: []Part{Text("You are a careful assistant.")}},
			OpeningUserEntry("", "What is on this page?"),
			{Role: RoleAssistant, Content: []Part{}, ToolCalls: []ToolCall{{ID: "mock_r1_0", Name: "screenshot", Arguments: `{"url":"https://example.test"}`}}},
			{Role: RoleTool, ToolCallID: "mock_r1_0", Name: "screenshot", Content: []Part{Text("Captured the page.")}},
			{Role: RoleUser, Content: []Part{{Type: PartAttachment, UploadPublicID: "6f1b2c3d-0000-4000-8000-00000000aa01", MediaType: "image/png",
				Name: "page.png", ByteSize: 48213, SHA256: "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08", SourceTask: "r2t0"}}},
		},
		Tools:           []jsonv.Value{tool},
		MaxOutputTokens: 8192,
	}
}

// TestSealedRequestMatchesRunsExample: the encoding is the example (docs/api.md#runs), compacted.
func TestSealedRequestMatchesRunsExample(t *testing.T) {
	t.Parallel()
	var want bytes.Buffer
	if err := json.Compact(&want, []byte(runsExample)); err != nil {
		t.Fatal(err)
	}
	got := exampleRequest(t).Encode()
	if !bytes.Equal(got, want.Bytes()) {
		t.Fatalf("sealed request differs:\n%s", cmp.Diff(want.String(), string(got)))
	}
}

// TestSealedRequestRoundTrip: Split and Join give the same bytes, and ParseRequest reads back a
// request that encodes to them.
func TestSealedRequestRoundTrip(t *testing.T) {
	t.Parallel()
	r := exampleRequest(t)
	enc := r.Encode()
	prefix, entries, suffix := r.Split()
	if len(entries) != len(r.Entries) || !bytes.Equal(Join(prefix, entries, suffix), enc) {
		t.Fatal("Join(Split()) differs from Encode")
	}
	back, err := ParseRequest(enc)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(back.Encode(), enc) {
		t.Fatalf("round trip differs:\n%s\n%s", enc, back.Encode())
	}
	if _, err := ParseRequest([]byte(`{"request":{"model":1}}`)); !errors.Is(err, ErrNotSealedRequest) {
		t.Fatalf("a broken request parsed: %v", err)
	}
	if _, err := ParseRequest([]byte(`[`)); !errors.Is(err, ErrNotSealedRequest) {
		t.Fatalf("broken JSON parsed: %v", err)
	}
}

// TestSealedRequestWithoutTools: request_options.tools is always present; tool_choice is
// absent when nothing is offered.
func TestSealedRequestWithoutTools(t *testing.T) {
	t.Parallel()
	r := &Request{Model: "m/x", SealedAt: time.UnixMilli(0), Entries: []Entry{OpeningUserEntry("Skills available now. …", "hi")}, MaxOutputTokens: 10}
	want := `{"request":{"model":"m/x","sealed_at":"1970-01-01T00:00:00.000Z","entries":[{"role":"user","content":[{"type":"text","text":"Skills available now. …"},{"type":"text","text":"hi"}]}],"request_options":{"tools":[],"max_output_tokens":10}}}`
	if got := string(r.Encode()); got != want {
		t.Fatalf("got  %s\nwant %s", got, want)
	}
}

// TestAnthropicStrictCapability: strict: true needs a model that supports it; otherwise the
// request is refused model_capability_unavailable, never silently loosened.
func TestAnthropicStrictCapability(t *testing.T) {
	t.Parallel()
	strict := []jsonv.Value{mustValue(t, `{"type":"function","function":{"name":"a","parameters":{"type":"object"}},"strict":true}`)}
	_, err := AnthropicTools(strict, false)
	r, ok := refusal.As(err)
	if !ok || r.Code != CodeModelCapabilityUnavailable || r.Kind != refusal.Unprocessable {
		t.Fatalf("err = %v", err)
	}
	got, err := AnthropicTools(strict, true)
	if err != nil || string(got.Encode()) != `[{"name":"a","input_schema":{"type":"object"},"strict":true}]` {
		t.Fatalf("%s %v", got.Encode(), err)
	}
	bare := []jsonv.Value{mustValue(t, `{"type":"function","name":"b","strict":false}`)}
	got, _ = AnthropicTools(bare, false)
	if string(got.Encode()) != `[{"name":"b","input_schema":{"type":"object","properties":{}}}]` {
		t.Fatalf("%s", got.Encode())
	}
}

// TestOtherWireShapes: a flat entry moves under function for Chat Completions; a top-level
// strict of a nested entry goes inside function; Responses-style tools are flat.
func TestOtherWireShapes(t *testing.T) {
	t.Parallel()
	tools := []jsonv.Value{
		mustValue(t, `{"type":"function","name":"grep","description":"Search.","parameters":{"type":"object"},"strict":false}`),
		mustValue(t, `{"type":"function","function":{"name":"read"},"strict":true}`),
	}
	if got := string(OpenAITools(tools).Encode()); got != `[{"type":"function","function":{"name":"grep","description":"Search.","parameters":{"type":"object"},"strict":false}},{"type":"function","function":{"name":"read","strict":true}}]` {
		t.Fatalf("openai %s", got)
	}
	if got := string(ResponsesTools(tools).Encode()); got != `[{"type":"function","name":"grep","description":"Search.","parameters":{"type":"object"},"strict":false},{"type":"function","name":"read","strict":true}]` {
		t.Fatalf("responses %s", got)
	}
}

// TestBoundedBlock: the tail says "skill" for one, and a block whose first line does not fit
// is the header and the tail.
func TestBoundedBlock(t *testing.T) {
	t.Parallel()
	long := "- skill / x: " + strings.Repeat("d", MaxSkillsBlockBytes)
	if got := bounded("H", []string{long}); got != "H\n(1 more skill not shown.)" {
		t.Fatalf("got %q", got)
	}
	if got := bounded("H", []string{"- a / b: c", long, "- a / z: c"}); got != "H\n- a / b: c\n(2 more skills not shown.)" {
		t.Fatalf("a line was skipped to fit a later one: %q", got)
	}
}

func mustValue(t *testing.T, s string) jsonv.Value {
	t.Helper()
	v, err := jsonv.DecodeString(s)
	if err != nil {
		t.Fatal(err)
	}
	return v
}
