package profiles_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/nexuskernel/nexus/core/store"
	"github.com/nexuskernel/nexus/core/store/storetest"
)

// example111 is the example request configuration (docs/api.md#agent-profiles).
const example111 = `{
  "tool_definitions": [
    {"type": "function", "function": {"name": "Agent"}, "canonical": "nexus.graph.delegate_task",
     "params": {"run_in_background": {"maps_to": "wait", "invert": true, "description": "true (the default): the job runs in the background and its answer arrives later. false: this turn waits for it."}}},
    {"type": "function", "function": {"name": "skill"}, "canonical": "nexus.skill.load", "defer_loading": true},
    {"type": "function", "function": {"name": "remote_read", "description": "Read a file on the build machine.", "parameters": {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}},
     "route": {"kind": "runner", "runner_executor_public_id": "01900000-0000-7000-8000-000000000051", "tool_name": "read"}}
  ],
  "kernel_tools": ["nexus.tools.search", "nexus.tools.call", "nexus.graph.wait"],
  "runner_executor_public_ids": ["01900000-0000-7000-8000-000000000051"],
  "runner_tool_names": null,
  "approval_mode": "rules",
  "approval_rules": [{"tool": "delegate_task|wait|skill|tool_search|tool_call", "verdict": "allow"}],
  "default_model": "mock/scripted",
  "instructions": "You are a careful build assistant."
}`

// emptyReadBack is the configuration before the first PUT (docs/api.md#agent-profiles).
const emptyReadBack = `{"tool_definitions":[],"kernel_tools":[],"runner_executor_public_ids":[],"runner_tool_names":null,"tool_provider_tools":[],"eager_tool_names":[],"pin_imports":false,` +
	`"approval_mode":null,"approval_rules":null,"default_model":null,"instructions":null}`

func TestEmptyProfile(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		e := newEnv(t, s)
		c, err := e.svc.Configuration(context.Background(), e.agent)
		if err != nil {
			t.Fatal(err)
		}
		if got := readBack(t, c); got != emptyReadBack {
			t.Fatalf("read-back before the first PUT:\n got %s\nwant %s", got, emptyReadBack)
		}
		p, err := e.svc.Current(context.Background(), s.Reader(), e.agent.ID)
		if err != nil {
			t.Fatal(err)
		}
		if p.Revision != 0 || p.Tools.Len() != 0 || p.ApprovalMode != nil || p.FrozenApprovalMode() != "bypass" ||
			p.Imports.RunnerToolNames != nil || p.Imports.KernelTools == nil || p.WorkspaceID != e.agent.WorkspaceID {
			t.Fatalf("empty profile = %+v", p)
		}
		// An empty configuration object clears to the same read-back.
		if got := readBack(t, e.mustPut(t, `{}`)); got != emptyReadBack {
			t.Fatalf("read-back of {}: %s", got)
		}
	})
}

// TestReadBackAndIdempotence: the example is stored as its render with the import fields
// (docs/api.md#agent-profiles), and a declaration read back and stored again re-declares to the
// same bytes.
func TestReadBackAndIdempotence(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		e := newEnv(t, s)
		ctx := context.Background()
		first := e.mustPut(t, example111)
		if first.Revision != 1 {
			t.Fatalf("revision = %d", first.Revision)
		}
		// The stored render is the compiler's: rendered and sorted, alias facts kept.
		want, err := e.c.Compile([]byte(`[` + strings.Join([]string{
			`{"type":"function","function":{"name":"Agent"},"canonical":"nexus.graph.delegate_task","params":{"run_in_background":{"maps_to":"wait","invert":true,"description":"true (the default): the job runs in the background and its answer arrives later. false: this turn waits for it."}}}`,
			`{"type":"function","function":{"name":"skill"},"canonical":"nexus.skill.load","defer_loading":true}`,
			`{"type":"function","function":{"name":"remote_read","description":"Read a file on the build machine.","parameters":{"type":"object","properties":{"path":{"type":"string"}},"required":["path"]}},"route":{"kind":"runner","runner_executor_public_id":"01900000-0000-7000-8000-000000000051","tool_name":"read"}}`,
		}, ",") + `]`))
		if err != nil {
			t.Fatal(err)
		}
		wantReadBack := `{"tool_definitions":` + string(want.Bytes()) +
			`,"kernel_tools":["nexus.tools.search","nexus.tools.call","nexus.graph.wait"],` +
			`"runner_executor_public_ids":["01900000-0000-7000-8000-000000000051"],"runner_tool_names":null,` +
			`"tool_provider_tools":[],"eager_tool_names":[],"pin_imports":false,` +
			`"approval_mode":"rules","approval_rules":[{"tool":"delegate_task|wait|skill|tool_search|tool_call","verdict":"allow"}],` +
			`"default_model":"mock/scripted","instructions":"You are a careful build assistant."}`
		if got := readBack(t, first); got != wantReadBack {
			t.Fatalf("read-back:\n%s", cmp.Diff(wantReadBack, got))
		}
		if !strings.HasPrefix(string(first.ToolDefinitions), `[{"type":"function","function":{"name":"Agent","description":"Start a background subagent for one job. Put several Agent calls`) {
			t.Fatalf("Agent is not rendered with its own name: %.200s", first.ToolDefinitions)
		}
		got, err := e.svc.Configuration(ctx, e.agent)
		if err != nil {
			t.Fatal(err)
		}
		if readBack(t, got) != wantReadBack {
			t.Fatal("GET differs from the PUT's read-back")
		}
		// Idempotence: the read-back, stored again, reads back byte for byte.
		again := e.mustPut(t, readBack(t, got))
		if readBack(t, again) != wantReadBack || again.Revision != 2 {
			t.Fatalf("re-declared (revision %d):\n%s", again.Revision, cmp.Diff(wantReadBack, readBack(t, again)))
		}
		// The snapshot acceptance reads holds the same set and facts.
		p, err := e.svc.Current(ctx, s.Reader(), e.agent.ID)
		if err != nil {
			t.Fatal(err)
		}
		if string(p.Tools.Bytes()) != string(want.Bytes()) || p.Revision != 2 || p.FrozenApprovalMode() != "rules" ||
			*p.DefaultModel != "mock/scripted" || *p.Instructions != "You are a careful build assistant." ||
			string(p.ApprovalRules) != `[{"tool":"delegate_task|wait|skill|tool_search|tool_call","verdict":"allow"}]` {
			t.Fatalf("profile snapshot = %+v", p)
		}
		if d := cmp.Diff([]string{"nexus.tools.search", "nexus.tools.call", "nexus.graph.wait"}, p.Imports.KernelTools); d != "" {
			t.Fatal(d)
		}
		// The other agent's profile is its own.
		other, _ := e.svc.Configuration(ctx, e.other)
		if readBack(t, other) != emptyReadBack {
			t.Fatalf("the other agent's profile: %s", readBack(t, other))
		}
	})
}

// TestReadBackForms: ids read back lowercase, runner_tool_names exactly ([] stays [], null
// stays null), absent import lists as [], an empty declaration as [].
func TestReadBackForms(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		e := newEnv(t, s)
		cases := []struct{ in, want string }{
			{`{"runner_executor_public_ids":["01900000-0000-7000-8000-0000000000AB"],"runner_tool_names":[]}`,
				`{"tool_definitions":[],"kernel_tools":[],"runner_executor_public_ids":["01900000-0000-7000-8000-0000000000ab"],"runner_tool_names":[],"tool_provider_tools":[],"eager_tool_names":[],"pin_imports":false,"approval_mode":null,"approval_rules":null,"default_model":null,"instructions":null}`},
			{`{"tool_definitions":null,"kernel_tools":null,"runner_executor_public_ids":null,"runner_tool_names":["read"],"tool_provider_tools":[],"eager_tool_names":[],"pin_imports":false,"approval_mode":"ask","approval_rules":[],"instructions":""}`,
				`{"tool_definitions":[],"kernel_tools":[],"runner_executor_public_ids":[],"runner_tool_names":["read"],"tool_provider_tools":[],"eager_tool_names":[],"pin_imports":false,"approval_mode":"ask","approval_rules":[],"default_model":null,"instructions":""}`},
			{`{"tool_definitions":[],"instructions":"<b>&\u2028</b>","unknown":1}`,
				`{"tool_definitions":[],"kernel_tools":[],"runner_executor_public_ids":[],"runner_tool_names":null,"tool_provider_tools":[],"eager_tool_names":[],"pin_imports":false,"approval_mode":null,"approval_rules":null,"default_model":null,"instructions":"<b>&` + "\u2028" + `</b>"}`},
		}
		for _, tc := range cases {
			if got := readBack(t, e.mustPut(t, tc.in)); got != tc.want {
				t.Errorf("put %s:\n got %s\nwant %s", tc.in, got, tc.want)
			}
		}
	})
}

// TestFieldRefusals: each field's words, with field and unprefixed path; the first failing
// field in the door's order wins; a refused replacement stores nothing.
func TestFieldRefusals(t *testing.T) {
	t.Parallel()
	big := strings.Repeat("x", 64*1024+1)
	cases := []struct {
		name, cfg, word, field, path string
	}{
		{"tool_definitions grammar first", `{"tool_definitions":[{"type":"function","name":"x","bad":1}],"kernel_tools":["spawn"],"approval_mode":"no"}`,
			"invalid", "tool_definitions", "tool_definitions[0].bad"},
		{"tool_definitions not an array", `{"tool_definitions":{}}`, "invalid", "tool_definitions", "tool_definitions"},
		{"tool_definitions repeated", `{"tool_definitions":[],"tool_definitions":[]}`, "invalid", "tool_definitions", "tool_definitions"},
		{"alias word", `{"tool_definitions":[{"name":"A","canonical":"delegate_task","params":{"bg":{"maps_to":"background"}}}]}`,
			"alias_param_unknown", "tool_definitions", "tool_definitions[0].params.bg.maps_to"},
		{"kernel_tools before ids", `{"kernel_tools":["spawn"],"runner_executor_public_ids":["x"],"approval_mode":"rules"}`,
			"invalid", "kernel_tools", "kernel_tools[0]"},
		{"kernel_tools wildcard", `{"kernel_tools":["nexus.memory.*"],"approval_mode":"rules"}`, "invalid", "kernel_tools", "kernel_tools[0]"},
		{"kernel_tools repeated name", `{"kernel_tools":["nexus.graph.wait","nexus.graph.wait"],"approval_mode":"rules"}`, "invalid", "kernel_tools", "kernel_tools[1]"},
		{"kernel_tools repeated field", `{"kernel_tools":[],"kernel_tools":[]}`, "invalid", "kernel_tools", "kernel_tools"},
		{"approval_mode repeated field", `{"approval_mode":"ask","approval_mode":"ask"}`, "invalid", "approval_mode", "approval_mode"},
		{"instructions repeated after a bad model", `{"default_model":"x","instructions":"a","instructions":"b"}`, "invalid", "default_model", "default_model"},
		{"a repeated import after a bad declaration", `{"tool_definitions":[1],"runner_tool_names":[],"runner_tool_names":[]}`, "invalid", "tool_definitions", "tool_definitions[0]"},
		{"a repeated import before a bad one", `{"kernel_tools":[],"kernel_tools":[],"runner_tool_names":[""]}`, "invalid", "kernel_tools", "kernel_tools"},
		{"a bad import before a repeated one", `{"kernel_tools":["spawn"],"runner_tool_names":[],"runner_tool_names":[]}`, "invalid", "kernel_tools", "kernel_tools[0]"},
		{"ids not an array", `{"runner_executor_public_ids":"01900000-0000-7000-8000-000000000051"}`, "invalid", "runner_executor_public_ids", "runner_executor_public_ids"},
		{"ids repeated case-insensitively", `{"runner_executor_public_ids":["` + runner51 + `","` + strings.ToUpper(runner51) + `"]}`,
			"invalid", "runner_executor_public_ids", "runner_executor_public_ids[1]"},
		{"tool names", `{"runner_tool_names":["read",""]}`, "invalid", "runner_tool_names", "runner_tool_names[1]"},
		{"approval_mode required by tools", `{"tool_definitions":[{"type":"function","name":"x"}],"approval_rules":"x"}`,
			"required", "approval_mode", "approval_mode"},
		{"approval_mode required by kernel_tools", `{"kernel_tools":["nexus.graph.wait"],"approval_mode":null}`, "required", "approval_mode", "approval_mode"},
		{"approval_mode required by runner import", `{"runner_executor_public_ids":["` + runner51 + `"]}`, "required", "approval_mode", "approval_mode"},
		{"approval_mode invalid", `{"approval_mode":"never","approval_rules":"x"}`, "invalid", "approval_mode", "approval_mode"},
		{"approval_mode not a string", `{"approval_mode":true}`, "invalid", "approval_mode", "approval_mode"},
		{"approval_rules before default_model", `{"approval_rules":[{"tool":"x"}],"default_model":"nope"}`, "invalid", "approval_rules", "approval_rules[0].verdict"},
		{"default_model form", `{"default_model":"scripted","instructions":1}`, "invalid", "default_model", "default_model"},
		{"default_model not a string", `{"default_model":7}`, "invalid", "default_model", "default_model"},
		{"default_model unknown", `{"default_model":"mock/nope","instructions":1}`, "unknown_model", "default_model", "default_model"},
		{"instructions not a string", `{"instructions":["x"]}`, "invalid", "instructions", "instructions"},
		{"instructions NUL", `{"instructions":"a\u0000b"}`, "invalid", "instructions", "instructions"},
		{"instructions too large", `{"instructions":"` + big + `"}`, "content_too_large", "instructions", "instructions"},
	}
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		e := newEnv(t, s)
		before := readBack(t, e.mustPut(t, `{"instructions":"kept","approval_mode":"ask"}`))
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				_, err := e.put(t, e.agent, tc.cfg)
				r := refusalOf(t, err)
				if r.Word != tc.word || r.Field != tc.field || r.Path != tc.path {
					t.Fatalf("refusal %s %s %s, want %s %s %s", r.Word, r.Field, r.Path, tc.word, tc.field, tc.path)
				}
				after, err := e.svc.Configuration(context.Background(), e.agent)
				if err != nil {
					t.Fatal(err)
				}
				if readBack(t, after) != before || after.Revision != 1 {
					t.Fatalf("a refused PUT changed the profile: %s", readBack(t, after))
				}
			})
		}
	})
}

// TestApprovalModeNotRequired: a profile whose Runner import imports nothing, or that has only
// candidates, needs no approval_mode.
func TestApprovalModeNotRequired(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		e := newEnv(t, s)
		for _, cfg := range []string{
			`{"runner_executor_public_ids":["` + runner51 + `"],"runner_tool_names":[]}`,
			`{"runner_tool_names":null,"kernel_tools":[],"tool_definitions":[]}`,
		} {
			if _, err := e.put(t, e.agent, cfg); err != nil {
				t.Errorf("%s: %v", cfg, err)
			}
		}
	})
}

func TestApprovalRulesGrammar(t *testing.T) {
	t.Parallel()
	many := make([]string, 257)
	for i := range many {
		many[i] = `{"tool":"t","verdict":"allow"}`
	}
	long := `[{"tool":"` + strings.Repeat("t", 64*1024) + `","verdict":"allow"}]`
	cases := []struct{ rules, path string }{
		{`{}`, "approval_rules"},
		{`"allow"`, "approval_rules"},
		{`[` + strings.Join(many, ",") + `]`, "approval_rules"},
		{long, "approval_rules"},
		{`[1]`, "approval_rules[0]"},
		{`[{"tool":"t","verdict":"allow"},{"tool":"t","verdict":"allow","tool":"u"}]`, "approval_rules[1]"},
		{`[{"tool":"t","verdict":"allow","zeta":1,"alpha":2}]`, "approval_rules[0].alpha"},
		{`[{"verdict":"allow"}]`, "approval_rules[0].tool"},
		{`[{"tool":"","verdict":"allow"}]`, "approval_rules[0].tool"},
		{`[{"tool":3,"verdict":"allow"}]`, "approval_rules[0].tool"},
		{`[{"tool":"t"}]`, "approval_rules[0].verdict"},
		{`[{"tool":"t","verdict":"maybe"}]`, "approval_rules[0].verdict"},
		{`[{"tool":"t","verdict":"allow","path":1}]`, "approval_rules[0].path"},
		{`[{"tool":"t","verdict":"allow","path":"a","match":false}]`, "approval_rules[0].match"},
		{`[{"tool":"t","verdict":"deny","reason":null}]`, "approval_rules[0].reason"},
		{`[{"tool":"t","verdict":"allow","origin":"user"}]`, "approval_rules[0].origin"},
		{`[{"tool":"t","verdict":"allow","match":"x*"}]`, "approval_rules[0].match"},
	}
	lawful := `[{"tool":"memory_*|wait","verdict":"allow"},{"tool":"http_get","verdict":"ask","path":"args.0","match":"https://*","reason":"r","origin":"author"},{"verdict":"deny","tool":"k","origin":"kernel"},{"tool":"m","verdict":"allow","path":"p","origin":"model"}]`
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		e := newEnv(t, s)
		for _, tc := range cases {
			_, err := e.put(t, e.agent, `{"approval_rules":`+tc.rules+`}`)
			r := refusalOf(t, err)
			if r.Word != "invalid" || r.Field != "approval_rules" || r.Path != tc.path {
				t.Errorf("rules %.60s: %s %s %s, want invalid at %s", tc.rules, r.Word, r.Field, r.Path, tc.path)
			}
		}
		got := e.mustPut(t, `{"approval_rules":`+lawful+`}`)
		if string(got.ApprovalRules) != lawful {
			t.Fatalf("lawful rules stored as %s", got.ApprovalRules)
		}
	})
}

// TestReplacementsSerialize: concurrent replacements of one profile each get their own
// revision, and the stored profile is exactly one of them.
func TestReplacementsSerialize(t *testing.T) {
	t.Parallel()
	const writers = 8
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		e := newEnv(t, s)
		var wg sync.WaitGroup
		revisions := make(chan int64, writers)
		for i := range writers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				c, err := e.svc.PutConfiguration(context.Background(), e.agent, obj(t, fmt.Sprintf(`{"instructions":"writer %d"}`, i)))
				if err != nil {
					t.Error(err)
					return
				}
				revisions <- c.Revision
			}()
		}
		wg.Wait()
		close(revisions)
		seen := map[int64]bool{}
		for r := range revisions {
			if seen[r] || r < 1 || r > writers {
				t.Fatalf("revision %d handed out twice or out of range", r)
			}
			seen[r] = true
		}
		final, err := e.svc.Configuration(context.Background(), e.agent)
		if err != nil {
			t.Fatal(err)
		}
		if final.Revision != writers || final.Instructions == nil || !strings.HasPrefix(*final.Instructions, "writer ") {
			t.Fatalf("final profile: revision %d, %s", final.Revision, readBack(t, final))
		}
	})
}

// TestStoredRenderThatNoLongerCompiles: a stored declaration the current registry refuses (a
// kernel text changed since it was stored) still reads back on the door, and acceptance gets
// the declaration word.
func TestStoredRenderThatNoLongerCompiles(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		e := newEnv(t, s)
		ctx := context.Background()
		stale := `[{"type":"function","function":{"name":"wait","description":"An older text.","parameters":{"type":"object"}}}]`
		row := &store.AgentProfile{AgentID: e.agent.ID, ToolDefinitions: stale, KernelTools: `[]`, RunnerExecutorPublicIDs: `[]`}
		row.ApprovalMode.String, row.ApprovalMode.Valid = "ask", true
		if err := s.Write(ctx, func(tx *store.Tx) error { return store.PutAgentProfile(ctx, tx, row) }); err != nil {
			t.Fatal(err)
		}
		c, err := e.svc.Configuration(ctx, e.agent)
		if err != nil || string(c.ToolDefinitions) != stale {
			t.Fatalf("read-back: %v %s", err, c.ToolDefinitions)
		}
		_, err = e.svc.Current(ctx, s.Reader(), e.agent.ID)
		if r := refusalOf(t, err); r.Word != "kernel_tool_redefined" || r.Path != "tool_definitions[0]" {
			t.Fatalf("refusal %s at %s", r.Word, r.Path)
		}
		if _, err := e.svc.Current(ctx, s.Reader(), e.agent.ID+1000); err == nil {
			t.Fatal("Current of an unknown agent succeeded")
		}
	})
}

// TestConfigurationJSON keeps the wire encoding byte-exact: no HTML escaping, and U+2028 as
// UTF-8.
func TestConfigurationJSON(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		e := newEnv(t, s)
		c := e.mustPut(t, `{"tool_definitions":[{"type":"function","name":"x","description":"<&>\u2028"}],"approval_mode":"bypass"}`)
		b, _ := c.MarshalJSON()
		if !strings.Contains(string(b), "\"description\":\"<&>\u2028\"") {
			t.Fatalf("escaped: %s", b)
		}
		var decoded map[string]any
		if err := json.Unmarshal(b, &decoded); err != nil || len(decoded) != 11 {
			t.Fatalf("not an 11-field object: %v %s", err, b)
		}
	})
}

// TestGuardRunsInTheReplacement: a replacement's Guard runs inside its transaction, reading what
// that transaction reads; its refusal is returned unchanged and nothing is stored. A read does not
// call it.
func TestGuardRunsInTheReplacement(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		e := newEnv(t, s)
		e.mustPut(t, `{"instructions":"kept"}`)
		refused := fmt.Errorf("the caller no longer stands over this agent")
		calls := 0
		guarded := e.agent
		guarded.Guard = func(ctx context.Context, tx *store.Tx) error {
			calls++
			// The guard reads through the replacement's own transaction.
			var n int
			if err := tx.Get(ctx, &n, `SELECT COUNT(*) FROM agent_profiles WHERE agent_id = ?`, guarded.ID); err != nil || n != 1 {
				return fmt.Errorf("the guard read %d profiles: %v", n, err)
			}
			return refused
		}
		if _, err := e.svc.PutConfiguration(ctx, guarded, obj(t, `{"instructions":"changed"}`)); err != refused {
			t.Fatalf("a refusing guard: %v, want its refusal unchanged", err)
		}
		if _, err := e.svc.Configuration(ctx, guarded); err != nil || calls != 1 {
			t.Fatalf("read with a guard: %v, guard calls %d, want 1 (the refused PUT's)", err, calls)
		}
		c, err := e.svc.Configuration(ctx, e.agent)
		if err != nil || c.Instructions == nil || *c.Instructions != "kept" || c.Revision != 1 {
			t.Fatalf("after a refused guard: %+v, %v", c, err)
		}
		guarded.Guard = func(context.Context, *store.Tx) error { calls++; return nil }
		if c, err := e.svc.PutConfiguration(ctx, guarded, obj(t, `{"instructions":"changed"}`)); err != nil || *c.Instructions != "changed" || calls != 2 {
			t.Fatalf("an admitting guard: %+v, %v, calls %d", c, err, calls)
		}
	})
}
