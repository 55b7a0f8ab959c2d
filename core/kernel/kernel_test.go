package kernel_test

import (
	"context"
	"encoding/json"
	"sort"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/nexuskernel/nexus/core/conversations"
	"github.com/nexuskernel/nexus/core/kernel"
	kmemory "github.com/nexuskernel/nexus/core/memory"
	"github.com/nexuskernel/nexus/core/model"
	"github.com/nexuskernel/nexus/core/registry"
	"github.com/nexuskernel/nexus/core/runs"
	"github.com/nexuskernel/nexus/core/store"
	"github.com/nexuskernel/nexus/core/store/storetest"
	"github.com/nexuskernel/nexus/sdk/memory"
	"github.com/nexuskernel/nexus/sdk/memory/memorytest"
)

// TestDispatchTable: the families built here dispatch exactly their canonical names, every one
// a registered kernel tool; a registered tool without a handler fails its task tool_not_served.
func TestDispatchTable(t *testing.T) {
	t.Parallel()
	tools := kernel.New(kernel.Options{Memory: &kernel.Memory{Provider: memorytest.NewMemStore(), Scopes: fixedScopes{}},
		Models: &kernel.Models{Catalog: model.MustBuiltin()}, Discovery: &kernel.Discovery{}, Runners: &kernel.Runners{}, Skill: &kernel.Skill{},
		History: &kernel.History{}})
	got := tools.Canonicals()
	sort.Strings(got)
	want := []string{"nexus.conversation.read", "nexus.conversation.search", "nexus.memory.delete", "nexus.memory.edit", "nexus.memory.grep", "nexus.memory.ls", "nexus.memory.read",
		"nexus.memory.write", "nexus.models.list", "nexus.runners.list", "nexus.skill.load", "nexus.tools.call", "nexus.tools.search"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatal(diff)
	}
	reg := registry.New()
	for _, c := range got {
		if _, ok := reg.Resolve(c); !ok {
			t.Errorf("%s is not a registered kernel tool", c)
		}
	}
	for _, e := range reg.Entries() {
		out, err := tools.Run(context.Background(), &runs.KernelCall{ToolName: e.Wire, Canonical: e.Canonical, Input: json.RawMessage(`{}`),
			MemoryContext: json.RawMessage(`{"bindings":[]}`),
			Round:         func(context.Context) (*runs.CallingRound, error) { return &runs.CallingRound{Key: "r1"}, nil }})
		if err != nil {
			t.Fatalf("%s: %v", e.Canonical, err)
		}
		handled := false
		for _, c := range got {
			handled = handled || c == e.Canonical
		}
		if handled != (out.Failure == nil) {
			t.Errorf("%s: handled %v, outcome %+v", e.Canonical, handled, out)
		}
		if !handled && (out.Failure.Key != "tool_not_served" || out.Failure.Detail != "the kernel has no executor for "+e.Wire+" ("+e.Canonical+") in this version") {
			t.Errorf("%s: failure %+v", e.Canonical, out.Failure)
		}
	}
}

type fixedScopes struct{ s []memory.Scope }

func (f fixedScopes) Scopes(context.Context, *runs.KernelCall) ([]memory.Scope, error) {
	return f.s, nil
}

// TestMemoryHandler: the handler answers the Engine's texts, titles and refusal form over the
// call's scopes.
func TestMemoryHandler(t *testing.T) {
	t.Parallel()
	ws := "01900000-0000-7000-8000-000000000001"
	m := &kernel.Memory{Provider: memorytest.NewMemStore(), Scopes: fixedScopes{[]memory.Scope{
		{Binding: "workspace", Kind: memory.ScopeWorkspace, OwnerID: ws, Access: memory.AccessReadWrite},
		{Binding: "team", Kind: memory.ScopeWorkspace, OwnerID: "01900000-0000-7000-8000-000000000002", Access: memory.AccessRead},
	}}}
	run := func(tool, in string) *runs.KernelResult {
		t.Helper()
		out, err := m.Run(context.Background(), &runs.KernelCall{ToolName: tool, Input: json.RawMessage(in)})
		if err != nil || out.Result == nil {
			t.Fatalf("%s: %v %+v", tool, err, out)
		}
		return out.Result
	}
	cases := []struct {
		tool, in, text, title string
		isErr                 bool
	}{
		{"memory_ls", `{}`, "No memory documents.", "memory is empty", false},
		{"memory_write", `{"path":"workspace/plan.md","content":"a\nb\n"}`, "Wrote workspace/plan.md (4 bytes).", "wrote workspace/plan.md", false},
		{"memory_read", `{"path":"workspace/plan.md"}`, "a\nb\n", "read workspace/plan.md", false},
		{"memory_read", `{"path":"workspace/plan.md","limit":1}`, "a\n\n[Showing 1 of 2 lines. Continue with offset=2.]", "read workspace/plan.md", false},
		{"memory_grep", `{"pattern":"b"}`, "workspace/plan.md:2: b", "1 matches", false},
		{"memory_edit", `{"path":"workspace/plan.md","old_text":"b","new_text":"c"}`, "Edited workspace/plan.md.", "edited workspace/plan.md", false},
		{"memory_write", `{"path":"team/x","content":"x"}`, "memory_read_only: team/x", "memory refused", true},
		{"memory_read", `{"path":"conversation/x"}`, "memory_scope_unavailable: conversation/x", "memory refused", true},
		{"memory_write", `{"path":"workspace/skills/x","content":"x"}`, "memory_reserved_prefix: workspace/skills/x", "memory refused", true},
		{"memory_delete", `{"path":"workspace/plan.md"}`, "Deleted workspace/plan.md.", "deleted", false},
		{"memory_delete", `{"path":"workspace/plan.md"}`, "memory_not_found: workspace/plan.md", "memory refused", true},
	}
	for _, c := range cases {
		r := run(c.tool, c.in)
		if r.Content != c.text || r.Title != c.title || r.IsError != c.isErr || r.StructuredContent != nil {
			t.Errorf("%s %s: %+v", c.tool, c.in, r)
		}
	}
}

// TestMemoryScopes resolves a frozen configuration through kernel memory's resolver: a
// standalone run has no conversation root, and an agent principal's user root is its steward's.
func TestMemoryScopes(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		u := &store.User{PublicID: store.NewPublicID(), Handle: "ana", DisplayName: "Ana"}
		w := &store.Workspace{PublicID: store.NewPublicID(), Handle: "default", Name: "D"}
		a := &store.Agent{PublicID: store.NewPublicID(), Handle: "bot", DisplayName: "Bot"}
		err := s.Write(ctx, func(tx *store.Tx) error {
			if err := store.InsertUser(ctx, tx, u); err != nil {
				return err
			}
			if err := store.InsertWorkspace(ctx, tx, w); err != nil {
				return err
			}
			a.WorkspaceID, a.StewardUserID = w.ID, u.ID
			return store.InsertAgent(ctx, tx, a)
		})
		if err != nil {
			t.Fatal(err)
		}
		frozen := json.RawMessage(`{"bindings":[{"name":"conversation","scope":"conversation","access":"read_write"},{"name":"workspace","scope":"workspace","access":"read_write"},{"name":"user","scope":"user","access":"read_write"}]}`)
		res := kernel.MemoryScopes{Resolver: kmemory.NewResolver(s, conversations.ConversationStates{})}
		got, err := res.Scopes(ctx, &runs.KernelCall{WorkspacePublicID: w.PublicID, MemoryContext: frozen,
			MemoryPrincipal: runs.Member{Kind: "agent", PublicID: a.PublicID}})
		if err != nil {
			t.Fatal(err)
		}
		want := []memory.Scope{
			{Binding: "workspace", Kind: memory.ScopeWorkspace, OwnerID: w.PublicID, Access: memory.AccessReadWrite, WorkspaceID: w.PublicID},
			{Binding: "user", Kind: memory.ScopeUser, OwnerID: u.PublicID, Access: memory.AccessReadWrite, WorkspaceID: w.PublicID},
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Fatal(diff)
		}
	})
}
