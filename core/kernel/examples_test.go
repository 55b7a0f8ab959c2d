package kernel

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/nexuskernel/nexus/core/declare"
	"github.com/nexuskernel/nexus/core/registry"
	"github.com/nexuskernel/nexus/core/runs"
	"github.com/nexuskernel/nexus/sdk/announce"
)

// TestSpecExamples answers the worked examples of
// docs/agent-tools.md#tool-search-and-deferred-tools (tool_search) and
// docs/agent-tools.md#the-twenty-kernel-tools (runners_list) from the frozen facts they imply, byte
// for byte.
func TestSpecExamples(t *testing.T) {
	t.Parallel()
	const aa = "0190a5e2-0000-7000-8000-0000000000aa"
	c, err := declare.New(registry.New())
	if err != nil {
		t.Fatal(err)
	}
	set, err := c.Compile([]byte(`[{"type":"function","function":{"name":"build_logs","description":"Fetch the last build's log.","parameters":{"type":"object","properties":{"lines":{"type":"integer"}}}},"route":{"kind":"runner","runner_executor_public_id":"` + aa + `","tool_name":"build_logs"},"defer_loading":true}]`))
	if err != nil {
		t.Fatal(err)
	}
	desc := "Fetch the last build's log."
	f, err := c.Accept(declare.Acceptance{Explicit: set, Runners: []declare.Runner{{PublicID: aa, DisplayName: "Workstation", Eligible: true,
		Announcement: announce.Announcement{Environment: json.RawMessage(`{"os":"linux"}`), Tools: []announce.Tool{{Name: "build_logs", Description: &desc,
			InputSchema: json.RawMessage(`{"type":"object"}`), EffectProfile: announce.Announced(announce.EffectReadOnly)}}}}},
		Imports:   &declare.Imports{RunnerExecutorPublicIDs: []string{aa}, RunnerToolNames: []string{}},
		Selection: aa})
	if err != nil {
		t.Fatal(err)
	}
	env, _ := f.Environment.MarshalJSON()
	cat, _ := f.SkillCatalog.MarshalJSON()
	round := &runs.CallingRound{Key: "r1", ToolDefinitions: f.ToolDefinitions.Bytes(), SkillCatalog: cat, Environment: env}
	call := func(run func(context.Context, *runs.KernelCall) (*runs.KernelOutcome, error), in string) string {
		out, err := run(context.Background(), &runs.KernelCall{ToolName: "x", Input: json.RawMessage(in),
			Round: func(context.Context) (*runs.CallingRound, error) { return round, nil }})
		if err != nil {
			t.Fatal(err)
		}
		return out.Result.Content
	}
	d := &Discovery{Compiler: c}
	want := `{"tools":[{"name":"build_logs","definition":{"type":"function","function":{"name":"build_logs","description":"Fetch the last build's log.","parameters":{"type":"object","properties":{"lines":{"type":"integer"}}},"strict":false}},"route":{"kind":"runner","runner_executor_public_id":"` + aa + `","tool_name":"build_logs"},"skills":[]}],"truncated":false}`
	if got := call(d.Search, `{"query":"build logs"}`); got != want {
		t.Errorf("tool_search:\n got %s\nwant %s", got, want)
	}
	want = `{"current_runner_executor_public_id":"` + aa + `","runners":[{"runner_executor_public_id":"` + aa + `","display_name":"Workstation","environment":{"os":"linux"}}]}`
	if got := call(Runners{}.Run, `{}`); got != want {
		t.Errorf("runners_list:\n got %s\nwant %s", got, want)
	}
}
