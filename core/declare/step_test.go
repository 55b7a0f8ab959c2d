package declare

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestStep: a step's fields read into its acceptance; Imports stays nil without an import field
// (the plain explicit-tools meaning) and is parsed when any is present, null included; the
// first refusal is the explicit list's, then the import fields' in their order.
func TestStep(t *testing.T) {
	t.Parallel()
	c := fixture(t)
	plain, err := c.Step(StepSources{Tools: []byte(`[{"type":"function","name":"grep"}]`)})
	if err != nil {
		t.Fatal(err)
	}
	if plain.Imports != nil || !cmp.Equal(plain.Explicit.Callables(), []string{"grep"}) {
		t.Fatalf("plain step: imports %+v callables %v", plain.Imports, plain.Explicit.Callables())
	}
	none, err := c.Step(StepSources{})
	if err != nil || none.Imports != nil || none.Explicit.Len() != 0 {
		t.Fatalf("empty step: %+v %v", none, err)
	}
	imp, err := c.Step(StepSources{KernelTools: []byte(`["nexus.skill.load"]`), RunnerToolNames: []byte(`null`)})
	if err != nil {
		t.Fatal(err)
	}
	if imp.Imports == nil || !cmp.Equal(imp.Imports.KernelTools, []string{"nexus.skill.load"}) || imp.Imports.RunnerToolNames != nil {
		t.Fatalf("imports %+v", imp.Imports)
	}
	for name, tc := range map[string]struct {
		src         StepSources
		word, field string
	}{
		"the list first":       {StepSources{Tools: []byte(`{}`), KernelTools: []byte(`[1]`)}, WordInvalid, FieldToolDefinitions},
		"then kernel_tools":    {StepSources{KernelTools: []byte(`["nexus.nope"]`), RunnerExecutorPublicIDs: []byte(`["x"]`)}, WordInvalid, FieldKernelTools},
		"then the candidates":  {StepSources{RunnerExecutorPublicIDs: []byte(`["x"]`), RunnerToolNames: []byte(`[1]`)}, WordInvalid, FieldRunnerExecutorPublicIDs},
		"then the tools names": {StepSources{RunnerToolNames: []byte(`[1]`)}, WordInvalid, FieldRunnerToolNames},
	} {
		_, err := c.Step(tc.src)
		if ref := refusalOf(t, err); ref.Word != tc.word || ref.Field != tc.field {
			t.Errorf("%s: %+v, want %s at %s", name, ref, tc.word, tc.field)
		}
	}
}

// TestAcceptanceRunnerIDs: the Runners an acceptance reads are the selection, the candidates
// and the routes' Runners, each once, lowercase, sorted.
func TestAcceptanceRunnerIDs(t *testing.T) {
	t.Parallel()
	c := fixture(t)
	a, err := c.Step(StepSources{
		Tools:                   []byte(`[{"type":"function","function":{"name":"mac_grep","parameters":{"type":"object"}},"route":{"kind":"runner","runner_executor_public_id":"` + strings.ToUpper(runner52) + `","tool_name":"grep"}}]`),
		RunnerExecutorPublicIDs: []byte(`["` + runner52 + `","` + strings.ToUpper(runner51) + `"]`),
	})
	if err != nil {
		t.Fatal(err)
	}
	a.Selection = strings.ToUpper(runner51)
	if got := a.RunnerIDs(); !cmp.Equal(got, []string{runner51, runner52}) {
		t.Fatalf("runner ids %v", got)
	}
	if got := (&Acceptance{}).RunnerIDs(); len(got) != 0 {
		t.Fatalf("an empty acceptance reads Runners %v", got)
	}
}

// TestDeclaresKernelSkill: a kernel skill callable, explicit (under an alias too) or imported,
// makes the caller read skill documents; a Runner's routed skill tool does not.
func TestDeclaresKernelSkill(t *testing.T) {
	t.Parallel()
	c := fixture(t)
	compile := func(raw string) *Set {
		t.Helper()
		s, err := c.Compile([]byte(raw))
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	routed := compile(`[{"type":"function","function":{"name":"mac_skill","parameters":{"type":"object"}},"route":{"kind":"runner","runner_executor_public_id":"` + runner51 + `","tool_name":"skill"}}]`)
	for name, tc := range map[string]struct {
		set  *Set
		im   *Imports
		want bool
	}{
		"nothing":          {&Set{}, nil, false},
		"explicit":         {compile(`[{"name":"skill","canonical":"nexus.skill.load"}]`), nil, true},
		"an alias":         {compile(`[{"name":"Skill","canonical":"nexus.skill.load","params":{"skill":{"maps_to":"name"}}}]`), nil, true},
		"imported":         {&Set{}, &Imports{KernelTools: []string{"nexus.memory.read", CanonicalSkill}}, true},
		"other kernel":     {&Set{}, &Imports{KernelTools: []string{"nexus.memory.read"}}, false},
		"a Runner's skill": {routed, &Imports{RunnerExecutorPublicIDs: []string{runner51}}, false},
	} {
		if got := DeclaresKernelSkill(tc.set, tc.im); got != tc.want {
			t.Errorf("%s: %v, want %v", name, got, tc.want)
		}
	}
}

// TestKernelWire: either spelling of a kernel tool answers its wire name; any other name none.
func TestKernelWire(t *testing.T) {
	t.Parallel()
	c := fixture(t)
	for _, name := range []string{"nexus.skill.load", "skill"} {
		if wire, ok := c.KernelWire(name); !ok || wire != "skill" {
			t.Errorf("%s: %q %v", name, wire, ok)
		}
	}
	if wire, ok := c.KernelWire("grep"); ok || wire != "" {
		t.Errorf("grep: %q %v", wire, ok)
	}
}
