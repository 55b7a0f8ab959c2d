package runs_test

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nexuskernel/nexus/core/conversations"
	"github.com/nexuskernel/nexus/core/kernel"
	kmemory "github.com/nexuskernel/nexus/core/memory"
	"github.com/nexuskernel/nexus/core/model"
	"github.com/nexuskernel/nexus/core/profiles"
	"github.com/nexuskernel/nexus/core/runs"
	"github.com/nexuskernel/nexus/core/steps"
	"github.com/nexuskernel/nexus/core/store"
	"github.com/nexuskernel/nexus/core/store/storetest"
	"github.com/nexuskernel/nexus/sdk/announce"
)

// placingKernel runs the real kernel tools, except two canonical names whose handlers only
// place rows: tool_call places its child through the engine's Call placement (whatever the
// input, so that the engine's own checks are what is tested), and tool_search stands in for a
// tool that places a kernel row of its own and awaits it.
type placingKernel struct {
	inner runs.KernelTools
	runs.ToolTexts
}

func (k placingKernel) Run(ctx context.Context, call *runs.KernelCall) (*runs.KernelOutcome, error) {
	switch call.Canonical {
	case "nexus.tools.call":
		var in struct {
			Name  string          `json:"name"`
			Input json.RawMessage `json:"input"`
			// Pad grows the child's input past what a model's own call could carry (the
			// wrapper's input is itself bounded), to reach the child's size check.
			Pad int `json:"pad"`
		}
		if err := json.Unmarshal(call.Input, &in); err != nil {
			return nil, err
		}
		if in.Pad > 0 {
			in.Input = json.RawMessage(`{"path":"` + strings.Repeat("x", in.Pad) + `"}`)
		}
		return &runs.KernelOutcome{Place: &runs.Placement{Call: &runs.ChildCall{Name: in.Name, Input: in.Input}, Title: "tool call"}}, nil
	case "nexus.tools.search":
		key := runs.ChildKey(call.TaskKey, "probe", 1)
		profile := `{"kind":"read_only","destructive":false,"effect_scope":"closed","idempotency":"intrinsic","reconciliation":"none"}`
		row := &store.Task{TaskTrace: store.TaskTrace{
			Key: key, Kind: runs.KindTool, Status: runs.StatusWaiting, Origin: runs.OriginKernel,
			OnFailure: runs.OnFailureAbsorb, Lifetime: runs.LifetimeTurn, Wake: runs.WakeAuto,
			Visibility: runs.VisibilityHidden, LineageRoot: key, ToolName: ptr("memory_ls"),
		},
			ToolInput: ptr(`{}`), EffectProfile: &profile,
		}
		return &runs.KernelOutcome{Place: &runs.Placement{Rows: []*store.Task{row}, Await: key}}, nil
	}
	return k.inner.Run(ctx, call)
}

func ptr[T any](v T) *T { return &v }

func placingHarness(t *testing.T, s *store.Store, ann runs.Announcements) *harness {
	inner := kernel.New(kernel.Options{
		Memory: &kernel.Memory{Provider: kmemory.New(s), Scopes: kernel.MemoryScopes{Resolver: kmemory.NewResolver(s, conversations.ConversationStates{})}},
		Models: &kernel.Models{Catalog: model.MustBuiltin()},
	})
	return newHarness(t, s, harnessOptions{kernel: placingKernel{inner, inner}, announcements: ann})
}

const callTools = `"kernel_tools":["nexus.tools.call","nexus.tools.search","nexus.memory.read","nexus.memory.ls"]`

// callScript makes one tool_call of name with input, then answers the paired result.
func callScript(name, input string) string {
	return "Call through the wrapper.\n!mock\nround 1\ncall tool_call {\"name\":\"" + name + "\",\"input\":" + input + "}\nround 2\nsay {{last_result}}"
}

// paddedScript is callScript whose child input the placing kernel grows to pad bytes.
func paddedScript(name string, pad int) string {
	return "Call through the wrapper.\n!mock\nround 1\ncall tool_call {\"name\":\"" + name + "\",\"input\":{},\"pad\":" + strconv.Itoa(pad) + "}\nround 2\nsay {{last_result}}"
}

// TestToolCallPlacement: the call row places C-call-1 through a model call's birth path and
// settles in the child's settling transaction, mirroring its status, error, output, content,
// structured_content and is_error; a child the birth path refuses is born settled and the call
// mirrors it at once.
func TestToolCallPlacement(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		h := placingHarness(t, s, nil)
		cases := []struct {
			name, input    string
			status, errKey string
			output         string
			isError        bool
			childTool      string
		}{
			{"memory_read", `{"path":"workspace/none.md"}`, runs.StatusCompleted, "", "memory_not_found: workspace/none.md", true, "memory_read"},
			{"models_list", `{"limit":1,"query":"scripted"}`, runs.StatusCompleted, "", "", false, "models_list"},
			{"no_such_tool", `{}`, runs.StatusFailed, runs.KeyUnknownTool, "", false, "no_such_tool"},
			{"memory_read", "pad", runs.StatusFailed, runs.KeyToolInputTooLarge, "", false, "memory_read"},
		}
		for _, c := range cases {
			script := callScript(c.name, c.input)
			if c.input == "pad" {
				script = paddedScript(c.name, steps.MaxToolInputBytes)
			}
			created := h.create(modelStep(script, `"kernel_tools":["nexus.tools.call","nexus.memory.read","nexus.models.list"]`))
			h.drain()
			id := created.Run.PublicID
			call := h.task(id, "r2t0")
			child := h.task(id, "r2t0-call-1")
			if child.ParentKey == nil || *child.ParentKey != "r2t0" || child.Origin != runs.OriginModel || child.OnFailure != runs.OnFailureAbsorb ||
				child.Visibility != runs.VisibilityCollapsed || deref(child.DeclaringTaskKey) != "s1-model-1" || child.ToolCallID != nil || len(child.After) != 0 {
				t.Fatalf("%s: child row %+v", c.name, child)
			}
			if deref(child.ToolName) != c.childTool {
				t.Errorf("%s: child tool_name %q", c.name, deref(child.ToolName))
			}
			if child.Status != c.status || call.Status != c.status {
				t.Fatalf("%s: child %s, call %s, want %s", c.name, child.Status, call.Status, c.status)
			}
			if c.errKey != "" {
				if child.Error == nil || child.Error.Key != c.errKey || call.Error == nil || *call.Error != *child.Error {
					t.Fatalf("%s: child error %+v, call error %+v", c.name, child.Error, call.Error)
				}
			} else if call.Error != nil {
				t.Fatalf("%s: call error %+v", c.name, call.Error)
			}
			if deref(call.Output) != deref(child.Output) || string(call.Content) != string(child.Content) ||
				deref(call.IsError) != deref(child.IsError) || deref(call.IsError) != c.isError ||
				string(deref(call.StructuredContent)) != string(deref(child.StructuredContent)) {
				t.Fatalf("%s: call %+v does not mirror child %+v", c.name, call, child)
			}
			if c.output != "" && deref(call.Output) != c.output {
				t.Errorf("%s: output %q", c.name, deref(call.Output))
			}
			if c.name == "models_list" && !strings.HasPrefix(deref(call.Output), `{"models":[{"ref":"mock/scripted"`) {
				t.Errorf("models_list through tool_call: %q", deref(call.Output))
			}
			if deref(call.Title) != "tool call" || call.AwaitingChild != nil {
				t.Errorf("%s: call title %q awaiting %v", c.name, deref(call.Title), call.AwaitingChild)
			}
			// The continuation read the call's paired result: the child's own, unchanged.
			r := h.run(id)
			if r.Status != runs.RunCompleted {
				t.Fatalf("%s: run %s", c.name, r.Status)
			}
			want := deref(call.Output)
			if call.Status != runs.StatusCompleted {
				want = runs.ToolUseError(call.Error.Key, call.Error.Detail)
			}
			if deref(r.Answer) != want {
				t.Errorf("%s: answer %q, want %q", c.name, deref(r.Answer), want)
			}
		}
	})
}

// TestPlacementWaitsOnTheChild: while the child lives the call stays running, awaiting it, with
// no deadline and no claim, out of every claim and sweep; the child crosses the approval gate
// with origin model (held under ask, denied by a rule), and a stop cancels both.
func TestPlacementWaitsOnTheChild(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		h := placingHarness(t, s, nil)
		script := callScript("memory_read", `{"path":"workspace/a"}`)
		ask := strings.Replace(modelStep(script, `"kernel_tools":["nexus.tools.call","nexus.memory.read"]`), `"bypass"`, `"ask"`, 1)
		ask = strings.Replace(ask, `"approval_mode":"ask"`, `"approval_mode":"rules","approval_rules":[{"tool":"tool_call","verdict":"allow"},{"tool":"memory_read","verdict":"ask"}]`, 1)
		id := h.create(ask).Run.PublicID
		h.drain()
		call, child := h.task(id, "r2t0"), h.task(id, "r2t0-call-1")
		if call.Status != runs.StatusRunning || deref(call.AwaitingChild) != "r2t0-call-1" || call.DeadlineAt != nil || call.Claim != nil {
			t.Fatalf("waiting call %+v", call)
		}
		if child.Status != runs.StatusNeedsApproval {
			t.Fatalf("child %s, want needs_approval (the wrapper is no approval bypass)", child.Status)
		}
		h.clock.Advance(time.Hour)
		if _, err := h.e.Sweep(h.ctx); err != nil {
			t.Fatal(err)
		}
		if call := h.task(id, "r2t0"); call.Status != runs.StatusRunning {
			t.Fatalf("the sweeper settled the waiting call: %+v", call)
		}
		if _, err := h.conv.StopRun(h.ctx, h.actor, id, true); err != nil {
			t.Fatal(err)
		}
		for _, k := range []string{"r2t0", "r2t0-call-1"} {
			if tk := h.task(id, k); tk.Status != runs.StatusCanceled || tk.Error == nil || tk.Error.Key != runs.KeyRunCanceled {
				t.Errorf("%s after stop: %s %+v", k, tk.Status, tk.Error)
			}
		}

		deny := strings.Replace(ask, `"verdict":"ask"`, `"verdict":"deny","reason":"not through a wrapper"`, 1)
		id = h.create(deny).Run.PublicID
		h.drain()
		call, child = h.task(id, "r2t0"), h.task(id, "r2t0-call-1")
		if child.Status != runs.StatusFailed || child.Error.Key != runs.KeyApprovalDenied || call.Status != runs.StatusFailed ||
			*call.Error != (runs.TaskError{Key: runs.KeyApprovalDenied, Detail: "not through a wrapper"}) {
			t.Fatalf("denied child %+v, call %+v", child, call)
		}
		if r := h.run(id); r.Status != runs.RunCompleted {
			t.Fatalf("run %s", r.Status)
		}
	})
}

// TestPlacementRunnerChild: a Runner-routed child is addressed to its Runner with the Runner's
// profile and park clock; when its deadline passes the expiry rule settles it and the call
// mirrors the failure in the same transaction. A Runner that does not serve the tool fails the
// child tool_not_served at birth.
func TestPlacementRunnerChild(t *testing.T) {
	t.Parallel()
	runner := "01900000-0000-7000-8000-000000000051"
	ann := staticAnnouncements{runner + "/deploy": {ExecutorPublicID: runner, DisplayName: "laptop", Profile: announce.EffectReadOnly, TimeoutMS: 60000}}
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		h := placingHarness(t, s, ann)
		routed := `"tools":[{"type":"function","function":{"name":"deploy","description":"Deploy.","parameters":{"type":"object"}},"route":{"kind":"runner","runner_executor_public_id":"` + runner + `","tool_name":"deploy"}},` +
			`{"type":"function","function":{"name":"ship","description":"Ship.","parameters":{"type":"object"}},"route":{"kind":"runner","runner_executor_public_id":"` + runner + `","tool_name":"ship"}}],` +
			`"kernel_tools":["nexus.tools.call"]`
		// The step's own route checks read announcements through profiles; bypass them by
		// declaring the routes on a run whose Runner the test inserted.
		insertRunner(t, h, runner, []string{"deploy", "ship"})
		id := h.create(modelStep(callScript("deploy", `{"env":"prod"}`), routed)).Run.PublicID
		h.drain()
		child := h.task(id, "r2t0-call-1")
		if child.Status != runs.StatusDispatched || string(child.AddressedTo) != `{"executor_public_id":"`+runner+`","role":"runner"}` ||
			deref(child.TimeoutMS) != 60000 || string(*child.ToolInput) != `{"env":"prod"}` {
			t.Fatalf("runner child %+v addressed %s", child, child.AddressedTo)
		}
		if call := h.task(id, "r2t0"); call.Status != runs.StatusRunning {
			t.Fatalf("call %s while its child is parked", call.Status)
		}
		h.clock.Advance(61 * time.Second)
		if _, err := h.e.Sweep(h.ctx); err != nil {
			t.Fatal(err)
		}
		h.drain()
		call := h.task(id, "r2t0")
		if call.Status != runs.StatusTimedOut || call.Error == nil || call.Error.Key != runs.KeyToolTimeout {
			t.Fatalf("call after the child's expiry: %s %+v", call.Status, call.Error)
		}
		if r := h.run(id); r.Status != runs.RunCompleted || !strings.Contains(deref(r.Answer), "(tool_timeout)") {
			t.Fatalf("run %s answer %q", r.Status, deref(r.Answer))
		}

		id = h.create(modelStep(callScript("ship", `{}`), routed)).Run.PublicID
		h.drain()
		call = h.task(id, "r2t0")
		if call.Status != runs.StatusFailed || *call.Error != (runs.TaskError{Key: runs.KeyToolNotServed, Detail: "runner " + runner + " does not announce ship"}) {
			t.Fatalf("unserved child: call %s %+v", call.Status, call.Error)
		}
	})
}

// TestPlacementRows: a tool may place a kernel row of its own under its key and await it; the
// row is a root made ready at once, and the call settles with it.
func TestPlacementRows(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		h := placingHarness(t, s, nil)
		script := "Probe.\n!mock\nround 1\ncall tool_search {\"query\":\"x\"}\nround 2\nsay {{last_result}}"
		id := h.create(modelStep(script, callTools)).Run.PublicID
		h.drain()
		probe := h.task(id, "r2t0-probe-1")
		call := h.task(id, "r2t0")
		if deref(probe.ParentKey) != "r2t0" || probe.Status != runs.StatusCompleted || deref(probe.Output) != "No memory documents." {
			t.Fatalf("placed row %+v", probe)
		}
		if call.Status != runs.StatusCompleted || deref(call.Output) != "No memory documents." {
			t.Fatalf("call %+v", call)
		}
		if r := h.run(id); r.Status != runs.RunCompleted || deref(r.Answer) != "No memory documents." {
			t.Fatalf("run %s %q", r.Status, deref(r.Answer))
		}
	})
}

type staticAnnouncements map[string]runs.Served

func (a staticAnnouncements) RunnerTool(_ context.Context, _ store.Querier, _ int64, runner, name string) (runs.Served, bool, error) {
	s, ok := a[runner+"/"+name]
	return s, ok, nil
}

func (staticAnnouncements) PoolTool(context.Context, store.Querier, int64, string) ([]runs.Served, error) {
	return nil, nil
}

// insertRunner stores an active Runner of the harness's workspace announcing names (each with
// a description and a schema, so that it can be declared and imported), and documents.
func insertRunner(t *testing.T, h *harness, publicID string, names []string, docs ...announce.Document) {
	t.Helper()
	var tools []announce.Tool
	for _, n := range names {
		d := "Runs " + n + "."
		tools = append(tools, announce.Tool{Name: n, Description: &d, InputSchema: json.RawMessage(`{"type":"object"}`),
			EffectProfile: announce.Announced(announce.EffectReadOnly)})
	}
	err := h.s.Write(h.ctx, func(tx *store.Tx) error {
		ex := &store.Executor{PublicID: publicID, WorkspaceID: h.actor.WorkspaceID, Kind: store.ExecutorRunner, DisplayName: "laptop",
			Status: store.ExecutorActive, CreatedAt: h.clock.Now().UnixMilli()}
		if err := store.InsertExecutor(h.ctx, tx, ex); err != nil {
			return err
		}
		return profiles.PutAnnouncement(h.ctx, tx, ex.ID, announce.Announcement{Tools: tools, Environment: json.RawMessage(`{"os":"linux"}`),
			Documents: docs}, h.clock.Now())
	})
	if err != nil {
		t.Fatal(err)
	}
}
