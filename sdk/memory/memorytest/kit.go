package memorytest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/nexuskernel/nexus/sdk/memory"
)

// Factory returns a fresh, empty store for one subtest. It registers its own cleanup with t,
// and it is called from parallel subtests.
type Factory func(t *testing.T) memory.Provider

// Reopener is implemented by a store that keeps its documents across a restart. The kit then
// runs the persistence case (P31): it writes, reopens and reads everything back.
type Reopener interface {
	// Reopen closes the store and opens it again on the same data, as a restarted process
	// would, answering the new store. The old one is not used afterwards.
	Reopen(ctx context.Context) (memory.Provider, error)
}

// providerCase is one row of docs/plugins.md#testing-a-plugin-the-kits (or one of the kit's further
// cases).
type providerCase struct {
	id   string
	name string
	run  func(t *testing.T, p memory.Provider)
}

// RunProvider runs the provider-layer cases (docs/plugins.md#testing-a-plugin-the-kits) against
// fresh stores from factory, one subtest per case, named by its id.
func RunProvider(t *testing.T, factory Factory) {
	t.Helper()
	for _, c := range providerCases() {
		t.Run(c.id+"_"+c.name, func(t *testing.T) {
			t.Parallel()
			c.run(t, factory(t))
		})
	}
	// The persistence case exists only for a store that can be reopened.
	p := factory(t)
	r, ok := p.(Reopener)
	if !ok {
		t.Logf("%T does not implement memorytest.Reopener: P31 does not apply", p)
		return
	}
	t.Run("P31_persistence", func(t *testing.T) {
		t.Parallel()
		persistence(t, p, r)
	})
}

// toolCase is one row of docs/plugins.md#testing-a-plugin-the-kits (or one of the kit's further
// cases).
type toolCase struct {
	id   string
	name string
	run  func(t *testing.T, h *harness)
}

// RunTools runs the tool-layer cases (docs/plugins.md#testing-a-plugin-the-kits): the six tools
// through memory.Engine over fresh stores from factory, with a fixed clock, comparing exact
// results.
func RunTools(t *testing.T, factory Factory) {
	t.Helper()
	for _, c := range toolCases() {
		t.Run(c.id+"_"+c.name, func(t *testing.T) {
			t.Parallel()
			c.run(t, newHarness(t, factory(t)))
		})
	}
}

// Owner ids of the kit's anchors: canonical lowercase UUIDs, as memory.ValidScope requires.
const (
	OwnerConversation = "0193c2d4-5e6f-7a8b-9c0d-000000000001"
	OwnerWorkspace    = "0193c2d4-5e6f-7a8b-9c0d-000000000002"
	OwnerUser         = "0193c2d4-5e6f-7a8b-9c0d-000000000003"
	OwnerOther        = "0193c2d4-5e6f-7a8b-9c0d-000000000004"
)

// Scopes the cases use. Workspace and User share no owner id with each other; SameOwnerUser
// reuses the workspace's id under another kind, which must still be another anchor.
var (
	Conversation  = memory.Scope{Binding: "conversation", Kind: memory.ScopeConversation, OwnerID: OwnerConversation, Access: memory.AccessReadWrite, WorkspaceID: OwnerWorkspace}
	Workspace     = memory.Scope{Binding: "workspace", Kind: memory.ScopeWorkspace, OwnerID: OwnerWorkspace, Access: memory.AccessReadWrite, WorkspaceID: OwnerWorkspace}
	User          = memory.Scope{Binding: "user", Kind: memory.ScopeUser, OwnerID: OwnerUser, Access: memory.AccessReadWrite, WorkspaceID: OwnerWorkspace}
	OtherOwner    = memory.Scope{Binding: "workspace", Kind: memory.ScopeWorkspace, OwnerID: OwnerOther, Access: memory.AccessReadWrite, WorkspaceID: OwnerOther}
	SameOwnerUser = memory.Scope{Binding: "user", Kind: memory.ScopeUser, OwnerID: OwnerWorkspace, Access: memory.AccessReadWrite, WorkspaceID: OwnerWorkspace}
)

// readOnly answers s with read access.
func readOnly(s memory.Scope) memory.Scope {
	s.Access = memory.AccessRead
	return s
}

// T0 is the kit's base time: microsecond precision, far from any real clock, so a store that
// stamps its own time instead of the request's fails.
var T0 = time.Date(2030, time.January, 15, 9, 0, 0, 123456000, time.UTC)

// errIs fails t unless err matches want.
func errIs(t *testing.T, what string, err, want error) {
	t.Helper()
	if !errors.Is(err, want) {
		t.Errorf("%s: error %v, want %v", what, err, want)
	}
}
