package conversations_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/nexuskernel/nexus/core/conversations"
	"github.com/nexuskernel/nexus/core/runs"
	"github.com/nexuskernel/nexus/core/store"
	"github.com/nexuskernel/nexus/core/store/storetest"
)

// TestApprovalHoldApproveDeny: ask mode holds model calls; approve dispatches to the kernel with
// the human origin; deny fails the row approval_denied with the reason; the continuation reads it.
func TestApprovalHoldApproveDeny(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		h := newHarness(t, s, harnessOptions{})
		run := `{"steps":[{"model":{"model":"mock/scripted","prompt":"!mock\nround 1\ncall memory_ls {}\ncall memory_write {\"path\":\"workspace/a\",\"content\":\"x\"}\nround 2\nsay {{last_result}}",` + memoryTools + `}}],"approval_mode":"ask"}`
		c := h.Create(run)
		h.Drain()
		id := c.Run.PublicID
		r := h.Run(id)
		if r.Status != runs.RunRunning || len(r.Attention) != 1 || r.Attention[0].Reason != runs.ReasonApprovalRequired ||
			strings.Join(r.Attention[0].TaskKeys, ",") != "r2t0,r2t1" {
			t.Fatalf("held run: %s %+v", r.Status, r.Attention)
		}
		held := h.Task(id, "r2t0")
		if held.Status != runs.StatusNeedsApproval || held.EffectProfile == nil || held.DeadlineAt == nil {
			t.Fatalf("held row %+v", held)
		}
		page, err := h.Conv.Inbox(h.Ctx, "user", h.Actor.PublicID, "", 50)
		if err != nil || len(page.Tasks) != 2 || page.Tasks[0].Kind != "approval" || page.Tasks[0].TaskKey != "r2t0" {
			t.Fatalf("inbox %+v %v", page, err)
		}
		got, err := h.Conv.Decide(h.Ctx, h.Actor, id, "r2t0", false, "")
		if err != nil || got.Status != runs.StatusRunning {
			t.Fatalf("approve: %v %+v", err, got)
		}
		var ap runs.Approval
		_ = json.Unmarshal(got.Approval, &ap)
		if ap.Origin != runs.ApprovalOriginHuman || ap.DecidedBy == nil || ap.DecidedBy.PublicID != h.Actor.PublicID {
			t.Fatalf("approval %+v", ap)
		}
		reason := strings.Repeat("é", 200)
		got, err = h.Conv.Decide(h.Ctx, h.Actor, id, "r2t1", true, reason)
		if err != nil || got.Status != runs.StatusFailed || got.Error.Key != runs.KeyApprovalDenied || len(got.Error.Detail) != 256 {
			t.Fatalf("deny: %v %+v", err, got)
		}
		if _, err := h.Conv.Decide(h.Ctx, h.Actor, id, "r2t1", false, ""); !isCode(err, conversations.CodeNotAwaitingApproval) {
			t.Fatalf("second decision: %v", err)
		}
		h.Drain()
		r = h.Run(id)
		if r.Status != runs.RunCompleted || !strings.HasPrefix(deref(r.Answer), "<tool_use_error>The tool call was declined at approval. (approval_denied) ") {
			t.Fatalf("after decisions: %s %q", r.Status, deref(r.Answer))
		}
		if _, err := h.Conv.Decide(h.Ctx, h.Actor, id, "r2t0", false, ""); !isCode(err, conversations.CodeNotAdjudicable) {
			t.Fatalf("decision on a completed run: %v", err)
		}
	})
}

// TestHaltAndRepair: a failed halt round holds the rows behind it; the run needs attention with
// halt_failure; an append settles the held rows skipped and its repair step reads the failure.
func TestHaltAndRepair(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		h := newHarness(t, s, harnessOptions{})
		c := h.Create(`{"steps":[{"model":{"model":"mock/scripted","prompt":"!mock\nround 1\nerror provider_overloaded try later","key":"plan"}},
			{"model":{"model":"mock/scripted","prompt":"!mock\nround 1\nsay never","key":"write"}}],"approval_mode":"bypass"}`)
		h.Drain()
		id := c.Run.PublicID
		r := h.Run(id)
		if r.Status != runs.RunNeedsAttention || len(r.Attention) == 0 || r.Attention[0].Reason != runs.ReasonHaltFailure || r.Attention[0].TaskKeys[0] != "plan" {
			t.Fatalf("held run: %s %+v", r.Status, r.Attention)
		}
		plan := h.Task(id, "plan")
		if plan.Status != runs.StatusFailed || plan.Error.Key != "provider_overloaded" || plan.Error.Detail != "try later" {
			t.Fatalf("failed round %+v", plan.Error)
		}
		if tk := h.Task(id, "write"); tk.Status != runs.StatusWaiting || strings.Join(tk.WaitingOn, ",") != "" {
			t.Fatalf("held row %s waiting on %v", tk.Status, tk.WaitingOn)
		}
		got, err := h.Conv.Append(h.Ctx, appendRequest(t, h.Actor, id, []byte(`{"steps":[{"model":{"model":"mock/scripted","prompt":"!mock\nround 1\nsay {{last_result}}"}}]}`), ""))
		if err != nil {
			t.Fatal(err)
		}
		if tk := h.Task(id, "write"); tk.Status != runs.StatusSkipped || tk.Error.Key != runs.KeyPredecessorFailed || tk.Error.Detail != "plan failed (provider_overloaded)" {
			t.Fatalf("skipped row %s %+v", tk.Status, tk.Error)
		}
		h.Drain()
		r = h.Run(id)
		if r.Status != runs.RunCompleted || r.DeliverableTaskKey != got.Receipt.DeliverableTaskKey {
			t.Fatalf("repaired run %s", r.Status)
		}
		req, _ := h.Conv.ReadRequest(h.Ctx, h.Actor, id, got.Receipt.DeliverableTaskKey)
		if !strings.Contains(string(req), `<task_result task=\"write\" status=\"skipped\">`) {
			t.Fatalf("the repair step reads the old deliverable: %s", req)
		}
	})
}
