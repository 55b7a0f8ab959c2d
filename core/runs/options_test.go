package runs

import (
	"encoding/json"
	"testing"

	"github.com/nexuskernel/nexus/core/model"
)

// TestOptionsSuffix: a sealed request's suffix is request_options between the entries' end and
// the envelope's, and reads back to the same options; a suffix of another shape is an error.
func TestOptionsSuffix(t *testing.T) {
	t.Parallel()
	o := model.RequestOptions{Tools: []json.RawMessage{json.RawMessage(`{"type":"function","function":{"name":"x","strict":false}}`)},
		ToolChoice: model.ToolChoiceAuto, MaxOutputTokens: 1024}
	suffix, err := optionsSuffix(o)
	if err != nil {
		t.Fatal(err)
	}
	want := `],"request_options":{"tools":[{"type":"function","function":{"name":"x","strict":false}}],"tool_choice":"auto","max_output_tokens":1024}}}`
	if string(suffix) != want {
		t.Fatalf("suffix %s", suffix)
	}
	back, err := parseOptions(suffix)
	if err != nil {
		t.Fatal(err)
	}
	if enc, _ := back.MarshalJSON(); string(enc) != want[len(optionsPrefix):len(want)-2] {
		t.Errorf("read back as %s", enc)
	}
	for _, bad := range []string{`]}`, `],"request_options":{"tools":[]}`, `],"request_options":{"tools":{}}}}`} {
		if _, err := parseOptions([]byte(bad)); err == nil {
			t.Errorf("suffix %s was read", bad)
		}
	}
}

// TestUsageShape: a provider that counts prompt caches stores both cache counts, zero included;
// another's usage keeps its shape.
func TestUsageShape(t *testing.T) {
	t.Parallel()
	u := model.Usage{InputTokens: 10, OutputTokens: 2}
	for caps, want := range map[model.ProviderCapabilities]string{
		{CacheUsage: true}:           `{"input_tokens":10,"output_tokens":2,"cached_input_tokens":0,"cache_write_input_tokens":0}`,
		{CallsNeedDefinitions: true}: `{"input_tokens":10,"output_tokens":2}`,
		{}:                           `{"input_tokens":10,"output_tokens":2}`,
	} {
		if got := *jsonText(usageOf(caps, u, nil)); got != want {
			t.Errorf("%+v: %s, want %s", caps, got, want)
		}
	}
}
