package runs_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/nexuskernel/nexus/core/conversations"
	"github.com/nexuskernel/nexus/core/runs"
	"github.com/nexuskernel/nexus/core/store"
	"github.com/nexuskernel/nexus/core/store/storetest"
)

// TestAliasCall: a call under an alias is recorded under the kernel wire name with its input
// mapped and the alias beside it; the transcript keeps the alias.
func TestAliasCall(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		h := newHarness(t, s, harnessOptions{})
		alias := `"tools":[{"name":"Remember","canonical":"nexus.memory.write","params":{"file":{"maps_to":"path"},"text":{"maps_to":"content"}}}]`
		c := h.create(modelStep("!mock\nround 1\ncall Remember {\"file\":\"workspace/x.md\",\"text\":\"hi\"}\nround 2\nsay ok", alias))
		h.drain()
		tk := h.task(c.Run.PublicID, "r2t0")
		if deref(tk.ToolName) != "memory_write" || deref(tk.ToolAlias) != "Remember" || tk.Status != runs.StatusCompleted {
			t.Fatalf("alias row: %s %s %s", deref(tk.ToolName), deref(tk.ToolAlias), tk.Status)
		}
		var in map[string]string
		_ = json.Unmarshal(*tk.ToolInput, &in)
		if in["path"] != "workspace/x.md" || in["content"] != "hi" || len(in) != 2 {
			t.Fatalf("mapped input %v", in)
		}
		req, _ := h.conv.ReadRequest(h.ctx, h.actor, c.Run.PublicID, "r2")
		if !strings.Contains(string(req), `"role":"tool","tool_call_id":"mock_r1_0","name":"Remember"`) {
			t.Fatalf("tool entry does not carry the alias: %s", req)
		}
	})
}

// TestPathRuleOnModelCalls: a rule that matches on the input decides a model's calls by their
// arguments, each row's own, when the round that made them expands: the matching call runs, the
// other is denied by the rules mode.
func TestPathRuleOnModelCalls(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		h := newHarness(t, s, harnessOptions{})
		run := `{"steps":[{"model":{"model":"mock/scripted","prompt":"!mock\nround 1\ncall memory_write {\"path\":\"workspace/a\",\"content\":\"x\"}\ncall memory_write {\"path\":\"user/b\",\"content\":\"x\"}\nround 2\nsay done",` +
			memoryTools + `}}],"approval_mode":"rules","approval_rules":[{"tool":"memory_write","path":"path","match":"workspace/*","verdict":"allow"}]}`
		id := h.create(run).Run.PublicID
		h.drain()
		if r := h.run(id); r.Status != runs.RunCompleted {
			t.Fatalf("run %s", r.Status)
		}
		if got := h.task(id, "r2t0"); got.Status != runs.StatusCompleted {
			t.Fatalf("the call the rule allows: %s %+v", got.Status, got.Error)
		}
		got := h.task(id, "r2t1")
		if got.Status != runs.StatusFailed || got.Error == nil || got.Error.Key != runs.KeyApprovalDenied || got.Error.Detail != "no approval rule allows memory_write" {
			t.Fatalf("the call no rule allows: %s %+v", got.Status, got.Error)
		}
	})
}

// TestExpiryCases drives each expiry case through the sweeper with the injected clock.
func TestExpiryCases(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		h := newHarness(t, s, harnessOptions{})
		// A held approval expires approval_expired after 24 hours; a decision then is refused.
		c := h.create(`{"steps":[{"model":{"model":"mock/scripted","prompt":"!mock\nround 1\ncall memory_ls {}\nround 2\nsay {{last_result}}",` + memoryTools + `}}],"approval_mode":"ask"}`)
		h.drain()
		h.clock.Advance(runs.ApprovalHold)
		if _, err := h.conv.Decide(h.ctx, h.actor, c.Run.PublicID, "r2t0", false, ""); !isCode(err, conversations.CodeNotAwaitingApproval) {
			t.Fatalf("approve after the deadline: %v", err)
		}
		if tk := h.task(c.Run.PublicID, "r2t0"); tk.Status != runs.StatusTimedOut || tk.Error.Key != runs.KeyApprovalExpired {
			t.Fatalf("expired approval: %s %+v", tk.Status, tk.Error)
		}
		h.drain()
		if r := h.run(c.Run.PublicID); r.Status != runs.RunCompleted || !strings.Contains(deref(r.Answer), "(approval_expired)") {
			t.Fatalf("run after expiry: %s %q", r.Status, deref(r.Answer))
		}

		// Kernel tool rows: claimed and lost (a worker died). memory_ls is replayable → timed_out;
		// memory_edit is not → uncertain. A queued, unclaimed row → timed_out.
		c = h.create(modelStep("!mock\nround 1\ncall memory_ls {}\ncall memory_edit {\"path\":\"workspace/a\",\"old_text\":\"x\",\"new_text\":\"y\"}\ncall memory_read {\"path\":\"workspace/a\"}\nround 2\nsay {{last_result}}", memoryTools))
		claim := func() {
			t.Helper()
			if _, err := h.e.ClaimKernel(h.ctx); err != nil {
				t.Fatal(err)
			}
		}
		cl, _ := h.e.ClaimKernel(h.ctx) // the model round
		if err := h.e.Evaluate(h.ctx, cl); err != nil {
			t.Fatal(err)
		}
		claim() // r2t0, lost
		claim() // r2t1, lost
		h.clock.Advance(runs.ToolParkDefault)
		if n, err := h.e.Sweep(h.ctx); err != nil || n != 3 {
			t.Fatalf("sweep: %d %v", n, err)
		}
		want := map[string][2]string{"r2t0": {runs.StatusTimedOut, runs.KeyToolTimeout}, "r2t1": {runs.StatusUncertain, runs.KeyToolUncertain},
			"r2t2": {runs.StatusTimedOut, runs.KeyToolTimeout}}
		for k, w := range want {
			tk := h.task(c.Run.PublicID, k)
			if tk.Status != w[0] || tk.Error.Key != w[1] {
				t.Errorf("%s: %s %+v, want %v", k, tk.Status, tk.Error, w)
			}
		}
		h.drain()
		if r := h.run(c.Run.PublicID); r.Status != runs.RunCompleted {
			t.Fatalf("run after tool expiry: %s", r.Status)
		}

		// A claimed model task is released at its deadline for another attempt; the third lost
		// claim fails attempt_budget_spent and the mainline halts.
		c = h.create(modelStep("!mock\nround 1\nsay hi", ""))
		for attempt := 1; attempt <= runs.MaxModelAttempts; attempt++ {
			cl, err := h.e.ClaimKernel(h.ctx)
			if err != nil || cl == nil || cl.Key != "s1-model-1" {
				t.Fatalf("attempt %d: claim %+v %v", attempt, cl, err)
			}
			h.clock.Advance(time.Minute)
			if _, err := h.e.Sweep(h.ctx); err != nil {
				t.Fatal(err)
			}
		}
		tk := h.task(c.Run.PublicID, "s1-model-1")
		if tk.Status != runs.StatusFailed || tk.Error.Key != runs.KeyAttemptBudgetSpent || deref(tk.Attempts) != 3 {
			t.Fatalf("model after three lost claims: %s %+v attempts %d", tk.Status, tk.Error, deref(tk.Attempts))
		}
		if r := h.run(c.Run.PublicID); r.Status != runs.RunNeedsAttention || r.Attention[0].Reason != runs.ReasonDeliverableUnresolved {
			t.Fatalf("run: %s %+v", r.Status, r.Attention)
		}

		// A released model task is claimed again and replays its sealed request unchanged.
		c = h.create(modelStep("!mock\nround 1\nsay once", ""))
		cl, _ = h.e.ClaimKernel(h.ctx)
		if err := h.e.Evaluate(h.ctx, cl); err != nil {
			t.Fatal(err)
		}
		first, _ := h.conv.ReadRequest(h.ctx, h.actor, c.Run.PublicID, "s1-model-1")
		if r := h.run(c.Run.PublicID); r.Status != runs.RunCompleted {
			t.Fatalf("run %s", r.Status)
		}
		if len(first) == 0 {
			t.Fatal("no sealed request")
		}
	})
}
