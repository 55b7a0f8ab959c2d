package steps_test

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/nexuskernel/nexus/core/approval"
	"github.com/nexuskernel/nexus/core/declare"
	"github.com/nexuskernel/nexus/core/refusal"
	"github.com/nexuskernel/nexus/core/steps"
	"github.com/nexuskernel/nexus/sdk/jsonwire"
)

// lookups answers the grammar's lookups as a small fixed world: two kernel tools, a catalog of
// two models (one without tools), one upload that is not the caller's, a kernel import that
// declare refuses, and one served tool. It records what it was asked, in order.
type lookups struct {
	asked []string
}

const (
	upload   = "6f1b2c3d-0000-4000-8000-000000000001"
	foreign  = "6f1b2c3d-0000-4000-8000-000000000002"
	runner   = "0193c2d4-5e6f-7a8b-9c0d-1e2f3a4b5c6d"
	wordFake = "fake_word"
)

func (l *lookups) KernelTool(name string) (string, bool) {
	switch name {
	case "delegate_task", "nexus.graph.delegate_task":
		return "delegate_task", true
	case "memory_read", "nexus.memory.read":
		return "memory_read", true
	}
	return "", false
}

func (l *lookups) DefaultModel() string { return "mock/scripted" }

func (l *lookups) CheckModel(ref string, hasTools bool) error {
	l.asked = append(l.asked, "model "+ref)
	switch {
	case ref == "mock/text-only" && hasTools:
		return refusal.New(refusal.Unprocessable, "model_capability_unavailable", "no tools")
	case ref == "mock/scripted", ref == "mock/text-only":
		return nil
	}
	return refusal.Newf(refusal.Unprocessable, steps.CodeUnknownModel, "No model %q.", ref)
}

func (l *lookups) Attachments(c *steps.Checked, path string, ids []string) error {
	l.asked = append(l.asked, "attachments "+path)
	for i, id := range ids {
		if id == foreign {
			return refusal.New(refusal.Unprocessable, "unknown_input_upload", "not yours").With("path", fmt.Sprintf("%s[%d]", path, i))
		}
	}
	return nil
}

func (l *lookups) Declare(c *steps.Checked, path string, src declare.StepSources, defaults bool) (bool, error) {
	l.asked = append(l.asked, fmt.Sprintf("declare %s tools=%s kernel=%s ids=%s names=%s", path, src.Tools, src.KernelTools,
		src.RunnerExecutorPublicIDs, src.RunnerToolNames))
	if strings.Contains(string(src.KernelTools), `"memory_read"`) {
		return false, refusal.New(refusal.Unprocessable, steps.CodeInvalidTools, "a wire name").With("path", path+".kernel_tools[0]")
	}
	return len(src.Tools) > 2 || len(src.KernelTools) > 2, nil
}

func (l *lookups) Address(c *steps.Checked) error {
	l.asked = append(l.asked, "address "+c.Path)
	if c.Name == "unserved" {
		return refusal.New(refusal.Unprocessable, "tool_not_served", "nobody").With("path", c.Path+".name")
	}
	return nil
}

// decodeRun decodes a body's run object as the create door does.
func decodeRun(t *testing.T, raw string) *steps.Run {
	t.Helper()
	var r steps.Run
	if err := json.Unmarshal([]byte(raw), &r); err != nil {
		t.Fatalf("decode %s: %v", raw, err)
	}
	return &r
}

// judge judges a run's steps at revision 1 and answers the envelope's refusal.
func judge(r *steps.Run) ([]*steps.Checked, *lookups, error) {
	l := &lookups{}
	env := r.Envelope()
	env.DefaultRunner = r.DefaultRunnerExecutorPublicID
	checked, problems := steps.Judge(env, l)
	return checked, l, steps.Refusal(problems, "")
}

func pathOf(err error) string {
	r, _ := refusal.As(err)
	p, _ := r.Get("path")
	s, _ := p.(string)
	return s
}

// TestRunCheck pins every refusal of the run object with its kind and path, in the order
// docs/api.md#runs gives: a run failing two checks answers the earlier.
func TestRunCheck(t *testing.T) {
	t.Parallel()
	m := `{"model":{"prompt":"hi"}}`
	cases := []struct {
		name, run string
		kind      refusal.Kind
		code      string
		path      string
	}{
		{"not an object", `[]`, refusal.Unprocessable, refusal.CodeValidationFailed, "run"},
		{"null", `null`, refusal.Unprocessable, refusal.CodeValidationFailed, "run"},
		{"edges first", `{"tasks":[],"zzz":1,"steps":[` + m + `],"approval_mode":"bypass"}`, refusal.Unprocessable, steps.CodeEdgeAuthoringRefused, "run.tasks"},
		{"edges in their order", `{"tools":[],"compaction_policy":{},"steps":[` + m + `],"approval_mode":"bypass"}`, refusal.Unprocessable, steps.CodeEdgeAuthoringRefused, "run.compaction_policy"},
		{"first unknown key", `{"zeta":1,"alpha":2,"steps":[` + m + `],"approval_mode":"bypass"}`, refusal.Unprocessable, refusal.CodeValidationFailed, "run.alpha"},
		{"no steps", `{"approval_mode":"bypass"}`, refusal.BadRequest, refusal.CodeParameterMissing, "run.steps"},
		{"null steps", `{"steps":null,"approval_mode":"bypass"}`, refusal.BadRequest, refusal.CodeParameterMissing, "run.steps"},
		{"steps before the mode", `{"approval_mode":"yolo"}`, refusal.BadRequest, refusal.CodeParameterMissing, "run.steps"},
		{"mode missing", `{"steps":[` + m + `]}`, refusal.Unprocessable, steps.CodeInvalidApprovalMode, "run.approval_mode"},
		{"mode not a string", `{"steps":[` + m + `],"approval_mode":1}`, refusal.Unprocessable, steps.CodeInvalidApprovalMode, "run.approval_mode"},
		{"rules", `{"steps":[` + m + `],"approval_mode":"rules","approval_rules":[{"tool":"x","verdict":"allow"},{"tool":"y"}]}`, refusal.Unprocessable, steps.CodeInvalidApprovalRules, "run.approval_rules[1].verdict"},
		{"mechanism", `{"steps":[` + m + `],"approval_mode":"bypass","prompt_mechanism":"fancy"}`, refusal.Unprocessable, steps.CodeInvalidPromptMechanism, "run.prompt_mechanism"},
		{"mechanism empty", `{"steps":[` + m + `],"approval_mode":"bypass","prompt_mechanism":""}`, refusal.Unprocessable, steps.CodeInvalidPromptMechanism, "run.prompt_mechanism"},
		{"mechanism not a string", `{"steps":[` + m + `],"approval_mode":"bypass","prompt_mechanism":7}`, refusal.Unprocessable, steps.CodeInvalidPromptMechanism, "run.prompt_mechanism"},
		{"start", `{"steps":[` + m + `],"approval_mode":"bypass","start":"yes"}`, refusal.Unprocessable, refusal.CodeValidationFailed, "run.start"},
	}
	for _, c := range cases {
		err := decodeRun(t, c.run).Check()
		r, ok := refusal.As(err)
		if !ok || r.Code != c.code || r.Kind != c.kind || pathOf(err) != c.path {
			t.Errorf("%s: got %v at %q, want %s (kind %d) at %s", c.name, err, pathOf(err), c.code, c.kind, c.path)
		}
	}
	for _, ok := range []string{
		`{"steps":[` + m + `],"approval_mode":"bypass"}`,
		`{"steps":[` + m + `],"approval_mode":"ask","approval_rules":null,"prompt_mechanism":null,"start":null,"default_runner_executor_public_id":null}`,
		`{"steps":[` + m + `],"approval_mode":"rules","approval_rules":[],"prompt_mechanism":"raw","start":false}`,
		// The steps' own shape is the engine's to judge, after the default Runner.
		`{"steps":{},"approval_mode":"bypass"}`,
		`{"steps":[],"approval_mode":"bypass"}`,
	} {
		if err := decodeRun(t, ok).Check(); err != nil {
			t.Errorf("%s: %v", ok, err)
		}
	}
	if r := decodeRun(t, `{"steps":[`+m+`],"approval_mode":"bypass","start":null}`); !r.Starts() {
		t.Error("start null does not start the run")
	}
	if r := decodeRun(t, `{"steps":[`+m+`],"approval_mode":"bypass","start":false}`); r.Starts() {
		t.Error("start false starts the run")
	}
}

// TestApprovalRules holds the run's rule list to core/approval's grammar, at its paths under
// run.approval_rules, as written and as built in Go; the stored form is the rules' JSON.
func TestApprovalRules(t *testing.T) {
	t.Parallel()
	bad := []struct{ raw, path string }{
		{`{}`, "run.approval_rules"},
		{`[1]`, "run.approval_rules[0]"},
		{`[{"verdict":"allow"}]`, "run.approval_rules[0].tool"},
		{`[{"tool":1,"verdict":"allow"}]`, "run.approval_rules[0].tool"},
		{`[{"tool":"x"}]`, "run.approval_rules[0].verdict"},
		{`[{"tool":"x","verdict":"maybe"}]`, "run.approval_rules[0].verdict"},
		{`[{"tool":"x","verdict":"allow","origin":"robot"}]`, "run.approval_rules[0].origin"},
		{`[{"tool":"x","verdict":"allow","match":"y"}]`, "run.approval_rules[0].match"},
		{`[{"tool":"x","verdict":"allow","extra":1}]`, "run.approval_rules[0].extra"},
		{`[{"tool":"x","verdict":"allow"},{"tool":"y","verdict":"deny","reason":5}]`, "run.approval_rules[1].reason"},
		{`[{"tool":"x","verdict":"deny","reason":null}]`, "run.approval_rules[0].reason"},
		{`[{"tool":"x","verdict":"allow","tool":"y"}]`, "run.approval_rules[0]"},
		{`[{"tool":"x","verdict":"allow","zeta":1,"alpha":2}]`, "run.approval_rules[0].alpha"},
		{"[" + strings.TrimSuffix(strings.Repeat(`{"tool":"x","verdict":"allow"},`, approval.MaxRules+1), ",") + "]", "run.approval_rules"},
	}
	for _, b := range bad {
		err := decodeRun(t, `{"steps":[{"model":{"prompt":"x"}}],"approval_mode":"rules","approval_rules":`+b.raw+`}`).Check()
		r, ok := refusal.As(err)
		if !ok || r.Code != steps.CodeInvalidApprovalRules || r.Kind != refusal.Unprocessable || pathOf(err) != b.path {
			t.Errorf("%s: got %v at %q, want invalid_approval_rules at %s", b.raw, err, pathOf(err), b.path)
		}
	}
	// Rules built in Go break the grammar by their values alone, at the same paths.
	origin, match := "robot", "y"
	for _, c := range []struct {
		rules []approval.Rule
		path  string
	}{
		{[]approval.Rule{{Verdict: "allow"}}, "run.approval_rules[0].tool"},
		{[]approval.Rule{{Tool: "x", Verdict: "allow"}, {Tool: "y", Verdict: "maybe"}}, "run.approval_rules[1].verdict"},
		{[]approval.Rule{{Tool: "x", Verdict: "allow", Origin: &origin}}, "run.approval_rules[0].origin"},
		{[]approval.Rule{{Tool: "x", Verdict: "allow", Match: &match}}, "run.approval_rules[0].match"},
		{make([]approval.Rule, approval.MaxRules+1), "run.approval_rules"},
	} {
		r := &steps.Run{Steps: []steps.Step{{Model: &steps.Model{Prompt: "x"}}}, ApprovalMode: approval.ModeRules, ApprovalRules: c.rules}
		if err := r.Check(); pathOf(err) != c.path || !isCode(err, steps.CodeInvalidApprovalRules) {
			t.Errorf("%v: got %v at %q, want %s", c.rules, err, pathOf(err), c.path)
		}
	}
	r := decodeRun(t, `{"steps":[{"model":{"prompt":"x"}}],"approval_mode":"rules","approval_rules":[{"tool":"memory_*","verdict":"allow","origin":"author"}]}`)
	if text, err := r.RulesText(); err != nil || text != `[{"tool":"memory_*","verdict":"allow","origin":"author"}]` {
		t.Fatalf("stored rules %s %v", text, err)
	}
	if text, _ := (&steps.Run{}).RulesText(); text != "[]" {
		t.Fatalf("no rules store %s", text)
	}
}

func isCode(err error, code string) bool {
	r, ok := refusal.As(err)
	return ok && r.Code == code
}

// TestDefaultRunner pins the default Runner's grammar: an id no Runner can have is refused at
// once, with the word the engine answers for a Runner that is not eligible.
func TestDefaultRunner(t *testing.T) {
	t.Parallel()
	for raw, want := range map[string]string{
		`"` + runner + `"`: runner, `null`: "",
	} {
		id, err := decodeRun(t, `{"default_runner_executor_public_id":`+raw+`}`).DefaultRunner()
		if err != nil || id != want {
			t.Errorf("%s: %q %v", raw, id, err)
		}
	}
	for _, raw := range []string{`""`, `"nope"`, `7`, `{}`} {
		_, err := decodeRun(t, `{"default_runner_executor_public_id":`+raw+`}`).DefaultRunner()
		if !isCode(err, steps.CodeRunnerNotEligible) || pathOf(err) != "run.default_runner_executor_public_id" {
			t.Errorf("%s: %v at %q", raw, err, pathOf(err))
		}
	}
	if id, err := (&steps.Run{}).DefaultRunner(); id != "" || err != nil {
		t.Errorf("a run built without one: %q %v", id, err)
	}
}

// TestJudgeWords pins every word of the step grammar with its path (docs/api.md#runs).
func TestJudgeWords(t *testing.T) {
	t.Parallel()
	m := func(extra string) string { return `{"model":{"prompt":"hi"` + extra + `}}` }
	tl := func(extra string) string { return `{"tool":{"name":"fetch"` + extra + `}}` }
	cases := []struct {
		name, steps string
		code, path  string
	}{
		{"no array", `{}`, refusal.CodeValidationFailed, "steps"},
		{"empty", `[]`, refusal.CodeValidationFailed, "steps"},
		{"too many", "[" + strings.TrimSuffix(strings.Repeat(m("")+",", steps.MaxSteps+1), ",") + "]", refusal.CodeValidationFailed, "steps"},
		{"not an object", `[1]`, refusal.CodeValidationFailed, "steps[0]"},
		{"null step", `[null]`, refusal.CodeValidationFailed, "steps[0]"},
		{"two verbs", `[{"model":{},"tool":{}}]`, refusal.CodeValidationFailed, "steps[0]"},
		{"no verb", `[{}]`, refusal.CodeValidationFailed, "steps[0]"},
		{"unknown verb", `[{"shell":{}}]`, steps.CodeUnknownStepVerb, "steps[0].shell"},
		{"ask", `[{"ask":{}}]`, steps.CodeStepVerbUnavailable, "steps[0].ask"},
		{"wait", `[{"wait":{}}]`, steps.CodeStepVerbUnavailable, "steps[0].wait"},
		{"parallel", `[{"parallel":{}}]`, steps.CodeStepVerbUnavailable, "steps[0].parallel"},
		{"body not an object", `[{"model":null}]`, refusal.CodeValidationFailed, "steps[0].model"},
		{"unknown option", `[` + m(`,"temperature":1`) + `]`, steps.CodeUnknownStepOption, "steps[0].model.temperature"},
		{"key", `[` + m(`,"key":"-x"`) + `]`, refusal.CodeValidationFailed, "steps[0].model.key"},
		{"key empty", `[` + m(`,"key":""`) + `]`, refusal.CodeValidationFailed, "steps[0].model.key"},
		{"key null", `[` + m(`,"key":null`) + `]`, refusal.CodeValidationFailed, "steps[0].model.key"},
		{"key number", `[` + m(`,"key":5`) + `]`, refusal.CodeValidationFailed, "steps[0].model.key"},
		{"reserved r", `[` + m(`,"key":"r2"`) + `]`, steps.CodeReservedTaskKey, "steps[0].model.key"},
		{"reserved s", `[` + m(`,"key":"s1-model-1"`) + `]`, steps.CodeReservedTaskKey, "steps[0].model.key"},
		{"on_failure", `[` + m(`,"on_failure":"explode"`) + `]`, steps.CodeInvalidOnFailure, "steps[0].model.on_failure"},
		{"on_failure null", `[` + tl(`,"on_failure":null`) + `]`, steps.CodeInvalidOnFailure, "steps[0].tool.on_failure"},
		{"visibility", `[` + m(`,"visibility":"secret"`) + `]`, steps.CodeInvalidVisibility, "steps[0].model.visibility"},
		{"attachments", `[` + m(`,"attachments":"x"`) + `]`, steps.CodeInvalidAttachments, "steps[0].model.attachments"},
		{"attachments many", `[` + m(`,"attachments":[`+strings.TrimSuffix(strings.Repeat(`"`+upload+`",`, steps.MaxAttachments+1), ",")+`]`) + `]`, steps.CodeInvalidAttachments, "steps[0].model.attachments"},
		{"attachment id", `[` + m(`,"attachments":["nope"]`) + `]`, steps.CodeInvalidAttachments, "steps[0].model.attachments[0]"},
		{"attachment null", `[` + m(`,"attachments":[null]`) + `]`, steps.CodeInvalidAttachments, "steps[0].model.attachments[0]"},
		{"attachment not yours", `[{"model":{"prompt":"","attachments":["` + foreign + `"]}}]`, "unknown_input_upload", "steps[0].model.attachments[0]"},
		{"prompt missing", `[{"model":{}}]`, steps.CodePromptRequired, "steps[0].model.prompt"},
		{"prompt empty", `[{"model":{"prompt":""}}]`, steps.CodePromptRequired, "steps[0].model.prompt"},
		{"prompt null", `[{"model":{"prompt":null}}]`, steps.CodePromptRequired, "steps[0].model.prompt"},
		{"prompt number", `[{"model":{"prompt":1,"attachments":["` + upload + `"]}}]`, steps.CodePromptRequired, "steps[0].model.prompt"},
		{"instructions", `[` + m(`,"instructions":7`) + `]`, refusal.CodeValidationFailed, "steps[0].model.instructions"},
		{"results", `[` + m(`,"results":"x"`) + `]`, steps.CodeUnknownResultKey, "steps[0].model.results"},
		{"result key", `[` + m(`,"results":["nope"]`) + `]`, steps.CodeUnknownResultKey, "steps[0].model.results[0]"},
		{"empty tools", `[` + m(`,"tools":[]`) + `]`, steps.CodeInvalidTools, "steps[0].model.tools"},
		{"declaration word", `[` + m(`,"kernel_tools":["memory_read"]`) + `]`, steps.CodeInvalidTools, "steps[0].model.kernel_tools[0]"},
		{"model", `[` + m(`,"model":"mock/nope"`) + `]`, steps.CodeUnknownModel, "steps[0].model.model"},
		{"model empty", `[` + m(`,"model":""`) + `]`, steps.CodeUnknownModel, "steps[0].model.model"},
		{"model number", `[` + m(`,"model":7`) + `]`, steps.CodeUnknownModel, "steps[0].model.model"},
		{"capability", `[` + m(`,"model":"mock/text-only","tools":[1,2,3]`) + `]`, "model_capability_unavailable", "steps[0].model.model"},
		{"tool_call_id", `[` + tl(`,"tool_call_id":null`) + `]`, steps.CodeInvalidToolCallID, "steps[0].tool.tool_call_id"},
		{"name", `[{"tool":{}}]`, refusal.CodeValidationFailed, "steps[0].tool.name"},
		{"name number", `[{"tool":{"name":5}}]`, refusal.CodeValidationFailed, "steps[0].tool.name"},
		{"name long", `[{"tool":{"name":"` + strings.Repeat("n", steps.MaxToolNameLen+1) + `"}}]`, refusal.CodeValidationFailed, "steps[0].tool.name"},
		{"kernel name", `[{"tool":{"name":"nexus.memory.read"}}]`, steps.CodeReservedToolName, "steps[0].tool.name"},
		{"input", `[` + tl(`,"input":[1]`) + `]`, steps.CodeInvalidToolInput, "steps[0].tool.input"},
		{"input null", `[` + tl(`,"input":null`) + `]`, steps.CodeInvalidToolInput, "steps[0].tool.input"},
		{"input large", `[` + tl(`,"input":{"d":"`+strings.Repeat("x", steps.MaxToolInputBytes)+`"}`) + `]`, steps.CodeToolInputTooLarge, "steps[0].tool.input"},
		{"timeout zero", `[` + tl(`,"timeout_ms":0`) + `]`, steps.CodeInvalidTimeoutMS, "steps[0].tool.timeout_ms"},
		{"timeout long", `[` + tl(`,"timeout_ms":604800001`) + `]`, steps.CodeInvalidTimeoutMS, "steps[0].tool.timeout_ms"},
		{"timeout fraction", `[` + tl(`,"timeout_ms":1.5`) + `]`, steps.CodeInvalidTimeoutMS, "steps[0].tool.timeout_ms"},
		{"timeout null", `[` + tl(`,"timeout_ms":null`) + `]`, steps.CodeInvalidTimeoutMS, "steps[0].tool.timeout_ms"},
		{"defaults", `[` + tl(`,"model_defaults":[]`) + `]`, refusal.CodeValidationFailed, "steps[0].tool.model_defaults"},
		{"defaults option", `[` + tl(`,"model_defaults":{"temperature":1}`) + `]`, steps.CodeUnknownStepOption, "steps[0].tool.model_defaults.temperature"},
		{"defaults instructions", `[` + tl(`,"model_defaults":{"instructions":5}`) + `]`, refusal.CodeValidationFailed, "steps[0].tool.model_defaults.instructions"},
		{"defaults model", `[` + tl(`,"model_defaults":{"model":"mock/nope"}`) + `]`, steps.CodeUnknownModel, "steps[0].tool.model_defaults.model"},
		{"defaults model number", `[` + tl(`,"model_defaults":{"model":5}`) + `]`, steps.CodeUnknownModel, "steps[0].tool.model_defaults.model"},
		{"defaults declaration", `[` + tl(`,"model_defaults":{"kernel_tools":["memory_read"]}`) + `]`, steps.CodeInvalidTools, "steps[0].tool.model_defaults.kernel_tools[0]"},
		{"route", `[` + tl(`,"route":null`) + `]`, steps.CodeInvalidToolRoute, "steps[0].tool.route"},
		{"route key", `[` + tl(`,"route":{"kind":"runner","x":1}`) + `]`, steps.CodeInvalidToolRoute, "steps[0].tool.route.x"},
		{"route kind", `[` + tl(`,"route":{"kind":"pool"}`) + `]`, steps.CodeInvalidToolRoute, "steps[0].tool.route.kind"},
		{"route tool name", `[` + tl(`,"route":{"kind":"runner","tool_name":"other"}`) + `]`, steps.CodeInvalidToolRoute, "steps[0].tool.route.tool_name"},
		{"route tool name null", `[` + tl(`,"route":{"kind":"runner","tool_name":null}`) + `]`, steps.CodeInvalidToolRoute, "steps[0].tool.route.tool_name"},
		{"route null id", `[` + tl(`,"route":{"kind":"runner","runner_executor_public_id":null}`) + `]`, steps.CodeInvalidToolRoute, "steps[0].tool.route.runner_executor_public_id"},
		{"route target", `[` + tl(`,"route":{"kind":"runner"}`) + `]`, steps.CodeRunnerTargetRequired, "steps[0].tool.route"},
		{"not served", `[{"tool":{"name":"unserved"}}]`, "tool_not_served", "steps[0].tool.name"},
	}
	for _, c := range cases {
		_, _, err := judge(decodeRun(t, `{"steps":`+c.steps+`,"approval_mode":"bypass"}`))
		r, ok := refusal.As(err)
		if !ok || r.Code != c.code || r.Kind != refusal.Unprocessable || pathOf(err) != c.path {
			t.Errorf("%s: got %v at %q, want %s at %s", c.name, err, pathOf(err), c.code, c.path)
		}
	}
}

// TestJudgeOrder: every failure of an envelope is listed, step by step and field by field in the
// grammar's order, with the lookups' answers at their places; the first decides, and a step with
// a failure before it is not addressed.
func TestJudgeOrder(t *testing.T) {
	t.Parallel()
	r := decodeRun(t, `{"steps":[
		{"tool":{"name":"delegate_task","timeout_ms":0}},
		{"model":{"zeta":1,"alpha":2,"attachments":["`+foreign+`"],"prompt":1,"model":"mock/none"}},
		{"shell":{}},
		{"tool":{"name":"fetch"}}],"approval_mode":"bypass"}`)
	_, l, err := judge(r)
	rf, _ := refusal.As(err)
	items, _ := rf.Get("errors")
	b, _ := json.Marshal(items)
	want := `[{"code":"reserved_tool_name","path":"steps[0].tool.name"},{"code":"invalid_timeout_ms","path":"steps[0].tool.timeout_ms"},` +
		`{"code":"unknown_step_option","path":"steps[1].model.alpha"},{"code":"unknown_step_option","path":"steps[1].model.zeta"},` +
		`{"code":"unknown_input_upload","path":"steps[1].model.attachments[0]"},{"code":"prompt_required","path":"steps[1].model.prompt"},` +
		`{"code":"unknown_model","path":"steps[1].model.model"},{"code":"unknown_step_verb","path":"steps[2].shell"}]`
	if rf.Code != steps.CodeReservedToolName || pathOf(err) != "steps[0].tool.name" || string(b) != want {
		t.Fatalf("errors: %s at %s\n%s\nwant %s", rf.Code, pathOf(err), b, want)
	}
	if strings.Join(l.asked, "; ") != "attachments steps[1].model.attachments; model mock/none" {
		t.Fatalf("asked %q", l.asked)
	}
}

// TestJudgeDefaults: a step judged whole carries the defaults the grammar applies, and a model
// step reads the step before it.
func TestJudgeDefaults(t *testing.T) {
	t.Parallel()
	r := decodeRun(t, `{"steps":[
		{"tool":{"name":"fetch","input":{"b":1,"a":"x"},"route":{"kind":"runner","tool_name":"fetch"},"timeout_ms":1e3}},
		{"model":{"prompt":"sum up","instructions":"short"}},
		{"model":{"key":"last","model":"mock/text-only","prompt":"again","results":[],"on_failure":"absorb","visibility":"hidden"}}],
		"approval_mode":"bypass","default_runner_executor_public_id":"`+runner+`"}`)
	checked, l, err := judge(r)
	if err != nil {
		t.Fatal(err)
	}
	got := make([]string, len(checked))
	for i, c := range checked {
		got[i] = fmt.Sprintf("%s %s %s %s %s %s %s %q %v %d", c.Verb, c.Key, c.OnFailure, c.Visibility, c.Model, c.Name, c.Input, c.Runner, c.Results, c.TimeoutMS)
	}
	want := []string{
		`tool s1-tool-1 propagate collapsed  fetch {"a":"x","b":1} "` + runner + `" [] 1000`,
		`model s1-model-2 halt visible mock/scripted   "" [s1-tool-1] 0`,
		`model last absorb hidden mock/text-only   "" [] 0`,
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("checked:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if *checked[1].Instructions != "short" || checked[2].Results == nil {
		t.Fatalf("instructions %v, results %v", checked[1].Instructions, checked[2].Results)
	}
	if strings.Join(l.asked, "; ") != "address steps[0].tool; model mock/scripted; model mock/text-only" {
		t.Fatalf("asked %q", l.asked)
	}
	// An append's steps are named at its revision and read the run's deliverable first.
	env := steps.Envelope{Steps: r.Steps[1:2], Revision: 3, After: "fetch", Existing: map[string]bool{"fetch": true}}
	checked, problems := steps.Judge(env, &lookups{})
	if len(problems) != 0 || checked[0].Key != "s3-model-1" || checked[0].Results[0] != "fetch" {
		t.Fatalf("append: %+v %v", checked[0], problems)
	}
	if err := steps.DuplicateKey(checked, map[string]bool{"s3-model-1": true}, ""); !isCode(err, steps.CodeDuplicateTaskKey) || pathOf(err) != "steps[0].model.key" {
		t.Fatalf("duplicate in the run: %v", err)
	}
}

// TestDeclarationAsWritten: core/declare judges a declaration as the body wrote it; a field
// written as null declares (the freeze runs), a field left out does not, and a field the typed
// list cannot hold reaches declare as written.
func TestDeclarationAsWritten(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ fields, asked string }{
		{``, ""},
		{`,"tools":null`, "declare steps[0].model tools=null kernel= ids= names="},
		{`,"kernel_tools":["nexus.memory.read"],"runner_tool_names":[]`, `declare steps[0].model tools= kernel=["nexus.memory.read"] ids= names=[]`},
		{`,"kernel_tools":"x","runner_executor_public_ids":[1,"a"]`, `declare steps[0].model tools= kernel="x" ids=[1,"a"] names=`},
		{`,"tools":{"a":1},"runner_tool_names":null`, `declare steps[0].model tools={"a":1} kernel= ids= names=null`},
		{`,"tools":[{"type":"function", "name":"grep"}]`, `declare steps[0].model tools=[{"type":"function","name":"grep"}] kernel= ids= names=`},
	} {
		_, l, err := judge(decodeRun(t, `{"steps":[{"model":{"prompt":"x"`+c.fields+`}}],"approval_mode":"bypass"}`))
		asked := ""
		if len(l.asked) > 1 {
			asked = l.asked[0]
		}
		if err != nil || asked != c.asked {
			t.Errorf("%s: asked %q, want %q (%v)", c.fields, asked, c.asked, err)
		}
	}
}

// TestGoValuesJudgeAsTheirJSON: a run an in-process caller builds with Go values is judged
// exactly as its JSON body is, success and refusal alike.
func TestGoValuesJudgeAsTheirJSON(t *testing.T) {
	t.Parallel()
	instructions := "Answer in one line."
	built := &steps.Run{
		ApprovalMode: approval.ModeRules, ApprovalRules: []approval.Rule{{Tool: "fetch", Verdict: approval.VerdictAllow}},
		DefaultRunnerExecutorPublicID: runner,
		Steps: []steps.Step{
			{Tool: &steps.Tool{Key: "fetch", Name: "fetch", Input: map[string]any{"url": "https://example.test", "n": 2},
				Route: &steps.Route{Kind: steps.RouteRunner}, TimeoutMS: 120000,
				ModelDefaults: &steps.ModelDefaults{Model: "mock/scripted", Declaration: steps.Declaration{KernelTools: []string{"nexus.memory.read"}}}}},
			{Model: &steps.Model{Prompt: "Summarize.", Instructions: &instructions, Results: []string{"fetch"},
				Declaration: steps.Declaration{Tools: []jsonwire.Value{jsonwire.Object(jsonwire.M("type", jsonwire.String("function")))},
					RunnerToolNames: []string{}}}},
		},
	}
	body := decodeRun(t, `{"steps":[
		{"tool":{"key":"fetch","name":"fetch","input":{"url":"https://example.test","n":2},"route":{"kind":"runner"},"timeout_ms":120000,
			"model_defaults":{"model":"mock/scripted","kernel_tools":["nexus.memory.read"]}}},
		{"model":{"prompt":"Summarize.","instructions":"Answer in one line.","results":["fetch"],"tools":[{"type":"function"}],"runner_tool_names":[]}}],
		"approval_mode":"rules","approval_rules":[{"tool":"fetch","verdict":"allow"}],"default_runner_executor_public_id":"`+runner+`"}`)
	if err := built.Check(); err != nil {
		t.Fatal(err)
	}
	if err := body.Check(); err != nil {
		t.Fatal(err)
	}
	a, al, aerr := judge(built)
	b, bl, berr := judge(body)
	if aerr != nil || berr != nil || !reflect.DeepEqual(al.asked, bl.asked) {
		t.Fatalf("built %v, body %v\n%q\n%q", aerr, berr, al.asked, bl.asked)
	}
	for i := range a {
		a[i].ModelDefaults, b[i].ModelDefaults = nil, nil
	}
	if !reflect.DeepEqual(a, b) {
		t.Fatalf("built and decoded differ:\n%+v\n%+v", a[0], b[0])
	}
	at, bt := built.RulesText, body.RulesText
	if x, _ := at(); func() string { y, _ := bt(); return y }() != x {
		t.Fatal("rules differ")
	}
	// And a refusal is the same words at the same paths.
	bad := &steps.Run{ApprovalMode: approval.ModeBypass, Steps: []steps.Step{
		{Model: &steps.Model{Key: "r1", OnFailure: "explode"}},
		{Tool: &steps.Tool{Name: "memory_read", TimeoutMS: -1, Route: &steps.Route{Kind: "pool"}}},
		{Model: &steps.Model{Prompt: "x"}, Tool: &steps.Tool{Name: "x"}},
	}}
	badBody := decodeRun(t, `{"approval_mode":"bypass","steps":[{"model":{"key":"r1","on_failure":"explode"}},
		{"tool":{"name":"memory_read","timeout_ms":-1,"route":{"kind":"pool"}}},{"model":{"prompt":"x"},"tool":{"name":"x"}}]}`)
	_, _, aerr = judge(bad)
	_, _, berr = judge(badBody)
	ar, _ := refusal.As(aerr)
	br, _ := refusal.As(berr)
	ae, _ := ar.Get("errors")
	be, _ := br.Get("errors")
	if aerr == nil || !reflect.DeepEqual(ae, be) || ar.Message != br.Message {
		t.Fatalf("refusals differ:\n%v %v\n%v %v", aerr, ae, berr, be)
	}
}

func TestReservedKey(t *testing.T) {
	t.Parallel()
	for k, want := range map[string]bool{"r1": true, "r2t0": true, "r10": true, "s1-model-1": true, "s12-tool-3": true,
		"fetch": false, "r": false, "ra": false, "s1": false, "s1-model": false, "summary": false, "S1-model-1": false} {
		if steps.ReservedKey(k) != want {
			t.Errorf("ReservedKey(%q) = %v, want %v", k, !want, want)
		}
	}
}

// TestDecodeList: an append's steps decode as a create's; a value that is no array is the
// grammar's refusal.
func TestDecodeList(t *testing.T) {
	t.Parallel()
	list, err := steps.DecodeList([]byte(`[{"model":{"prompt":"x"}},{"tool":{"name":"fetch"}}]`))
	if err != nil || len(list) != 2 || list[0].Model.Prompt != "x" || list[1].Tool.Name != "fetch" {
		t.Fatalf("%+v %v", list, err)
	}
	for _, raw := range []string{`{}`, `"x"`, `1`} {
		_, err := steps.DecodeList([]byte(raw))
		rf, ok := refusal.As(err)
		if !ok || rf.Code != refusal.CodeValidationFailed || rf.Kind != refusal.Unprocessable || pathOf(err) != "steps" {
			t.Errorf("%s: %v", raw, err)
		}
	}
}
