package conversations_test

import (
	"strings"
	"testing"

	"github.com/nexuskernel/nexus/core/refusal"
	"github.com/nexuskernel/nexus/core/runs"
	"github.com/nexuskernel/nexus/core/store"
	"github.com/nexuskernel/nexus/core/store/storetest"
)

// TestWriteStanding: a plain member who did not create the run may read it but not stop it,
// append to it or decide its rows.
func TestWriteStanding(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		h := newHarness(t, s, harnessOptions{})
		c := h.Create(`{"steps":[{"model":{"model":"mock/scripted","prompt":"!mock\nround 1\ncall memory_ls {}\nround 2\nsay x",` + memoryTools + `}}],"approval_mode":"ask"}`)
		h.Drain()
		u := &store.User{PublicID: store.NewPublicID(), Handle: "li", DisplayName: "Li", CreatedAt: 1}
		if err := s.Write(h.Ctx, func(tx *store.Tx) error {
			if err := store.InsertUser(h.Ctx, tx, u); err != nil {
				return err
			}
			return store.InsertMembership(h.Ctx, tx, h.Actor.WorkspaceID, u.ID, store.RoleMember, 1)
		}); err != nil {
			t.Fatal(err)
		}
		li := &runs.Actor{Kind: "user", ID: u.ID, PublicID: u.PublicID, Role: store.RoleMember, WorkspaceID: h.Actor.WorkspaceID, WorkspacePublicID: h.Actor.WorkspacePublicID}
		if _, err := h.Conv.ReadRun(h.Ctx, li, c.Run.PublicID); err != nil {
			t.Fatalf("a member reads: %v", err)
		}
		for name, err := range map[string]error{
			"stop":    second(h.Conv.StopRun(h.Ctx, li, c.Run.PublicID, true)),
			"approve": second(h.Conv.Decide(h.Ctx, li, c.Run.PublicID, "r2t0", false, "")),
			"deny":    second(h.Conv.Decide(h.Ctx, li, c.Run.PublicID, "r2t0", true, "")),
			"append":  second(h.Conv.Append(h.Ctx, appendRequest(t, li, c.Run.PublicID, []byte(`{"steps":[{"model":{"model":"mock/scripted","prompt":"x"}}]}`), ""))),
			"start":   second(h.Conv.StartRun(h.Ctx, li, c.Run.PublicID)),
		} {
			r, ok := refusal.As(err)
			if !ok || r.Code != refusal.CodeNotAuthorized || r.Kind != refusal.Forbidden {
				t.Errorf("%s by a plain member: %v", name, err)
			}
		}
		// Li's inbox is empty: the held rows are addressed to the creator.
		page, err := h.Conv.Inbox(h.Ctx, "user", li.PublicID, "", 50)
		if err != nil || len(page.Tasks) != 0 {
			t.Fatalf("li's inbox: %+v %v", page, err)
		}
		if _, err := h.Conv.Inbox(h.Ctx, "user", li.PublicID, "%%%", 50); !isCode(err, refusal.CodeParameterInvalid) {
			t.Fatalf("malformed cursor: %v", err)
		}
	})
}

// TestStop: a forced stop cancels every open row run_canceled in one transaction; a graceful
// stop lets a claimed row finish, holding the run canceling until it settles.
func TestStop(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		h := newHarness(t, s, harnessOptions{})
		c := h.Create(`{"steps":[{"model":{"model":"mock/scripted","prompt":"!mock\nround 1\ncall memory_ls {}\ncall memory_ls {}\nround 2\nsay x",` + memoryTools + `}}],"approval_mode":"ask"}`)
		h.Drain()
		doc, err := h.Conv.StopRun(h.Ctx, h.Actor, c.Run.PublicID, true)
		if err != nil || doc.Status != runs.RunCanceled || doc.Stop == nil || !doc.Stop.Force || doc.CompletedAt == nil {
			t.Fatalf("forced stop: %+v %v", doc, err)
		}
		for _, k := range []string{"r2t0", "r2t1", "r2"} {
			if tk := h.Task(c.Run.PublicID, k); tk.Status != runs.StatusCanceled || tk.Error.Key != runs.KeyRunCanceled {
				t.Errorf("%s after stop: %s %+v", k, tk.Status, tk.Error)
			}
		}
		if strings.Contains(doc.Status, "cancel") && doc.Attention != nil {
			t.Errorf("a canceled run keeps no attention: %+v", doc.Attention)
		}

		// Graceful: the claimed model round finishes (and does not expand); the run then ends.
		c = h.Create(modelStep("!mock\nround 1\ncall memory_ls {}\nround 2\nsay x", memoryTools))
		cl, err := h.E.ClaimKernel(h.Ctx)
		if err != nil || cl == nil {
			t.Fatal(err)
		}
		doc, err = h.Conv.StopRun(h.Ctx, h.Actor, c.Run.PublicID, false)
		if err != nil || doc.Status != runs.RunCanceling {
			t.Fatalf("graceful stop: %+v %v", doc, err)
		}
		if err := h.E.Evaluate(h.Ctx, cl); err != nil {
			t.Fatal(err)
		}
		r := h.Run(c.Run.PublicID)
		if r.Status != runs.RunCanceled || len(r.Tasks) != 1 || r.Tasks[0].Status != runs.StatusCompleted {
			t.Fatalf("after the claimed round finished: %s %+v", r.Status, r.Tasks)
		}
		// A pending run goes straight to canceled.
		p := h.Create(`{"steps":[{"model":{"model":"mock/scripted","prompt":"x"}}],"approval_mode":"bypass","start":false}`)
		if doc, err := h.Conv.StopRun(h.Ctx, h.Actor, p.Run.PublicID, false); err != nil || doc.Status != runs.RunCanceled {
			t.Fatalf("pending stop: %+v %v", doc, err)
		}
	})
}
