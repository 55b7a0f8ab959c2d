package declare

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestQualifiedName checks the three examples and the 63-character bound
// (docs/agent-tools.md#declaring-tools).
func TestQualifiedName(t *testing.T) {
	t.Parallel()
	for served, want := range map[string]string{
		"grep":  "grep__562fcae5dc94",
		"skill": "skill__167f5cf9f2a3",
		"a_very_long_served_tool_name_that_keeps_going_and_going_on": "a_very_long_served_tool_name_that_keeps_going_and__036e26514d28",
	} {
		if got := QualifiedName(runner51, served); got != want {
			t.Errorf("QualifiedName(%s) = %s, want %s", served, got, want)
		}
		if got := QualifiedName(strings.ToUpper(runner51), served); got != want {
			t.Errorf("the Runner id's case changed the name: %s", got)
		}
		if n := len(QualifiedName(runner51, strings.Repeat("x", 128))); n != 63 {
			t.Errorf("a 128-character served name qualifies to %d characters", n)
		}
	}
}

// TestQualifiedCollision: a qualified name that is already taken is refused
// duplicate_tool_name with that callable; nothing is overwritten.
func TestQualifiedCollision(t *testing.T) {
	t.Parallel()
	c := fixture(t)
	q := QualifiedName(runner51, "grep")
	for name, tc := range map[string]struct {
		explicit string
		tools    []string
	}{
		"taken by an explicit entry": {`[{"type":"function","name":"grep"},{"type":"function","name":"` + q + `"}]`, []string{"grep"}},
		"taken by a served name":     {`[{"type":"function","name":"grep"}]`, []string{q, "grep"}},
	} {
		set, err := c.Compile([]byte(tc.explicit))
		if err != nil {
			t.Fatal(err)
		}
		var tools []Runner
		r := runnerServing(runner51, true)
		for _, n := range tc.tools {
			r.Announcement.Tools = append(r.Announcement.Tools, modelTool(n))
		}
		tools = append(tools, r)
		_, err = c.Accept(Acceptance{Explicit: set, Imports: &Imports{RunnerExecutorPublicIDs: []string{runner51}}, Selection: runner51, Runners: tools})
		ref := refusalOf(t, err)
		if ref.Word != WordDuplicateToolName || ref.Callable != q || ref.Path != "" {
			t.Errorf("%s: got %+v", name, ref)
		}
	}
}

// TestAcceptRouteChecksOnlyTheNarrowedSet: a routed tool the narrowing leaves out cannot fail
// the acceptance (docs/development.md#the-declaration-compiler); one it keeps is checked.
func TestAcceptRouteChecksOnlyTheNarrowedSet(t *testing.T) {
	t.Parallel()
	c := fixture(t)
	set, err := c.Compile([]byte(`[` + routedRead + `,{"type":"function","name":"local"}]`))
	if err != nil {
		t.Fatal(err)
	}
	frozen, err := c.Accept(Acceptance{Explicit: set, ToolNames: []string{"local"}})
	if err != nil {
		t.Fatalf("narrowed away route still checked: %v", err)
	}
	if got := frozen.ToolDefinitions.Callables(); !cmp.Equal(got, []string{"local"}) {
		t.Fatalf("callables %v", got)
	}
	if _, err := c.Accept(Acceptance{Explicit: set, ToolNames: []string{"remote_read"}}); refusalOf(t, err).Word != WordRunnerNotEligible {
		t.Fatalf("kept route not checked: %v", err)
	}
}

// TestAcceptNarrowingRerenders: narrowing at acceptance re-renders over the final set.
func TestAcceptNarrowingRerenders(t *testing.T) {
	t.Parallel()
	c := fixture(t)
	set, err := c.Compile([]byte(`[` + agentAlias + `]`))
	if err != nil {
		t.Fatal(err)
	}
	frozen, err := c.Accept(Acceptance{Explicit: set, Imports: &Imports{KernelTools: []string{"nexus.graph.wait"}}, ToolNames: []string{"wait"}})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := string(frozen.ToolDefinitions.Bytes()), "["+string(declareD(t, "wait"))+"]"; got != want {
		t.Fatalf("got %s\nwant %s", got, want)
	}
}

// TestAcceptWithoutImportFields: a model step with none of the import fields imports nothing,
// has no candidates, and still checks routes and freezes the skill catalog.
func TestAcceptWithoutImportFields(t *testing.T) {
	t.Parallel()
	c := fixture(t)
	set, err := c.Compile([]byte(`[{"type":"function","function":{"name":"mac_skill","parameters":{"type":"object"}},"route":{"kind":"runner","runner_executor_public_id":"` + strings.ToUpper(runner51) + `","tool_name":"skill"}},{"name":"skill","canonical":"nexus.skill.load"}]`))
	if err != nil {
		t.Fatal(err)
	}
	r := runnerServing(runner51, true, modelTool("skill"), modelTool("read"))
	r.Announcement.Documents = nil
	r.Announcement.Documents = append(r.Announcement.Documents,
		docOf("zeta", "Last."), docOf("Bad_Name", "Skipped."), docOf("alpha", "First."), docOf("empty", ""))
	frozen, err := c.Accept(Acceptance{Explicit: set, Selection: runner51, Runners: []Runner{r},
		KernelSkills: []KernelSkill{
			{Source: SourceUser, Name: "commit-style", Description: "The user's."},
			{Source: SourceWorkspace, Name: "commit-style", Description: "The workspace's."},
			{Source: SourceUser, Name: "review", Description: "Review."},
			{Source: SourceWorkspace, Name: "long", Description: strings.Repeat("d", MaxSkillDescriptionBytes+1)},
		}})
	if err != nil {
		t.Fatal(err)
	}
	if got := frozen.ToolDefinitions.Callables(); !cmp.Equal(got, []string{"mac_skill", "skill"}) {
		t.Fatalf("callables %v: nothing may be imported", got)
	}
	if len(frozen.Environment.RunnerCandidates) != 0 || len(frozen.Environment.Executors) != 1 {
		t.Fatalf("environment %+v", frozen.Environment)
	}
	cat, _ := frozen.SkillCatalog.MarshalJSON()
	want := `[{"callable":"mac_skill","name":"alpha","description":"First.","source":"runner","runner_executor_public_id":"` + runner51 + `"},` +
		`{"callable":"mac_skill","name":"zeta","description":"Last.","source":"runner","runner_executor_public_id":"` + runner51 + `"},` +
		`{"callable":"skill","name":"commit-style","description":"The workspace's.","source":"workspace"},` +
		`{"callable":"skill","name":"review","description":"Review.","source":"user"}]`
	if string(cat) != want {
		t.Fatalf("skill catalog\n%s\nwant\n%s", cat, want)
	}
	env, _ := frozen.Environment.MarshalJSON()
	if want := `{"default_runner_executor_public_id":"` + runner51 + `","executors":[{"runner_executor_public_id":"` + runner51 + `","display_name":"box","environment":{}}],"runner_candidates":[]}`; string(env) != want {
		t.Fatalf("environment %s", env)
	}
}

// TestAcceptExecutorsListRoutes: executors lists the selection, then each routed Runner once,
// in set order; candidates list only eligible ones, in declared order.
func TestAcceptExecutorsListRoutes(t *testing.T) {
	t.Parallel()
	c := fixture(t)
	const r53 = "01900000-0000-7000-8000-000000000053"
	set, err := c.Compile([]byte(`[` +
		`{"type":"function","name":"b","route":{"kind":"runner","runner_executor_public_id":"` + r53 + `","tool_name":"x"}},` +
		`{"type":"function","name":"a","route":{"kind":"runner","runner_executor_public_id":"` + runner51 + `","tool_name":"x"}},` +
		`{"type":"function","name":"c","route":{"kind":"runner","runner_executor_public_id":"` + r53 + `","tool_name":"x"}}]`))
	if err != nil {
		t.Fatal(err)
	}
	frozen, err := c.Accept(Acceptance{Explicit: set, Selection: runner52,
		Imports: &Imports{RunnerExecutorPublicIDs: []string{r53, "01900000-0000-7000-8000-000000000099", runner52, runner51}, RunnerToolNames: []string{}},
		Runners: []Runner{runnerServing(runner51, true, modelTool("x")), runnerServing(runner52, true), runnerServing(r53, true, modelTool("x")),
			runnerServing("01900000-0000-7000-8000-000000000099", false)}})
	if err != nil {
		t.Fatal(err)
	}
	ids := func(rows []RunnerRow) []string {
		var out []string
		for _, r := range rows {
			out = append(out, r.RunnerExecutorPublicID[len(r.RunnerExecutorPublicID)-2:])
		}
		return out
	}
	if got := ids(frozen.Environment.Executors); !cmp.Equal(got, []string{"52", "51", "53"}) {
		t.Errorf("executors %v", got)
	}
	if got := ids(frozen.Environment.RunnerCandidates); !cmp.Equal(got, []string{"53", "52", "51"}) {
		t.Errorf("candidates %v", got)
	}
}

// TestAcceptSelectionIsCaseInsensitive: ids compare case-insensitively and come out lowercase.
func TestAcceptSelectionIsCaseInsensitive(t *testing.T) {
	t.Parallel()
	c := fixture(t)
	upper := strings.ToUpper(runner51)
	frozen, err := c.Accept(Acceptance{Selection: upper, Imports: &Imports{RunnerExecutorPublicIDs: []string{runner51}},
		Runners: []Runner{runnerServing(upper, true, modelTool("read"))}})
	if err != nil {
		t.Fatal(err)
	}
	if *frozen.Environment.DefaultRunnerExecutorPublicID != runner51 {
		t.Fatalf("selection %s", *frozen.Environment.DefaultRunnerExecutorPublicID)
	}
	e, ok := frozen.ToolDefinitions.Lookup("read")
	if !ok || e.Route.RunnerID != runner51 || !e.DeferLoading {
		t.Fatalf("imported entry %+v", e)
	}
}

// TestNarrowForDelegation removes every spelling of delegate_task, named or not.
func TestNarrowForDelegation(t *testing.T) {
	t.Parallel()
	c := fixture(t)
	set, err := c.Compile([]byte(`[` + string(declareD(t, "delegate_task")) + `,` + agentAlias + `,` + string(declareD(t, "spawn")) + `,` + string(declareD(t, "wait")) + `]`))
	if err != nil {
		t.Fatal(err)
	}
	all, err := c.NarrowForDelegation(set, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := all.Callables(); !cmp.Equal(got, []string{"spawn", "wait"}) {
		t.Fatalf("callables %v", got)
	}
	named, err := c.NarrowForDelegation(set, []string{"Agent", "wait"})
	if err != nil {
		t.Fatal(err)
	}
	if got := string(named.Bytes()); got != "["+string(declareD(t, "wait"))+"]" {
		t.Fatalf("narrowed %s", got)
	}
	if _, err := c.NarrowForDelegation(set, []string{"browse"}); refusalOf(t, err).ToolName != "browse" {
		t.Fatal("an undeclared name is not refused")
	}
	if got := ToolNotDeclaredText("browse", all); got != `tool_not_declared: "browse" is not one of your tools; yours are: spawn, wait.` {
		t.Fatalf("text %q", got)
	}
}

// TestResolveRouted: a routed call runs under its served name, with its callable as the alias
// when the two differ; a non-object input is an error under an alias.
func TestResolveRouted(t *testing.T) {
	t.Parallel()
	c := fixture(t)
	set, err := c.Compile([]byte(`[` + routedRead + `,{"type":"function","name":"read","route":{"kind":"runner","runner_executor_public_id":"` + runner51 + `","tool_name":"read"}},` + agentAlias + `]`))
	if err != nil {
		t.Fatal(err)
	}
	res, err := set.ResolveCall("remote_read", json.RawMessage(`{"path":"a"}`))
	if err != nil || res.ToolName != "read" || res.Alias != "remote_read" || res.Route == nil || res.Route.RunnerID != runner51 {
		t.Fatalf("remote_read: %+v %v", res, err)
	}
	res, err = set.ResolveCall("read", json.RawMessage(`{}`))
	if err != nil || res.ToolName != "read" || res.Alias != "" {
		t.Fatalf("read: %+v %v", res, err)
	}
	if _, err := set.ResolveCall("Agent", json.RawMessage(`[1]`)); err == nil {
		t.Fatal("an array input resolved under an alias")
	}
	res, err = set.ResolveCall("Agent", json.RawMessage(`{"prompt":"a","prompt":"b","run_in_background":true,"run_in_background":false}`))
	if err != nil || string(res.Input) != `{"prompt":"b","wait":true}` || res.Canonical != "nexus.graph.delegate_task" {
		t.Fatalf("repeated keys: %s %v", res.Input, err)
	}
}

// TestParseImports covers the grammar of the three lists beyond the golden rows.
func TestParseImports(t *testing.T) {
	t.Parallel()
	c := fixture(t)
	im, err := c.ParseImports(ImportSources{KernelTools: nil, RunnerExecutorPublicIDs: []byte(`["` + strings.ToUpper(runner51) + `"]`), RunnerToolNames: []byte(`[]`)})
	if err != nil {
		t.Fatal(err)
	}
	if im.KernelTools != nil || im.RunnerToolNames == nil || len(im.RunnerToolNames) != 0 || im.RunnerImportRequested() {
		t.Fatalf("imports %+v", im)
	}
	back, _ := json.Marshal(im.ReadBack())
	if want := `{"kernel_tools":[],"runner_executor_public_ids":["` + runner51 + `"],"runner_tool_names":[],"tool_provider_tools":[],"eager_tool_names":[]}`; string(back) != want {
		t.Fatalf("read back %s", back)
	}
	im, err = c.ParseImports(ImportSources{KernelTools: []byte(`null`), RunnerExecutorPublicIDs: []byte(`["` + runner51 + `"]`), RunnerToolNames: []byte(`null`)})
	if err != nil || im.RunnerToolNames != nil || !im.RunnerImportRequested() {
		t.Fatalf("null allowlist: %+v %v", im, err)
	}
	back, _ = json.Marshal(im.ReadBack())
	if !strings.HasSuffix(string(back), `"runner_tool_names":null,"tool_provider_tools":[],"eager_tool_names":[]}`) {
		t.Fatalf("read back %s", back)
	}
	for _, tc := range []struct {
		kt, ids, names string
		path           string
	}{
		{kt: `"nexus.graph.wait"`, path: "kernel_tools"},
		{kt: `[5]`, path: "kernel_tools[0]"},
		{kt: `["nexus.graph.wait","nexus.graph.nope"]`, path: "kernel_tools[1]"},
		{ids: `["not-a-uuid"]`, path: "runner_executor_public_ids[0]"},
		{ids: `["` + runner51 + `","` + strings.ToUpper(runner51) + `"]`, path: "runner_executor_public_ids[1]"},
		{names: `["a","a"]`, path: "runner_tool_names[1]"},
		{names: `[""]`, path: "runner_tool_names[0]"},
		{names: `["` + strings.Repeat("n", 129) + `"]`, path: "runner_tool_names[0]"},
		{kt: `["nexus.graph.wait"]`, names: `{}`, path: "runner_tool_names"},
	} {
		_, err := c.ParseImports(ImportSources{KernelTools: raw(tc.kt), RunnerExecutorPublicIDs: raw(tc.ids), RunnerToolNames: raw(tc.names)})
		if r := refusalOf(t, err); r.Word != WordInvalid || r.Path != tc.path {
			t.Errorf("%+v: got %s at %s", tc, r.Word, r.Path)
		}
	}
}

func raw(s string) []byte {
	if s == "" {
		return nil
	}
	return []byte(s)
}

// TestDeclaresTools is the condition that makes approval_mode required.
func TestDeclaresTools(t *testing.T) {
	t.Parallel()
	c := fixture(t)
	one, _ := c.Compile([]byte(`[{"type":"function","name":"a"}]`))
	for _, tc := range []struct {
		set  *Set
		im   Imports
		want bool
	}{
		{nil, Imports{}, false},
		{one, Imports{}, true},
		{nil, Imports{KernelTools: []string{"nexus.graph.wait"}}, true},
		{nil, Imports{RunnerExecutorPublicIDs: []string{runner51}}, true},
		{nil, Imports{RunnerExecutorPublicIDs: []string{runner51}, RunnerToolNames: []string{}}, false},
		{nil, Imports{RunnerToolNames: []string{"read"}}, false},
	} {
		if got := DeclaresTools(tc.set, tc.im); got != tc.want {
			t.Errorf("DeclaresTools(%d entries, %+v) = %v", tc.set.Len(), tc.im, got)
		}
	}
}

// TestCheckAuthorable covers the four cases of docs/agent-tools.md#declaring-tools and lawful child
// work.
func TestCheckAuthorable(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		a      Authoring
		refuse bool
	}{
		{Authoring{ModelAuthored: true, ModelWork: true, InheritedModel: true, ImportFields: true}, true},
		{Authoring{InheritsEnvironment: true, ImportFields: true}, true},
		{Authoring{ToolStepModelDefaults: true}, true},
		{Authoring{ModelWork: true}, true},
		{Authoring{ModelAuthored: true, ModelWork: true, InheritedModel: true}, false},
		{Authoring{InheritsEnvironment: true}, false},
	} {
		err := CheckAuthorable(tc.a, "steps[0]")
		if (err != nil) != tc.refuse {
			t.Errorf("%+v: %v", tc.a, err)
		}
		if err != nil && refusalOf(t, err).Word != WordContextNotAuthorable {
			t.Errorf("%+v: word %s", tc.a, refusalOf(t, err).Word)
		}
	}
}
