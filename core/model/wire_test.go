package model

import (
	"bytes"
	"encoding/json"
	"os"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// sealedExample is the sealed request (docs/development.md#how-the-kernel-runs-work) of a small
// round: a fixture whose bytes are pinned.
func sealedExample(t *testing.T) (entries []json.RawMessage, tools []json.RawMessage) {
	t.Helper()
	raw, err := os.ReadFile("testdata/sealed_request_example.json")
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Request struct {
			Entries        []json.RawMessage `json:"entries"`
			RequestOptions struct {
				Tools []json.RawMessage `json:"tools"`
			} `json:"request_options"`
		} `json:"request"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	return doc.Request.Entries, doc.Request.RequestOptions.Tools
}

func compact(t *testing.T, raw []byte) string {
	t.Helper()
	var b bytes.Buffer
	if err := json.Compact(&b, raw); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

var strictFalse = false

// The Go values of the sealed request example.
var exampleEntries = []Entry{
	{Role: RoleSystem, Content: []Part{{Type: PartText, Text: "You are a careful assistant."}}},
	{Role: RoleUser, Content: []Part{{Type: PartText, Text: "What is on this page?"}}},
	{Role: RoleAssistant, Content: []Part{}, ToolCalls: []ToolCall{{ID: "mock_r1_0", Name: "screenshot", Arguments: `{"url":"https://example.test"}`}}},
	{Role: RoleTool, ToolCallID: "mock_r1_0", Name: "screenshot", Content: []Part{{Type: PartText, Text: "Captured the page."}}},
	{Role: RoleUser, Content: []Part{{Type: PartAttachment, UploadPublicID: "6f1b2c3d-0000-4000-8000-00000000aa01",
		MediaType: "image/png", Name: "page.png", ByteSize: 48213,
		SHA256: "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08", SourceTask: "r2t0"}}},
}

var exampleTools = []ToolSchema{{Name: "screenshot", Description: "Capture a page.",
	Parameters: json.RawMessage(`{"type": "object", "properties": {"url": {"type": "string"}}, "required": ["url"]}`), Strict: &strictFalse}}

func TestEntryJSONMatchesTheSealedExample(t *testing.T) {
	t.Parallel()
	rawEntries, rawTools := sealedExample(t)
	if len(rawEntries) != len(exampleEntries) || len(rawTools) != len(exampleTools) {
		t.Fatalf("the example has %d entries and %d tools", len(rawEntries), len(rawTools))
	}
	for i, e := range exampleEntries {
		got, err := json.Marshal(e)
		if err != nil {
			t.Fatal(err)
		}
		if want := compact(t, rawEntries[i]); string(got) != want {
			t.Errorf("entry %d:\n got %s\nwant %s", i, got, want)
		}
		var back Entry
		if err := json.Unmarshal(rawEntries[i], &back); err != nil {
			t.Fatalf("entry %d: %v", i, err)
		}
		if diff := cmp.Diff(e, back); diff != "" {
			t.Errorf("entry %d read back (-want +got)\n%s", i, diff)
		}
	}
	got, err := json.Marshal(exampleTools[0])
	if err != nil {
		t.Fatal(err)
	}
	if want := compact(t, rawTools[0]); string(got) != want {
		t.Errorf("tool:\n got %s\nwant %s", got, want)
	}
	var back ToolSchema
	if err := json.Unmarshal(rawTools[0], &back); err != nil {
		t.Fatal(err)
	}
	if back.Name != "screenshot" || back.Description != "Capture a page." || back.Strict == nil || *back.Strict ||
		compact(t, back.Parameters) != compact(t, exampleTools[0].Parameters) {
		t.Errorf("tool read back as %+v", back)
	}
}

func TestEntryJSONShapes(t *testing.T) {
	t.Parallel()
	strictTrue := true
	cases := []struct {
		name string
		v    any
		want string
	}{
		{"empty content is []", Entry{Role: RoleUser}, `{"role":"user","content":[]}`},
		{"assistant without calls has no tool_calls", Entry{Role: RoleAssistant, Content: []Part{text("done")}},
			`{"role":"assistant","content":[{"type":"text","text":"done"}]}`},
		{"blank tool result", Entry{Role: RoleTool, ToolCallID: "c", Name: "n", IsError: true},
			`{"role":"tool","tool_call_id":"c","name":"n","is_error":true,"content":[]}`},
		{"no html escaping, minimal escapes", Entry{Role: RoleUser, Content: []Part{text("<a&b>\u2028\"\n\x01")}},
			"{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":\"<a&b>\u2028\\\"\\n\\u0001\"}]}"},
		{"attachment without source task", attachment("p.png"),
			`{"type":"attachment","upload_public_id":"6f1b2c3d-0000-4000-8000-00000000aa01","media_type":"image/png","name":"p.png","byte_size":48213,"sha256":"9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"}`},
		{"raw arguments stay a string", ToolCall{ID: "i", Name: "n", Arguments: `{"path":`}, `{"id":"i","name":"n","arguments":"{\"path\":"}`},
		{"bare tool schema", ToolSchema{Name: "t"}, `{"type":"function","function":{"name":"t"}}`},
		{"strict true and compacted parameters", ToolSchema{Name: "t", Parameters: json.RawMessage("{ \"z\": 1,\n \"a\": 2 }"), Strict: &strictTrue},
			`{"type":"function","function":{"name":"t","parameters":{"z":1,"a":2},"strict":true}}`},
	}
	for _, c := range cases {
		// json.Marshal would re-escape a marshaler's output for HTML; the encoder the kernel
		// seals with does not.
		got, err := encodeCompact(c.v)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if string(got) != c.want {
			t.Errorf("%s:\n got %s\nwant %s", c.name, got, c.want)
		}
	}
}

func TestEntryJSONRefuses(t *testing.T) {
	t.Parallel()
	if _, err := json.Marshal(Entry{Role: "robot"}); err == nil {
		t.Error("unknown role encoded")
	}
	if _, err := json.Marshal(Part{Type: "image"}); err == nil {
		t.Error("unknown part type encoded")
	}
	if _, err := json.Marshal(ToolSchema{Name: "t", Parameters: json.RawMessage(`{`)}); err == nil {
		t.Error("invalid parameters encoded")
	}
	for _, in := range []string{
		`{"role":"robot","content":[]}`,
		`{"role":"user"}`,
		`{"role":"user","content":[],"name":"x"}`,
		`{"role":"system","content":[],"tool_calls":[]}`,
		`{"role":"assistant","content":[],"is_error":false}`,
		`{"role":"tool","content":[],"name":"n","is_error":false}`,
		`{"role":"tool","content":[],"tool_call_id":"c","name":"n","is_error":false,"tool_calls":[]}`,
		`{"role":"user","content":[],"extra":1}`,
		`{"role":"user","content":[{"type":"text"}]}`,
		`{"role":"user","content":[{"type":"text","text":"a","name":"b"}]}`,
		`{"role":"user","content":[{"type":"attachment","upload_public_id":"u","media_type":"m","name":"n","byte_size":1}]}`,
		`{"role":"user","content":[{"type":"video","text":"a"}]}`,
		`{"role":"assistant","content":[],"tool_calls":[{"id":"i","name":"n"}]}`,
		`{"role":"assistant","content":[],"tool_calls":[{"id":"i","name":"n","arguments":{}}]}`,
	} {
		var e Entry
		if err := json.Unmarshal([]byte(in), &e); err == nil {
			t.Errorf("read %s", in)
		}
	}
	for _, in := range []string{
		`{"type":"tool","function":{"name":"t"}}`,
		`{"type":"function","function":{"description":"no name"}}`,
		`{"type":"function","name":"t","function":{"name":"t"}}`,
		`{"type":"function","function":{"name":"t"},"route":{}}`,
	} {
		var s ToolSchema
		if err := json.Unmarshal([]byte(in), &s); err == nil {
			t.Errorf("read %s", in)
		}
	}
}

func TestToolSchemaReadsBothProjectedForms(t *testing.T) {
	t.Parallel()
	cases := []struct{ in string }{
		{`{"type": "function", "name": "grep", "description": "Search files.", "parameters": {"type": "object"}, "strict": false}`},
		{`{"type": "function", "function": {"name": "grep", "description": "Search files.", "parameters": {"type": "object"}}, "strict": false}`},
		{`{"type": "function", "function": {"name": "grep", "description": "Search files.", "parameters": {"type": "object"}, "strict": false}}`},
	}
	for _, c := range cases {
		var s ToolSchema
		if err := json.Unmarshal([]byte(c.in), &s); err != nil {
			t.Fatalf("%s: %v", c.in, err)
		}
		got, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		want := `{"type":"function","function":{"name":"grep","description":"Search files.","parameters":{"type":"object"},"strict":false}}`
		if string(got) != want {
			t.Errorf("%s\n became %s", c.in, got)
		}
	}
}
