package memory_test

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/nexuskernel/nexus/core/memory"
	"github.com/nexuskernel/nexus/core/store"
	"github.com/nexuskernel/nexus/core/store/storetest"
	memsdk "github.com/nexuskernel/nexus/sdk/memory"
)

// world is a workspace with a person and an agent the person stewards.
type world struct {
	db                              *store.Store
	workspace, person, agent, other string
}

func newWorld(t *testing.T, db *store.Store) *world {
	t.Helper()
	ctx := context.Background()
	w := &world{db: db}
	err := db.Write(ctx, func(tx *store.Tx) error {
		ws := &store.Workspace{PublicID: store.NewPublicID(), Handle: "acme", Name: "Acme"}
		if err := store.InsertWorkspace(ctx, tx, ws); err != nil {
			return err
		}
		var users []*store.User
		for _, h := range []string{"alice", "bob"} {
			u := &store.User{PublicID: store.NewPublicID(), Handle: h, DisplayName: h}
			if err := store.InsertUser(ctx, tx, u); err != nil {
				return err
			}
			if err := store.InsertMembership(ctx, tx, ws.ID, u.ID, store.RoleMember, 0); err != nil {
				return err
			}
			users = append(users, u)
		}
		a := &store.Agent{PublicID: store.NewPublicID(), WorkspaceID: ws.ID, Handle: "assistant", DisplayName: "Assistant", StewardUserID: users[0].ID}
		if err := store.InsertAgent(ctx, tx, a); err != nil {
			return err
		}
		w.workspace, w.person, w.other, w.agent = ws.PublicID, users[0].PublicID, users[1].PublicID, a.PublicID
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return w
}

// conversations is a ConversationStates the test sets, recording the queriers it was handed.
type conversations struct {
	mu     sync.Mutex
	states map[string]memory.ConversationState
	seen   []store.Querier
}

func (c *conversations) ConversationState(_ context.Context, q store.Querier, id string, _ memory.Principal) (memory.ConversationState, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.seen = append(c.seen, q)
	st, ok := c.states[id]
	if !ok {
		return 0, errors.New("no such conversation in the test")
	}
	return st, nil
}

func TestResolve(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.Store) {
		ctx := context.Background()
		w := newWorld(t, db)
		const (
			open     = "0193c2d4-5e6f-7a8b-9c0d-0000000000a1"
			archived = "0193c2d4-5e6f-7a8b-9c0d-0000000000a2"
			deleted  = "0193c2d4-5e6f-7a8b-9c0d-0000000000a3"
			other    = "0193c2d4-5e6f-7a8b-9c0d-0000000000a4"
		)
		convs := &conversations{states: map[string]memory.ConversationState{
			open: memory.ConversationWritable, archived: memory.ConversationReadOnly, deleted: memory.ConversationGone, other: memory.ConversationWritable,
		}}
		r := memory.NewResolver(db, convs)
		agent := memory.Principal{Kind: memory.PrincipalAgent, PublicID: w.agent}
		person := memory.Principal{Kind: memory.PrincipalUser, PublicID: w.other}
		unknownAgent := memory.Principal{Kind: memory.PrincipalAgent, PublicID: store.NewPublicID()}
		scope := func(name string, kind memsdk.ScopeKind, owner string, access memsdk.Access) memsdk.Scope {
			return memsdk.Scope{Binding: name, Kind: kind, OwnerID: owner, Access: access, WorkspaceID: w.workspace}
		}
		rw, ro := memsdk.AccessReadWrite, memsdk.AccessRead
		cases := []struct {
			name   string
			frozen memory.Context
			facts  memory.RunFacts
			want   []memsdk.Scope
		}{
			{"conversation-hosted, open: all three, user the steward",
				memory.DefaultContext(true, true),
				memory.RunFacts{WorkspacePublicID: w.workspace, ConversationPublicID: open, Principal: agent},
				[]memsdk.Scope{scope("conversation", memsdk.ScopeConversation, open, rw), scope("workspace", memsdk.ScopeWorkspace, w.workspace, rw), scope("user", memsdk.ScopeUser, w.person, rw)}},
			{"archived: conversation downgraded to read",
				memory.DefaultContext(true, true),
				memory.RunFacts{WorkspacePublicID: w.workspace, ConversationPublicID: archived, Principal: agent},
				[]memsdk.Scope{scope("conversation", memsdk.ScopeConversation, archived, ro), scope("workspace", memsdk.ScopeWorkspace, w.workspace, rw), scope("user", memsdk.ScopeUser, w.person, rw)}},
			{"deleted: conversation dropped",
				memory.DefaultContext(true, true),
				memory.RunFacts{WorkspacePublicID: w.workspace, ConversationPublicID: deleted, Principal: agent},
				[]memsdk.Scope{scope("workspace", memsdk.ScopeWorkspace, w.workspace, rw), scope("user", memsdk.ScopeUser, w.person, rw)}},
			{"standalone by a person: user is that person",
				memory.DefaultContext(false, true),
				memory.RunFacts{WorkspacePublicID: w.workspace, Principal: person},
				[]memsdk.Scope{scope("workspace", memsdk.ScopeWorkspace, w.workspace, rw), scope("user", memsdk.ScopeUser, w.other, rw)}},
			{"a conversation binding on a standalone run resolves to nothing",
				memory.DefaultContext(true, true),
				memory.RunFacts{WorkspacePublicID: w.workspace, Principal: person},
				[]memsdk.Scope{scope("workspace", memsdk.ScopeWorkspace, w.workspace, rw), scope("user", memsdk.ScopeUser, w.other, rw)}},
			{"no controlling person: no user binding",
				memory.DefaultContext(false, true),
				memory.RunFacts{WorkspacePublicID: w.workspace, Principal: unknownAgent},
				[]memsdk.Scope{scope("workspace", memsdk.ScopeWorkspace, w.workspace, rw)}},
			{"a frozen read binding stays read on an open conversation",
				memory.Context{Bindings: []memory.Binding{{Name: "conversation", Scope: memsdk.ScopeConversation, Access: ro}}},
				memory.RunFacts{WorkspacePublicID: w.workspace, ConversationPublicID: open, Principal: agent},
				[]memsdk.Scope{scope("conversation", memsdk.ScopeConversation, open, ro)}},
			{"a binding naming another conversation, and extra roots",
				memory.Context{Bindings: []memory.Binding{
					{Name: "thread", Scope: memsdk.ScopeConversation, Access: rw, ConversationPublicID: other},
					{Name: "team", Scope: memsdk.ScopeWorkspace, Access: ro},
				}},
				memory.RunFacts{WorkspacePublicID: w.workspace, ConversationPublicID: open, Principal: agent},
				[]memsdk.Scope{scope("thread", memsdk.ScopeConversation, other, rw), scope("team", memsdk.ScopeWorkspace, w.workspace, ro)}},
			{"no memory",
				memory.Context{Bindings: []memory.Binding{}},
				memory.RunFacts{WorkspacePublicID: w.workspace, ConversationPublicID: open, Principal: agent},
				[]memsdk.Scope{}},
		}
		for _, c := range cases {
			got, err := r.Resolve(ctx, nil, c.frozen, c.facts)
			if err != nil {
				t.Fatalf("%s: %v", c.name, err)
			}
			if diff := cmp.Diff(c.want, got); diff != "" {
				t.Errorf("%s (-want +got):\n%s", c.name, diff)
			}
		}

		// Freeze applies the wave-1 defaults with the principal's controlling person.
		for _, c := range []struct {
			name  string
			facts memory.RunFacts
			want  memory.Context
		}{
			{"conversation-hosted", memory.RunFacts{WorkspacePublicID: w.workspace, ConversationPublicID: open, Principal: agent}, memory.DefaultContext(true, true)},
			{"standalone by a person", memory.RunFacts{WorkspacePublicID: w.workspace, Principal: person}, memory.DefaultContext(false, true)},
			{"agent without a steward", memory.RunFacts{WorkspacePublicID: w.workspace, Principal: unknownAgent}, memory.DefaultContext(false, false)},
		} {
			got, err := r.Freeze(ctx, nil, c.facts)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(c.want, got); diff != "" {
				t.Errorf("freeze %s (-want +got):\n%s", c.name, diff)
			}
		}

		// Inside the caller's transaction, the conversation is read through it.
		err := db.Write(ctx, func(tx *store.Tx) error {
			convs.mu.Lock()
			convs.seen = nil
			convs.mu.Unlock()
			if _, err := r.Resolve(ctx, tx, memory.DefaultContext(true, true), memory.RunFacts{WorkspacePublicID: w.workspace, ConversationPublicID: open, Principal: agent}); err != nil {
				return err
			}
			if len(convs.seen) != 1 || convs.seen[0] != store.Querier(tx) {
				t.Errorf("conversation state read through %v, want the transaction", convs.seen)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}

		// Failures: a broken frozen context, a bad workspace id, no ConversationStates, a
		// principal of no known kind, a conversation whose state cannot be read.
		facts := memory.RunFacts{WorkspacePublicID: w.workspace, ConversationPublicID: open, Principal: agent}
		if _, err := r.Resolve(ctx, nil, memory.Context{Bindings: []memory.Binding{{Name: "Bad", Scope: memsdk.ScopeUser, Access: rw}}}, facts); !errors.Is(err, memory.ErrContextInvalid) {
			t.Errorf("broken context: %v", err)
		}
		if _, err := r.Resolve(ctx, nil, memory.DefaultContext(false, false), memory.RunFacts{WorkspacePublicID: "acme", Principal: agent}); err == nil {
			t.Error("a workspace handle resolved")
		}
		if _, err := memory.NewResolver(db, nil).Resolve(ctx, nil, memory.DefaultContext(true, true), facts); err == nil {
			t.Error("a conversation binding resolved without ConversationStates")
		}
		if _, err := r.Resolve(ctx, nil, memory.DefaultContext(false, true), memory.RunFacts{WorkspacePublicID: w.workspace, Principal: memory.Principal{Kind: "robot", PublicID: w.agent}}); err == nil {
			t.Error("a principal of unknown kind resolved")
		}
		if _, err := r.Resolve(ctx, nil, memory.DefaultContext(true, true), memory.RunFacts{WorkspacePublicID: w.workspace, ConversationPublicID: store.NewPublicID(), Principal: agent}); err == nil {
			t.Error("an unreadable conversation resolved")
		}
	})
}

// TestResolvedBindingsThroughEngine runs memory calls through the Engine over the kernel store
// with resolved bindings: the live state decides what a call may do.
func TestResolvedBindingsThroughEngine(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.Store) {
		ctx := context.Background()
		w := newWorld(t, db)
		const conv = "0193c2d4-5e6f-7a8b-9c0d-0000000000b1"
		convs := &conversations{states: map[string]memory.ConversationState{conv: memory.ConversationWritable}}
		r := memory.NewResolver(db, convs)
		engine := &memsdk.Engine{Provider: memory.New(db), Now: func() time.Time { return time.Date(2030, 1, 15, 9, 0, 0, 0, time.UTC) }}
		agent := memory.Principal{Kind: memory.PrincipalAgent, PublicID: w.agent}
		hosted := memory.RunFacts{WorkspacePublicID: w.workspace, ConversationPublicID: conv, Principal: agent}
		standalone := memory.RunFacts{WorkspacePublicID: w.workspace, Principal: memory.Principal{Kind: memory.PrincipalUser, PublicID: w.person}}
		call := func(f memory.RunFacts, frozen memory.Context, tool, input string) memsdk.Result {
			t.Helper()
			scopes, err := r.Resolve(ctx, nil, frozen, f)
			if err != nil {
				t.Fatal(err)
			}
			res, err := engine.Run(ctx, tool, json.RawMessage(input), scopes, memsdk.RunOptions{})
			if err != nil {
				t.Fatal(err)
			}
			return res
		}
		hostedCtx, standaloneCtx := memory.DefaultContext(true, true), memory.DefaultContext(false, true)
		want := func(what string, got, want memsdk.Result) {
			t.Helper()
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("%s (-want +got):\n%s", what, diff)
			}
		}
		want("write in the conversation", call(hosted, hostedCtx, "memory_write", `{"path":"conversation/plan.md","content":"step 1"}`),
			memsdk.Result{Text: "Wrote conversation/plan.md (6 bytes).", Title: "wrote conversation/plan.md"})
		// The agent's user root is its steward's: the person's standalone run reads it.
		want("write the agent's user root", call(hosted, hostedCtx, "memory_write", `{"path":"user/prefs.md","content":"tabs"}`),
			memsdk.Result{Text: "Wrote user/prefs.md (4 bytes).", Title: "wrote user/prefs.md"})
		want("the steward reads it", call(standalone, standaloneCtx, "memory_read", `{"path":"user/prefs.md"}`),
			memsdk.Result{Text: "tabs", Title: "read user/prefs.md"})
		want("standalone: no conversation root", call(standalone, standaloneCtx, "memory_read", `{"path":"conversation/plan.md"}`),
			memsdk.Result{Text: "memory_scope_unavailable: conversation/plan.md", IsError: true, Title: "memory refused"})
		// Archived since acceptance: the conversation reads, but no longer takes writes.
		convs.mu.Lock()
		convs.states[conv] = memory.ConversationReadOnly
		convs.mu.Unlock()
		want("archived: read", call(hosted, hostedCtx, "memory_read", `{"path":"conversation/plan.md"}`),
			memsdk.Result{Text: "step 1", Title: "read conversation/plan.md"})
		want("archived: write refused", call(hosted, hostedCtx, "memory_write", `{"path":"conversation/plan.md","content":"step 2"}`),
			memsdk.Result{Text: "memory_read_only: conversation/plan.md", IsError: true, Title: "memory refused"})
		convs.mu.Lock()
		convs.states[conv] = memory.ConversationGone
		convs.mu.Unlock()
		want("deleted: unbound", call(hosted, hostedCtx, "memory_ls", `{"path":"conversation/"}`),
			memsdk.Result{Text: "memory_scope_unavailable: conversation/", IsError: true, Title: "memory refused"})
		want("deleted: the union lists the rest", call(hosted, hostedCtx, "memory_ls", `{}`),
			memsdk.Result{Text: "user/prefs.md  4 bytes  2030-01-15T09:00:00Z", Title: "1 memory documents"})
	})
}
