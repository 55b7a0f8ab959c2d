package kernel

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/nexuskernel/nexus/core/declare"
	"github.com/nexuskernel/nexus/core/envelope"
	"github.com/nexuskernel/nexus/core/model"
	"github.com/nexuskernel/nexus/core/registry"
	"github.com/nexuskernel/nexus/core/runs"
)

const graphRun = "0190a5e2-0000-7000-8000-000000000001"

// graphFixture is a calling round whose frozen declaration holds ask, delegate_task, wait,
// memory_read and an alias of delegate_task named Agent, and a catalog with a model that
// cannot call tools.
type graphFixture struct {
	graph *Graph
	round *runs.CallingRound
}

func newGraphFixture(t *testing.T) graphFixture {
	t.Helper()
	c, err := declare.New(registry.New())
	if err != nil {
		t.Fatal(err)
	}
	set, err := c.Compile([]byte(`[{"type":"function","function":{"name":"Agent"},"canonical":"nexus.graph.delegate_task"}]`))
	if err != nil {
		t.Fatal(err)
	}
	im, err := c.ParseImports(declare.ImportSources{KernelTools: []byte(`["nexus.human.ask","nexus.graph.delegate_task","nexus.graph.wait","nexus.memory.read"]`)})
	if err != nil {
		t.Fatal(err)
	}
	f, err := c.Accept(declare.Acceptance{Explicit: set, Imports: &im})
	if err != nil {
		t.Fatal(err)
	}
	cat, err := model.NewCatalog(&model.Config{Providers: []model.ProviderConfig{{Name: "mock", Type: "mock"}},
		Models: []model.Model{{Ref: "mock/scripted", Capabilities: model.Capabilities{Tools: true}}, {Ref: "mock/plain"}}})
	if err != nil {
		t.Fatal(err)
	}
	instr := "Be brief."
	return graphFixture{graph: &Graph{Compiler: c, Models: cat}, round: &runs.CallingRound{Key: "r2", Model: "mock/scripted",
		Instructions: &instr, ToolDefinitions: f.ToolDefinitions.Bytes(), SkillCatalog: []byte("[]"), Environment: []byte("null"),
		Lifetime: "conversation", Wake: "auto", Mainline: true, LineageRoot: "r1"}}
}

func (f graphFixture) call(input string) *runs.KernelCall {
	return &runs.KernelCall{RunPublicID: graphRun, TaskKey: "r3t1", ToolName: "delegate_task", Canonical: CanonicalDelegateTask,
		Input: json.RawMessage(input), Round: func(context.Context) (*runs.CallingRound, error) { return f.round, nil }}
}

// TestDelegateRefusals pins every error result of delegate_task
// (docs/agent-tools.md#delegation-and-conversations): the argument sentences in parameter order,
// tool_not_declared with the caller's callables in declaration order, model_not_authorized with
// each reason word; all with the refusal form.
func TestDelegateRefusals(t *testing.T) {
	t.Parallel()
	f := newGraphFixture(t)
	cases := []struct{ in, word, detail string }{
		{`{"prompt":"x","question":"y"}`, "invalid_arguments", "question is not a parameter; the parameters are prompt, model, lifetime, wake, wait, tools."},
		{`{}`, "invalid_arguments", "prompt is required."},
		{`{"prompt":3}`, "invalid_arguments", "prompt must be a string."},
		{`{"prompt":"  "}`, "invalid_arguments", "prompt is empty."},
		{`{"prompt":"x","model":1}`, "invalid_arguments", "model must be a string."},
		{`{"prompt":"x","lifetime":"forever"}`, "invalid_arguments", "lifetime must be one of turn, conversation."},
		{`{"prompt":"x","wake":"loud"}`, "invalid_arguments", "wake must be one of auto, passive."},
		{`{"prompt":"x","wait":"yes"}`, "invalid_arguments", "wait must be true or false."},
		{`{"prompt":"x","tools":"ask"}`, "invalid_arguments", "tools must be an array of strings."},
		{`{"prompt":"x","tools":["ask","browse"],"model":"acme/huge"}`, "tool_not_declared",
			`"browse" is not one of your tools; yours are: Agent, ask, delegate_task, memory_read, wait.`},
		{`{"prompt":"x","model":"acme/huge"}`, "model_not_authorized", `model "acme/huge" is not a model you may run here (unknown_model).`},
		{`{"prompt":"x","model":"mock/plain"}`, "model_not_authorized", `model "mock/plain" is not a model you may run here (model_capability_unavailable).`},
	}
	for _, c := range cases {
		out, err := f.graph.Delegate(context.Background(), f.call(c.in))
		if err != nil {
			t.Fatalf("%s: %v", c.in, err)
		}
		want := &runs.KernelResult{Content: c.word + ": " + c.detail, IsError: true, Title: "delegate_task refused",
			StructuredContent: structuredError(t, c.word, c.detail)}
		if out.Place != nil || out.Failure != nil {
			t.Errorf("%s: placed %+v failed %+v", c.in, out.Place, out.Failure)
		}
		if diff := cmp.Diff(want, out.Result); diff != "" {
			t.Errorf("%s (-want +got):\n%s", c.in, diff)
		}
	}
}

func structuredError(t *testing.T, word, detail string) json.RawMessage {
	t.Helper()
	b, err := compactJSON(struct {
		Error struct {
			Key    string `json:"key"`
			Detail string `json:"detail"`
		} `json:"error"`
	}{Error: struct {
		Key    string `json:"key"`
		Detail string `json:"detail"`
	}{word, detail}})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestDelegatePlacement: a detached call places its branch and settles at once with the
// receipt (two lines, the task reference last), its structured_content and title; a waited
// call awaits C-model-1. The branch reads only its prompt, runs on the caller's configured
// model or the explicit one, inherits lifetime and wake unless given, and never receives
// delegate_task under any spelling, named or not; tools: [] gives it none.
func TestDelegatePlacement(t *testing.T) {
	t.Parallel()
	f := newGraphFixture(t)
	out, err := f.graph.Delegate(context.Background(), f.call(`{"prompt":"Find the TODOs."}`))
	if err != nil {
		t.Fatal(err)
	}
	receipt := "Task r3t1 started in the background. Its result will reach you later as a <task_result task=\"r3t1\"> message, which is not from the person.\n" +
		"Task reference: run_public_id=\"" + graphRun + "\", task=\"r3t1\""
	want := &runs.KernelResult{Content: receipt, Title: "delegated task r3t1",
		StructuredContent: json.RawMessage(`{"run_public_id":"` + graphRun + `","task":"r3t1"}`)}
	if diff := cmp.Diff(want, out.Result); diff != "" {
		t.Fatalf("receipt (-want +got):\n%s", diff)
	}
	if out.Place == nil || out.Place.Await != "" || len(out.Place.Rows) != 1 {
		t.Fatalf("placement %+v", out.Place)
	}
	b := out.Place.Rows[0]
	if b.Key != "r3t1-model-1" || b.Kind != runs.KindModel || b.Mainline || b.Origin != runs.OriginKernel || !b.Detached ||
		b.OnFailure != runs.OnFailureAbsorb || *b.Prompt != "Find the TODOs." || *b.Model != "mock/scripted" ||
		*b.Instructions != "Be brief." || b.Lifetime != "conversation" || b.Wake != "auto" || b.RoundNumber != 1 || b.LineageRoot != b.Key {
		t.Fatalf("branch %+v", b)
	}
	if got := callables(t, *b.ToolDefinitions); !cmp.Equal(got, []string{"ask", "memory_read", "wait"}) {
		t.Errorf("branch tools %v", got)
	}

	out, err = f.graph.Delegate(context.Background(),
		f.call(`{"prompt":"Check.","model":" mock/plain ","tools":[],"wait":true,"lifetime":"turn","wake":"passive"}`))
	if err != nil {
		t.Fatal(err)
	}
	if out.Result != nil || out.Place.Await != "r3t1-model-1" || out.Place.Title != "delegated task r3t1" {
		t.Fatalf("waited %+v result %+v", out.Place, out.Result)
	}
	b = out.Place.Rows[0]
	if b.Detached || *b.Model != "mock/plain" || *b.ToolDefinitions != "[]" || b.Lifetime != "turn" || b.Wake != "passive" {
		t.Fatalf("waited branch %+v", b)
	}

	out, err = f.graph.Delegate(context.Background(), f.call(`{"prompt":"Ask.","tools":["ask","Agent","delegate_task","ask"]}`))
	if err != nil {
		t.Fatal(err)
	}
	if got := callables(t, *out.Place.Rows[0].ToolDefinitions); !cmp.Equal(got, []string{"ask"}) {
		t.Errorf("narrowed branch tools %v", got)
	}
}

func callables(t *testing.T, defs string) []string {
	t.Helper()
	var entries []struct {
		Function struct {
			Name string `json:"name"`
		} `json:"function"`
	}
	if err := json.Unmarshal([]byte(defs), &entries); err != nil {
		t.Fatal(err)
	}
	out := []string{}
	for _, e := range entries {
		out = append(out, e.Function.Name)
	}
	return out
}

// TestWaitAndAskArguments pins wait's and ask's argument refusals
// (docs/agent-tools.md#delegation-and-conversations,
// docs/agent-tools.md#delegation-and-conversations): an open schema ignores unknown keys, a closed
// one names the first in byte order.
func TestWaitAndAskArguments(t *testing.T) {
	t.Parallel()
	g := &Graph{}
	cases := []struct {
		tool, in, sentence string
	}{
		{"wait", `{"timeout_ms":5}`, "task is required."},
		{"wait", `{"task":""}`, "task is empty."},
		{"wait", `{"task":7}`, "task must be a string."},
		{"wait", `{"task":"r2t0","run_public_id":"r2t0"}`, "run_public_id must be a UUID."},
		{"wait", `{"task":"r2t0","timeout_ms":0}`, "timeout_ms must be an integer from 1 to 604800000."},
		{"wait", `{"task":"r2t0","timeout_ms":1.5}`, "timeout_ms must be an integer from 1 to 604800000."},
		{"ask", `{"question":"Deploy now?"}`, "question is not a parameter; the parameters are prompt, options, multi."},
		{"ask", `{"prompt":"x","zz":1,"aa":2}`, "aa is not a parameter; the parameters are prompt, options, multi."},
		{"ask", `{"prompt":null}`, "prompt is required."},
		{"ask", `{"prompt":""}`, "prompt is empty."},
		{"ask", `{"prompt":"x","options":[1]}`, "options must be an array of strings."},
		{"ask", `{"prompt":"x","multi":1}`, "multi must be true or false."},
	}
	for _, c := range cases {
		call := &runs.KernelCall{TaskKey: "r2t0", ToolName: c.tool, Input: json.RawMessage(c.in)}
		var out *runs.KernelOutcome
		var err error
		if c.tool == "wait" {
			out, err = g.Wait(context.Background(), call)
		} else {
			out, err = Human{}.Ask(context.Background(), call)
		}
		if err != nil {
			t.Fatalf("%s %s: %v", c.tool, c.in, err)
		}
		want := &runs.KernelResult{Content: "invalid_arguments: " + c.sentence, IsError: true, Title: c.tool + " refused",
			StructuredContent: structuredError(t, "invalid_arguments", c.sentence)}
		if diff := cmp.Diff(want, out.Result); diff != "" {
			t.Errorf("%s %s (-want +got):\n%s", c.tool, c.in, diff)
		}
	}
}

// TestGraphTexts pins the texts the graph and human tools write
// (docs/agent-tools.md#delegation-and-conversations).
func TestGraphTexts(t *testing.T) {
	t.Parallel()
	cases := []struct{ got, want string }{
		{DelegatedTitle("r3t1"), "delegated task r3t1"},
		{TaskReference(graphRun, "r3t1"), `Task reference: run_public_id="` + graphRun + `", task="r3t1"`},
		{WaitTitle("r3t1"), "wait for r3t1"},
		{WaitTargetNotFoundDetail("r3t1", graphRun), `no task "r3t1" in run ` + graphRun + ` that this run can observe.`},
		{WaitCycleDetail("r3t1"), `task "r3t1" is this call or one of its ancestors, so waiting on it could never end.`},
		{WaitTimeoutDetail("r3t1", 3600000), `stopped waiting for task "r3t1" after 3600000 ms; it keeps running and its result is still delivered.`},
		{WaitCanceledDetail("r3t1"), `the wait for task "r3t1" was canceled; the task keeps running.`},
		{ModelNotAuthorizedDetail("acme/huge", "unknown_model"), `model "acme/huge" is not a model you may run here (unknown_model).`},
		{WaitTargetGoneDetail("r3t1"), `task "r3t1" is no longer available.`},
		{AskTitle, "question for the person"},
		{envelope.Answer("r3t1-ask-1", "Yes — ship it on Friday."), `<answer task="r3t1-ask-1">Yes — ship it on Friday.</answer>`},
	}
	for _, c := range cases {
		if c.got != c.want {
			t.Errorf("got %q\nwant %q", c.got, c.want)
		}
	}
}

// TestEngineSettledTexts pins what the engine settles on the graph tools' behalf
// (runs.ToolTexts): a wait whose target was collected, and a waited delegate_task's model line,
// read from the call's stored input.
func TestEngineSettledTexts(t *testing.T) {
	t.Parallel()
	tools := New(Options{})
	gone := tools.WaitTargetGone("r3t1")
	if gone.Content != `wait_target_not_found: task "r3t1" is no longer available.` || !gone.IsError || gone.Title != "wait refused" ||
		string(gone.StructuredContent) != `{"status":"unavailable","error":{"key":"wait_target_not_found","detail":"task \"r3t1\" is no longer available."}}` {
		t.Errorf("target gone: %+v, structured %s", gone, gone.StructuredContent)
	}
	cases := []struct {
		input   []byte
		ranOn   string
		started bool
		want    string
	}{
		{[]byte(`{"prompt":"x","model":" mock/text-only "}`), "mock/text-only", true, "[model: requested mock/text-only, ran on mock/text-only]"},
		{[]byte(`{"prompt":"x","model":"mock/scripted"}`), "mock/scripted", false, "[model: requested mock/scripted, not started]"},
		{[]byte(`{"prompt":"x"}`), "mock/scripted", true, ""},
		{[]byte(`{"prompt":"x","model":"  "}`), "mock/scripted", true, ""},
		{nil, "mock/scripted", true, ""},
	}
	for _, c := range cases {
		if got, err := tools.DelegateModelLine(c.input, c.ranOn, c.started); err != nil || got != c.want {
			t.Errorf("%s: %q, %v; want %q", c.input, got, err, c.want)
		}
	}
	if _, err := tools.DelegateModelLine([]byte(`{"model":`), "m", true); err == nil {
		t.Error("a stored input that is not JSON read as none")
	}
}
