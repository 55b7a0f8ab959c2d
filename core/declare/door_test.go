package declare

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/nexuskernel/nexus/core/refusal"
	"github.com/nexuskernel/nexus/sdk/announce"
)

const (
	runner51   = "01900000-0000-7000-8000-000000000051"
	runner52   = "01900000-0000-7000-8000-000000000052"
	agentAlias = `{"type":"function","function":{"name":"Agent"},"canonical":"nexus.graph.delegate_task","params":{"run_in_background":{"maps_to":"wait","invert":true,"description":"d"}}}`
	routedRead = `{"type":"function","function":{"name":"remote_read","parameters":{"type":"object"}},"route":{"kind":"runner","runner_executor_public_id":"` + runner51 + `","tool_name":"read"}}`
)

// wordCase produces one refusal word through the real compiler.
type wordCase struct {
	word    string
	produce func(t *testing.T, c *Compiler) error
}

func compileList(list string) func(*testing.T, *Compiler) error {
	return func(_ *testing.T, c *Compiler) error {
		_, err := c.Compile([]byte(list))
		return err
	}
}

func acceptWith(in func(c *Compiler) Acceptance) func(*testing.T, *Compiler) error {
	return func(_ *testing.T, c *Compiler) error {
		_, err := c.Accept(in(c))
		return err
	}
}

func runnerServing(id string, eligible bool, tools ...announce.Tool) Runner {
	return Runner{PublicID: id, DisplayName: "box", Eligible: eligible, Announcement: announce.Announcement{Tools: tools}}
}

func modelTool(name string) announce.Tool {
	d := "Does " + name + "."
	return announce.Tool{Name: name, Description: &d, InputSchema: json.RawMessage(`{"type":"object"}`)}
}

func bigList() string {
	return `[{"type":"function","name":"big","description":"` + strings.Repeat("x", MaxDeclarationBytes) + `"}]`
}

// wordCases produce every word of docs/agent-tools.md#declaration-refusals and the acceptance
// words, each through the entry point that reports it.
var wordCases = map[string]wordCase{
	"invalid":                          {WordInvalid, compileList(`[{"type":"function","name":"x","extra":1}]`)},
	"content_too_large":                {WordContentTooLarge, compileList(bigList())},
	"duplicate_tool_name":              {WordDuplicateToolName, compileList(`[{"type":"function","name":"x"},{"type":"function","name":"x"}]`)},
	"kernel_tool_redefined":            {WordKernelToolRedefined, compileList(`[{"type":"function","name":"wait"}]`)},
	"alias_canonical_unknown":          {WordAliasCanonicalUnknown, compileList(`[{"name":"A","canonical":"acme.fs.read"}]`)},
	"alias_name_reserved":              {WordAliasNameReserved, compileList(`[{"name":"ask","canonical":"nexus.graph.wait"}]`)},
	"alias_param_unknown":              {WordAliasParamUnknown, compileList(`[{"name":"A","canonical":"delegate_task","params":{"bg":{"maps_to":"background"}}}]`)},
	"alias_invert_needs_boolean":       {WordAliasInvertNeedsBoolean, compileList(`[{"name":"A","canonical":"delegate_task","params":{"t":{"maps_to":"prompt","invert":true,"description":"d"}}}]`)},
	"alias_param_description_required": {WordAliasParamDescriptionRequired, compileList(`[{"name":"A","canonical":"delegate_task","params":{"bg":{"maps_to":"wait","invert":true}}}]`)},
	"invalid_tool_route":               {WordInvalidToolRoute, compileList(`[{"type":"function","name":"r","route":{"kind":"mcp"}}]`)},
	"runner_target_required":           {WordRunnerTargetRequired, compileList(`[{"type":"function","name":"r","route":{"kind":"runner","tool_name":"read"}}]`)},
	"imports invalid": {WordInvalid, func(_ *testing.T, c *Compiler) error {
		_, err := c.ParseImports(ImportSources{KernelTools: []byte(`["spawn"]`)})
		return err
	}},
	"imports content_too_large": {WordContentTooLarge, func(_ *testing.T, c *Compiler) error {
		// Distinct lawful names whose list is over the bound.
		names := make([]string, MaxDeclarationBytes/100)
		for i := range names {
			names[i] = strings.Repeat("n", 110) + itoa(i)
		}
		raw, _ := json.Marshal(names)
		_, err := c.ParseImports(ImportSources{RunnerToolNames: raw})
		return err
	}},
	"runner_not_declared": {WordRunnerNotDeclared, acceptWith(func(*Compiler) Acceptance {
		return Acceptance{Imports: &Imports{RunnerExecutorPublicIDs: []string{runner51}}, Selection: runner52,
			Runners: []Runner{runnerServing(runner52, true)}}
	})},
	"runner_not_eligible": {WordRunnerNotEligible, acceptWith(func(*Compiler) Acceptance {
		return Acceptance{Selection: runner51, Runners: []Runner{runnerServing(runner51, false)}}
	})},
	"runner_not_eligible route": {WordRunnerNotEligible, func(t *testing.T, c *Compiler) error {
		set, err := c.Compile([]byte(`[` + routedRead + `]`))
		if err != nil {
			t.Fatal(err)
		}
		_, err = c.Accept(Acceptance{Explicit: set})
		return err
	}},
	"tool_not_served": {WordToolNotServed, func(t *testing.T, c *Compiler) error {
		set, err := c.Compile([]byte(`[` + routedRead + `]`))
		if err != nil {
			t.Fatal(err)
		}
		_, err = c.Accept(Acceptance{Explicit: set, Runners: []Runner{runnerServing(runner51, true, modelTool("grep"))}})
		return err
	}},
	"tool_not_declared": {WordToolNotDeclared, acceptWith(func(*Compiler) Acceptance {
		return Acceptance{ToolNames: []string{"nope"}}
	})},
	"duplicate after qualification": {WordDuplicateToolName, func(t *testing.T, c *Compiler) error {
		q := QualifiedName(runner51, "grep")
		set, err := c.Compile([]byte(`[{"type":"function","name":"grep"},{"type":"function","name":"` + q + `"}]`))
		if err != nil {
			t.Fatal(err)
		}
		_, err = c.Accept(Acceptance{Explicit: set, Imports: &Imports{RunnerExecutorPublicIDs: []string{runner51}}, Selection: runner51,
			Runners: []Runner{runnerServing(runner51, true, modelTool("grep"))}})
		return err
	}},
	"assembled content_too_large": {WordContentTooLarge, func(t *testing.T, c *Compiler) error {
		// Each list is within its bound; together they are not.
		half := strings.Repeat("x", MaxDeclarationBytes/2)
		set, err := c.Compile([]byte(`[{"type":"function","name":"a","description":"` + half + `"}]`))
		if err != nil {
			t.Fatal(err)
		}
		d := half
		big := announce.Tool{Name: "b", Description: &d, InputSchema: json.RawMessage(`{"type":"object"}`)}
		_, err = c.Accept(Acceptance{Explicit: set, Imports: &Imports{RunnerExecutorPublicIDs: []string{runner51}}, Selection: runner51,
			Runners: []Runner{runnerServing(runner51, true, big)}})
		return err
	}},
	"context_not_authorable": {WordContextNotAuthorable, func(*testing.T, *Compiler) error {
		return CheckAuthorable(Authoring{ModelAuthored: true, ModelWork: true, InheritedModel: true, ImportFields: true}, FieldKernelTools)
	}},
}

// envelope is what a test expects of a door's refusal; Extra ends with "errors" where the body
// writes the list of failures last.
type envelope struct {
	Kind  refusal.Kind
	Code  string
	Extra []refusal.Field
}

// bodyFields are a refusal's extra keys in the order the body writes them: the extras, then
// the list of failures as "errors" where there is one.
func bodyFields(r *refusal.Error) []refusal.Field {
	out := append([]refusal.Field(nil), r.Extra...)
	if len(r.Errors) > 0 {
		out = append(out, f("errors", r.Errors))
	}
	return out
}

func f(k string, v any) refusal.Field { return refusal.Field{Key: k, Value: v} }

// TestDoorEnvelopes writes every word through every door and checks the status kind, code and extra
// fields, in order (docs/agent-tools.md#declaration-refusals, docs/api.md#agent-profiles). The
// message is never asserted.
func TestDoorEnvelopes(t *testing.T) {
	t.Parallel()
	c := fixture(t)
	vf := func(kind refusal.Kind, code string, extra ...refusal.Field) envelope {
		return envelope{kind, code, extra}
	}
	u, tl := refusal.Unprocessable, refusal.TooLarge
	const runPrefix = "steps[0].model."
	run := func(code, path string, extra ...refusal.Field) envelope {
		item := refusal.Problem{Code: code, Path: path}
		if path != "" {
			extra = append(extra, f("path", path))
		}
		return vf(u, code, append(extra, f("errors", []refusal.Problem{item}))...)
	}
	grammar := func(word, field, path string) map[string]envelope {
		return map[string]envelope{
			"profile":  vf(u, "validation_failed", f("field", field), f("word", word), f("path", "configuration."+path)),
			"assembly": vf(u, "validation_failed", f("field", field), f("word", word), f("path", "configuration."+path)),
			"run":      run(runCode(word), runPrefix+strings.Replace(path, "tool_definitions", "tools", 1)),
		}
	}
	cases := map[string]map[string]envelope{
		"invalid":                          grammar("invalid", "tool_definitions", "tool_definitions[0].extra"),
		"duplicate_tool_name":              grammar("duplicate_tool_name", "tool_definitions", "tool_definitions[1]"),
		"kernel_tool_redefined":            grammar("kernel_tool_redefined", "tool_definitions", "tool_definitions[0]"),
		"alias_canonical_unknown":          grammar("alias_canonical_unknown", "tool_definitions", "tool_definitions[0].canonical"),
		"alias_name_reserved":              grammar("alias_name_reserved", "tool_definitions", "tool_definitions[0].name"),
		"alias_param_unknown":              grammar("alias_param_unknown", "tool_definitions", "tool_definitions[0].params.bg.maps_to"),
		"alias_invert_needs_boolean":       grammar("alias_invert_needs_boolean", "tool_definitions", "tool_definitions[0].params.t.invert"),
		"alias_param_description_required": grammar("alias_param_description_required", "tool_definitions", "tool_definitions[0].params.bg"),
		"invalid_tool_route":               grammar("invalid_tool_route", "tool_definitions", "tool_definitions[0].route"),
		"runner_target_required":           grammar("runner_target_required", "tool_definitions", "tool_definitions[0].route"),
		"imports invalid":                  grammar("invalid", "kernel_tools", "kernel_tools[0]"),
		"content_too_large": {
			"profile":  vf(u, "validation_failed", f("field", "tool_definitions"), f("word", "content_too_large"), f("path", "configuration.tool_definitions")),
			"assembly": vf(tl, "content_too_large", f("field", "tool_definitions"), f("path", "configuration.tool_definitions")),
			"run":      run("content_too_large", runPrefix+"tools"),
		},
		"imports content_too_large": {
			"profile":  vf(u, "validation_failed", f("field", "runner_tool_names"), f("word", "content_too_large"), f("path", "configuration.runner_tool_names")),
			"assembly": vf(tl, "content_too_large", f("field", "runner_tool_names"), f("path", "configuration.runner_tool_names")),
			"run":      run("content_too_large", runPrefix+"runner_tool_names"),
		},
		"assembled content_too_large": {
			"assembly": vf(tl, "content_too_large", f("field", "tool_definitions")),
			"run":      run("content_too_large", ""),
		},
		"duplicate after qualification": {
			"assembly": vf(u, "validation_failed", f("field", "tool_definitions"), f("word", "duplicate_tool_name"), f("callable", QualifiedName(runner51, "grep"))),
			"run":      run("duplicate_tool_name", "", f("callable", QualifiedName(runner51, "grep"))),
		},
		"runner_not_declared": {
			"assembly": vf(u, "runner_not_declared", f("runner_executor_public_id", runner52), f("path", "default_runner_executor_public_id")),
			"run":      vf(u, "runner_not_declared", f("runner_executor_public_id", runner52), f("path", "default_runner_executor_public_id"), f("errors", []refusal.Problem{{Code: "runner_not_declared", Path: "default_runner_executor_public_id"}})),
		},
		"runner_not_eligible": {
			"assembly": vf(u, "runner_not_eligible", f("runner_executor_public_id", runner51)),
			"run":      vf(u, "runner_not_eligible", f("runner_executor_public_id", runner51), f("errors", []refusal.Problem{{Code: "runner_not_eligible", Path: "default_runner_executor_public_id"}})),
		},
		"runner_not_eligible route": {
			"assembly": vf(u, "runner_not_eligible", f("runner_executor_public_id", runner51), f("callable", "remote_read")),
			"run":      run("runner_not_eligible", "", f("runner_executor_public_id", runner51), f("callable", "remote_read")),
		},
		"tool_not_served": {
			"assembly": vf(u, "tool_not_served", f("callable", "remote_read"), f("runner_executor_public_id", runner51), f("tool_name", "read")),
			"run":      run("tool_not_served", "", f("callable", "remote_read"), f("runner_executor_public_id", runner51), f("tool_name", "read")),
		},
		"tool_not_declared": {
			"narrowing": vf(u, "tool_not_declared", f("path", "message.tool_names[0]"), f("tool_name", "nope")),
			"run":       vf(u, "tool_not_declared", f("path", runPrefix+"tool_names[0]"), f("tool_name", "nope"), f("errors", []refusal.Problem{{Code: "tool_not_declared", Path: runPrefix + "tool_names[0]"}})),
		},
		"context_not_authorable": {
			"run": run("context_not_authorable", runPrefix+"kernel_tools"),
		},
	}
	doors := map[string]Door{"profile": ProfileDoor, "assembly": AssemblyDoor, "run": RunDoor(runPrefix), "narrowing": NarrowingDoor("message.")}
	if len(cases) != len(wordCases) {
		t.Fatalf("%d envelope cases for %d word cases", len(cases), len(wordCases))
	}
	for name, wc := range wordCases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			err := wc.produce(t, c)
			if r := refusalOf(t, err); r.Word != wc.word {
				t.Fatalf("word = %s, want %s (%v)", r.Word, wc.word, err)
			}
			r, _ := refusal.As(err)
			want, ok := cases[name]
			if !ok {
				t.Fatalf("no envelope expectations for %s", name)
			}
			for door, env := range want {
				got := doors[door].Envelope(r)
				if got.Kind != env.Kind || got.Code != env.Code {
					t.Errorf("%s door: kind %v code %s, want kind %v code %s", door, got.Kind, got.Code, env.Kind, env.Code)
				}
				if d := cmp.Diff(env.Extra, bodyFields(got)); d != "" {
					t.Errorf("%s door: extra fields (-want +got):\n%s", door, d)
				}
				if got.Message == "" {
					t.Errorf("%s door: empty message", door)
				}
			}
		})
	}
}

// TestDoorRefusePassesOtherErrors keeps internal faults internal.
func TestDoorRefusePassesOtherErrors(t *testing.T) {
	t.Parallel()
	plain := errString("boom")
	if got := ProfileDoor.Refuse(plain); got != plain {
		t.Fatalf("Refuse changed a non-refusal: %v", got)
	}
	if ProfileDoor.Refuse(nil) != nil {
		t.Fatal("Refuse(nil) is not nil")
	}
	r := FieldRefusal(WordInvalid, FieldToolDefinitions, "", "the declaration must be an array")
	if got, ok := refusal.As(ProfileDoor.Refuse(r)); !ok || got.Code != refusal.CodeValidationFailed {
		t.Fatalf("Refuse did not produce the profile door's refusal: %v", got)
	}
	// Another validator's refusal (path and name, every failure listed) is not re-rooted.
	other := refusal.New(refusal.Unprocessable, "invalid_announcement", "bad").With("path", "tools[0]").With("name", "x")
	other.Errors = []refusal.Problem{{Code: "invalid_announcement", Path: "tools[0]", Name: "x"}}
	if got := ProfileDoor.Refuse(other); got != error(other) {
		t.Fatalf("Refuse re-rooted another validator's refusal: %v", got)
	}
}

// TestFaultHidesTheWord: a refusal of a stored set is an internal fault that names the path,
// word and detail; any other error passes unchanged.
func TestFaultHidesTheWord(t *testing.T) {
	t.Parallel()
	c := fixture(t)
	_, err := c.Compile([]byte(`[{"type":"function","name":"x","extra":1}]`))
	refusalOf(t, err)
	got := Fault(err)
	if _, ok := refusal.As(got); ok {
		t.Fatalf("Fault kept a refusal: %v", got)
	}
	if !strings.HasPrefix(got.Error(), "tool_definitions[0].extra: invalid: ") {
		t.Fatalf("Fault = %q", got.Error())
	}
	plain := errString("boom")
	if Fault(plain) != error(plain) || Fault(nil) != nil {
		t.Fatal("Fault changed an error that is no declaration refusal")
	}
}

// runCode is the run door's code for a word.
func runCode(word string) string {
	if word == WordInvalid {
		return "invalid_tools"
	}
	return word
}

type errString string

func (e errString) Error() string { return string(e) }
