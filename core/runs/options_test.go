package runs

import (
	"encoding/json"
	"testing"

	"github.com/nexuskernel/nexus/core/model"
	"github.com/nexuskernel/nexus/core/projection"
)

func TestOptionsPlaceholders(t *testing.T) {
	t.Parallel()
	size := func(v int64) *int64 { return &v }
	an := model.Model{Ref: "an/m", ProviderType: model.ProviderTypeAnthropic, Capabilities: model.Capabilities{MaxOutputTokens: size(1024)}}
	entries := []model.Entry{
		{Role: model.RoleUser},
		{Role: model.RoleAssistant, ToolCalls: []model.ToolCall{{ID: "a", Name: "read_file"}, {ID: "b", Name: "grep"}}},
		{Role: model.RoleAssistant, ToolCalls: []model.ToolCall{{ID: "c", Name: "read_file"}}},
	}
	o := optionsFor(projection.Offer{}, entries, an)
	want := `{"tools":[{"type":"function","function":{"name":"read_file","description":"Not available in this request.","parameters":{"type":"object","properties":{}},"strict":false}},` +
		`{"type":"function","function":{"name":"grep","description":"Not available in this request.","parameters":{"type":"object","properties":{}},"strict":false}}],"tool_choice":"none","max_output_tokens":1024}`
	if got := string(o.encode()); got != want {
		t.Errorf("placeholders\n got %s\nwant %s", got, want)
	}
	// Other types and rounds that offer tools take no placeholders.
	oa := an
	oa.ProviderType = model.ProviderTypeOpenAI
	if got := string(optionsFor(projection.Offer{}, entries, oa).encode()); got != `{"tools":[],"max_output_tokens":1024}` {
		t.Errorf("openai %s", got)
	}
	offered := projection.Offer{Tools: []json.RawMessage{json.RawMessage(`{"type":"function","function":{"name":"x","strict":false}}`)}}
	if got := string(optionsFor(offered, entries, an).encode()); got != `{"tools":[{"type":"function","function":{"name":"x","strict":false}}],"tool_choice":"auto","max_output_tokens":1024}` {
		t.Errorf("offered %s", got)
	}
}

func TestOptionsRoundTrip(t *testing.T) {
	t.Parallel()
	o := requestOptions{Tools: []json.RawMessage{json.RawMessage(`{"type":"function","function":{"name":"x","strict":false},"defer_loading":true}`)},
		ToolChoice: "auto", MaxOutput: 8192, Reasoning: &model.Reasoning{Thinking: "enabled", BudgetTokens: 4096, Effort: "high"}, ToolSearch: "bm25"}
	enc := o.encode()
	want := `{"tools":[{"type":"function","function":{"name":"x","strict":false},"defer_loading":true}],"tool_choice":"auto","max_output_tokens":8192,` +
		`"reasoning":{"thinking":"enabled","budget_tokens":4096,"effort":"high"},"tool_search":{"mode":"native","variant":"bm25"}}`
	if string(enc) != want {
		t.Fatalf("encoded %s", enc)
	}
	back, err := parseOptions(append(append([]byte(optionsPrefix), enc...), "}}"...))
	if err != nil {
		t.Fatal(err)
	}
	if string(back.encode()) != want {
		t.Errorf("read back as %s", back.encode())
	}
	schemas, err := back.schemas()
	if err != nil || len(schemas) != 1 || !schemas[0].DeferLoading {
		t.Errorf("schemas %+v %v", schemas, err)
	}
	if _, err := parseOptions([]byte(`]}`)); err == nil {
		t.Error("a suffix without request_options was read")
	}
}
