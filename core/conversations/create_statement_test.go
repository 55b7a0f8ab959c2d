package conversations_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/nexuskernel/nexus/core/conversations"
	"github.com/nexuskernel/nexus/core/identity"
	"github.com/nexuskernel/nexus/core/refusal"
	"github.com/nexuskernel/nexus/core/runs"
	"github.com/nexuskernel/nexus/core/store"
	"github.com/nexuskernel/nexus/core/store/storetest"
)

// A create without an idempotency key is one statement (store.CreateRun) on both stores, whether
// the door read the standing or left it to the statement. When the standing changed before the
// statement ran, the statement's guard fails, nothing is written by it, and the ordinary
// transaction rereads the standing: a member removed since is refused not_found and no run is
// left, and a removed member's faulty body is refused not_found too, before the body's word. A
// member made owner still holds the standing a create needs. A shape the statement does not hold
// (more rows than it writes, a keyed create) never reaches it.
func TestCreateFallsBackToTheTransactionOnAFailedGuard(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		h := newHarness(t, s, harnessOptions{})
		dir := identity.NewDirectory(s, identity.NewAuthenticator(s, nil), identity.DirectoryOptions{})
		mia := h.Member("mia")
		principal := &identity.Principal{Kind: "user", ID: mia.ID, PublicID: mia.PublicID}
		pending := json.RawMessage(`{"approval_mode":"bypass","start":false,"steps":[{"model":{"model":"mock/scripted","prompt":"x"}}]}`)
		// reread is the door's Reread: Mia's standing read through q.
		reread := func(ctx context.Context, q store.Querier) (*runs.Actor, error) {
			fresh, err := dir.AccessIn(ctx, q, principal, mia.WorkspacePublicID, identity.NeedMember)
			if err != nil {
				return nil, err
			}
			return &runs.Actor{Kind: "user", ID: mia.ID, PublicID: mia.PublicID, Role: fresh.Workspace.Role, WorkspaceID: fresh.Workspace.ID,
				WorkspacePublicID: fresh.Workspace.PublicID}, nil
		}
		// asRead is Mia's Actor as a door that reads the standing reads it now.
		asRead := func() *runs.Actor {
			t.Helper()
			a, err := reread(h.Ctx, s.Reader())
			if err != nil {
				t.Fatal(err)
			}
			a.Reread = reread
			return a
		}
		// unread is Mia's Actor as the create door leaves it: the route's reference, unread.
		unread := func() *runs.Actor {
			return &runs.Actor{Kind: "user", ID: mia.ID, PublicID: mia.PublicID, WorkspacePublicID: mia.WorkspacePublicID, Reread: reread}
		}
		setRole := func(role string) {
			t.Helper()
			err := s.Write(h.Ctx, func(tx *store.Tx) error {
				if _, err := store.DeleteMembership(h.Ctx, tx, mia.WorkspaceID, mia.ID); err != nil || role == "" {
					return err
				}
				return store.InsertMembership(h.Ctx, tx, mia.WorkspaceID, mia.ID, role, 1)
			})
			if err != nil {
				t.Fatal(err)
			}
		}
		create := func(a *runs.Actor, run json.RawMessage, key string) (*conversations.Created, store.CreateRunStats, error) {
			t.Helper()
			before := s.CreateRunStats()
			c, err := h.Conv.CreateRun(h.Ctx, createRequest(a, run, key, []byte(`{"run":`+string(run)+`}`)))
			after := s.CreateRunStats()
			return c, store.CreateRunStats{Written: after.Written - before.Written, Guarded: after.Guarded - before.Guarded}, err
		}
		want := func(what string, got store.CreateRunStats, written, guarded int64) {
			t.Helper()
			if got.Written != written || got.Guarded != guarded {
				t.Fatalf("%s: statements %+v; want %d written, %d guarded", what, got, written, guarded)
			}
		}
		runCount := func() int {
			t.Helper()
			var n int
			if err := s.Reader().Get(h.Ctx, &n, `SELECT count(*) FROM runs`); err != nil {
				t.Fatal(err)
			}
			return n
		}

		if _, stats, err := create(asRead(), pending, ""); err != nil {
			t.Fatal(err)
		} else {
			want("a member's create", stats, 1, 0)
		}

		if c, stats, err := create(unread(), pending, ""); err != nil {
			t.Fatal(err)
		} else {
			want("a member's create, the standing read by the statement", stats, 1, 0)
			if c.Run.WorkspacePublicID != mia.WorkspacePublicID {
				t.Fatalf("created in %s; want %s", c.Run.WorkspacePublicID, mia.WorkspacePublicID)
			}
		}

		// Made owner after the door's read: a member's standing still holds.
		stale := asRead()
		setRole(store.RoleOwner)
		c, stats, err := create(stale, pending, "")
		if err != nil {
			t.Fatal(err)
		}
		want("a create whose role changed", stats, 1, 0)
		if c.Run.CreatedBy.PublicID != mia.PublicID {
			t.Fatalf("created by %+v", c.Run.CreatedBy)
		}

		// Removed after the door's read: the guard fails, the transaction refuses not_found.
		stale = asRead()
		setRole("")
		n := runCount()
		_, stats, err = create(stale, pending, "")
		if r, ok := refusal.As(err); !ok || r.Code != refusal.CodeNotFound {
			t.Fatalf("a removed member's create: %v; want not_found", err)
		}
		want("a removed member's create", stats, 0, 1)
		_, stats, err = create(unread(), pending, "")
		if r, ok := refusal.As(err); !ok || r.Code != refusal.CodeNotFound {
			t.Fatalf("a removed member's create, the standing read by the statement: %v; want not_found", err)
		}
		want("a removed member's create, the standing read by the statement", stats, 0, 1)
		_, stats, err = create(unread(), json.RawMessage(`{"approval_mode":"sometimes","steps":[]}`), "")
		if r, ok := refusal.As(err); !ok || r.Code != refusal.CodeNotFound {
			t.Fatalf("a removed member's faulty body: %v; want not_found", err)
		}
		want("a removed member's faulty body", stats, 0, 0)
		if got := runCount(); got != n {
			t.Fatalf("a removed member's creates wrote %d runs", got-n)
		}

		// Shapes the statement does not hold are transactions from the start.
		setRole(store.RoleMember)
		steps := make([]json.RawMessage, store.MaxCreateRunTasks+1)
		for i := range steps {
			steps[i] = json.RawMessage(`{"model":{"model":"mock/scripted","prompt":"x"}}`)
		}
		long, _ := json.Marshal(map[string]any{"approval_mode": "bypass", "start": false, "steps": steps})
		c, stats, err = create(asRead(), long, "")
		if err != nil {
			t.Fatal(err)
		}
		want("a create of more rows than the statement holds", stats, 0, 0)
		if c.Run.TaskProgress["total"] != store.MaxCreateRunTasks+1 {
			t.Fatalf("the long create's progress %v", c.Run.TaskProgress)
		}
		if _, stats, err = create(asRead(), pending, "key-1"); err != nil {
			t.Fatal(err)
		}
		want("a keyed create", stats, 0, 0)
	})
}
