package model

import (
	"encoding/json"
	"testing"
)

// TestRequestOptionsPlaceholders: a round offered no tools that replays calls, sealed for a
// provider whose calls need definitions, records one placeholder per distinct call name in order
// of first appearance with tool_choice none; another provider's, or a round that offers tools,
// records none.
func TestRequestOptionsPlaceholders(t *testing.T) {
	t.Parallel()
	size := func(v int64) *int64 { return &v }
	m := Model{Ref: "an/m", Capabilities: Capabilities{MaxOutputTokens: size(1024)}}
	needs := ProviderCapabilities{CacheUsage: true, CallsNeedDefinitions: true}
	entries := []Entry{
		{Role: RoleUser},
		{Role: RoleAssistant, ToolCalls: []ToolCall{{ID: "a", Name: "read_file"}, {ID: "b", Name: "grep"}}},
		{Role: RoleAssistant, ToolCalls: []ToolCall{{ID: "c", Name: "read_file"}}},
	}
	encode := func(o RequestOptions) string {
		t.Helper()
		b, err := o.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	want := `{"tools":[{"type":"function","function":{"name":"read_file","description":"Not available in this request.","parameters":{"type":"object","properties":{}},"strict":false}},` +
		`{"type":"function","function":{"name":"grep","description":"Not available in this request.","parameters":{"type":"object","properties":{}},"strict":false}}],"tool_choice":"none","max_output_tokens":1024}`
	if got := encode(RequestOptionsFor(nil, "", entries, m, needs)); got != want {
		t.Errorf("placeholders\n got %s\nwant %s", got, want)
	}
	if got := encode(RequestOptionsFor(nil, "", entries, m, ProviderCapabilities{CacheUsage: true})); got != `{"tools":[],"max_output_tokens":1024}` {
		t.Errorf("calls without definitions %s", got)
	}
	if got := encode(RequestOptionsFor(nil, "", entries[:1], m, needs)); got != `{"tools":[],"max_output_tokens":1024}` {
		t.Errorf("no calls replayed %s", got)
	}
	offered := []json.RawMessage{json.RawMessage(`{"type":"function","function":{"name":"x","strict":false}}`)}
	if got := encode(RequestOptionsFor(offered, "", entries, m, needs)); got != `{"tools":[{"type":"function","function":{"name":"x","strict":false}}],"tool_choice":"auto","max_output_tokens":1024}` {
		t.Errorf("offered %s", got)
	}
}

// TestRequestOptionsRoundTrip: request_options read back encode to the same bytes, and their
// tools read as the schemas a provider receives.
func TestRequestOptionsRoundTrip(t *testing.T) {
	t.Parallel()
	o := RequestOptions{Tools: []json.RawMessage{json.RawMessage(`{"type":"function","function":{"name":"x","strict":false},"defer_loading":true}`)},
		ToolChoice: "auto", MaxOutputTokens: 8192, Reasoning: &Reasoning{Thinking: "enabled", BudgetTokens: 4096, Effort: "high"}, ToolSearch: "bm25"}
	enc, err := o.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	want := `{"tools":[{"type":"function","function":{"name":"x","strict":false},"defer_loading":true}],"tool_choice":"auto","max_output_tokens":8192,` +
		`"reasoning":{"thinking":"enabled","budget_tokens":4096,"effort":"high"},"tool_search":{"mode":"native","variant":"bm25"}}`
	if string(enc) != want {
		t.Fatalf("encoded %s", enc)
	}
	var back RequestOptions
	if err := json.Unmarshal(enc, &back); err != nil {
		t.Fatal(err)
	}
	if again, _ := back.MarshalJSON(); string(again) != want {
		t.Errorf("read back as %s", again)
	}
	req := &Request{}
	if err := back.Apply(req); err != nil || len(req.Tools) != 1 || !req.Tools[0].DeferLoading || req.ToolChoice != "auto" ||
		req.MaxOutputTokens != 8192 || req.Reasoning == nil || req.Reasoning.BudgetTokens != 4096 || req.ToolSearch != "bm25" {
		t.Errorf("applied %+v %v", req, err)
	}
	if err := json.Unmarshal([]byte(`{"tools":{}}`), &back); err == nil {
		t.Error("request_options whose tools are no array were read")
	}
	if err := (RequestOptions{Tools: []json.RawMessage{json.RawMessage(`1`)}}).Apply(req); err == nil {
		t.Error("a recorded tool that is no schema was applied")
	}
}
