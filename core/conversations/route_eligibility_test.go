package conversations_test

import (
	"encoding/json"
	"testing"

	"github.com/nexuskernel/nexus/core/executors"
	"github.com/nexuskernel/nexus/core/refusal"
	"github.com/nexuskernel/nexus/core/runs"
	"github.com/nexuskernel/nexus/core/steps"
	"github.com/nexuskernel/nexus/core/store"
	"github.com/nexuskernel/nexus/core/store/storetest"
)

// TestCreateRouteEligibility pins a routed step's acceptance against the real served-names
// lookup (docs/api.md#runs): an active Runner of the workspace that announces the name takes the
// row dispatched at once; one that does not announce it refuses tool_not_served; a revoked
// Runner, a tool provider and another workspace's Runner refuse runner_not_eligible at the
// route, whatever they announce.
func TestCreateRouteEligibility(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		h := newHarness(t, s, harnessOptions{announcements: executors.Addressing{}})
		const (
			active   = "01900000-0000-7000-8000-0000000000a1"
			revoked  = "01900000-0000-7000-8000-0000000000a2"
			provider = "01900000-0000-7000-8000-0000000000a3"
			foreign  = "01900000-0000-7000-8000-0000000000a4"
		)
		profile := `{"kind":"read_only","destructive":false,"effect_scope":"closed","idempotency":"intrinsic","reconciliation":"none"}`
		err := s.Write(h.Ctx, func(tx *store.Tx) error {
			var other int64
			if err := tx.Get(h.Ctx, &other, `INSERT INTO workspaces (public_id, handle, name, created_at) VALUES (?, ?, ?, ?) RETURNING id`,
				store.NewPublicID(), "elsewhere", "Elsewhere", 1); err != nil {
				return err
			}
			for _, x := range []struct {
				id, kind, status string
				ws               int64
			}{{active, store.ExecutorRunner, store.ExecutorActive, h.Actor.WorkspaceID}, {revoked, store.ExecutorRunner, store.ExecutorRevoked, h.Actor.WorkspaceID},
				{provider, store.ExecutorToolProvider, store.ExecutorActive, h.Actor.WorkspaceID}, {foreign, store.ExecutorRunner, store.ExecutorActive, other}} {
				ex := &store.Executor{PublicID: x.id, WorkspaceID: x.ws, Kind: x.kind, DisplayName: "box", Status: x.status, CreatedAt: 1}
				if err := store.InsertExecutor(h.Ctx, tx, ex); err != nil {
					return err
				}
				if err := store.ReplaceServedTools(h.Ctx, tx, ex.ID, []store.ServedTool{{WorkspaceID: x.ws, Name: "fetch", Profile: profile}}); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		step := func(runner, name string) string {
			return `{"steps":[{"tool":{"name":"` + name + `","input":{},"route":{"kind":"runner","runner_executor_public_id":"` + runner + `"}}}],"approval_mode":"bypass"}`
		}
		created := h.Create(step(active, "fetch"))
		id := created.Run.PublicID
		if tk := h.Task(id, created.Receipt.DeliverableTaskKey); tk.Status != runs.StatusDispatched || string(tk.AddressedTo) != `{"executor_public_id":"`+active+`","role":"runner"}` {
			t.Fatalf("served route: %s addressed %s", tk.Status, tk.AddressedTo)
		}
		// A route may repeat the step's name as tool_name, the key a declaration's route uses;
		// any other tool_name is refused with what to write.
		named := `{"steps":[{"tool":{"name":"fetch","route":{"kind":"runner","runner_executor_public_id":"` + active + `","tool_name":"fetch"}}}],"approval_mode":"bypass"}`
		if tk := h.Task(h.Create(named).Run.PublicID, "s1-tool-1"); tk.Status != runs.StatusDispatched {
			t.Fatalf("route with the step's tool_name: %s", tk.Status)
		}
		other := `{"steps":[{"tool":{"name":"fetch","route":{"kind":"runner","runner_executor_public_id":"` + active + `","tool_name":"get"}}}],"approval_mode":"bypass"}`
		_, err = h.Conv.CreateRun(h.Ctx, createRequest(h.Actor, json.RawMessage(other), "", nil))
		if r, ok := refusal.As(err); !ok || r.Code != steps.CodeInvalidToolRoute || r.Message != `route.tool_name must be the step's name, "fetch" (a tool step calls the Runner's tool by its name); leave tool_name out or write the same name.` {
			t.Fatalf("route with another tool_name: %v", err)
		} else if p, _ := r.Get("path"); p != "steps[0].tool.route.tool_name" {
			t.Fatalf("route with another tool_name: path %v", p)
		}
		for _, c := range []struct{ name, runner, tool, code, path, message string }{
			{"not announced", active, "other", runs.CodeToolNotServed, "steps[0].tool.name", "runner " + active + " does not announce other"},
			{"revoked", revoked, "fetch", steps.CodeRunnerNotEligible, "steps[0].tool.route", "Runner " + revoked + " is not an active Runner of this workspace."},
			{"tool provider", provider, "fetch", steps.CodeRunnerNotEligible, "steps[0].tool.route", "Runner " + provider + " is not an active Runner of this workspace."},
			{"another workspace", foreign, "fetch", steps.CodeRunnerNotEligible, "steps[0].tool.route", "Runner " + foreign + " is not an active Runner of this workspace."},
		} {
			run := step(c.runner, c.tool)
			_, err := h.Conv.CreateRun(h.Ctx, createRequest(h.Actor, json.RawMessage(run), "", []byte(`{"run":`+run+`}`)))
			r, ok := refusal.As(err)
			if !ok {
				t.Fatalf("%s: got %v, want %s", c.name, err, c.code)
			}
			if p, _ := r.Get("path"); r.Code != c.code || r.Kind != refusal.Unprocessable || p != c.path || r.Message != c.message {
				t.Errorf("%s: got %s (kind %d) at %v: %q", c.name, r.Code, r.Kind, p, r.Message)
			}
		}
	})
}
