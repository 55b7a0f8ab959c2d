package memory

import (
	"time"

	"github.com/nexuskernel/nexus/sdk/announce"
)

// The memory family's effect profiles (docs/agent-tools.md#memory-and-skills): trusted host
// metadata that decides whether a call a dead provider held is replayed. Edit alone is not
// replayable: a repeated edit finds its old text gone.
var (
	// ProfileRead is memory_ls, memory_read and memory_grep.
	ProfileRead = announce.EffectProfile{Kind: announce.KindReadOnly, Destructive: false, EffectScope: announce.ScopeClosed, Idempotency: announce.IdempotencyIntrinsic, Reconciliation: announce.ReconciliationNone}
	// ProfileWrite is memory_write and memory_delete.
	ProfileWrite = announce.EffectProfile{Kind: announce.KindWrite, Destructive: true, EffectScope: announce.ScopeClosed, Idempotency: announce.IdempotencyIntrinsic, Reconciliation: announce.ReconciliationLookup}
	// ProfileEdit is memory_edit.
	ProfileEdit = announce.EffectProfile{Kind: announce.KindWrite, Destructive: true, EffectScope: announce.ScopeClosed, Idempotency: announce.IdempotencyNone, Reconciliation: announce.ReconciliationLookup}
)

// Tools lists the six wire names in catalog order.
func Tools() []string {
	return []string{ToolLs, ToolRead, ToolGrep, ToolWrite, ToolEdit, ToolDelete}
}

// Profile answers the kernel's effect profile of a memory tool, by wire or canonical name.
func Profile(tool string) (announce.EffectProfile, bool) {
	switch verbs[tool] {
	case verbLs, verbRead, verbGrep:
		return ProfileRead, true
	case verbWrite, verbDelete:
		return ProfileWrite, true
	case verbEdit:
		return ProfileEdit, true
	}
	return announce.EffectProfile{}, false
}

// DefaultTimeout is the park budget the host announces for the six tools unless the catalog
// says otherwise: a store call is milliseconds, and thirty seconds covers a slow disk or a
// database failover without holding a dead call long.
const DefaultTimeout = 30 * time.Second

// KernelAnnouncement is the announcement of an executor that serves the whole family: the six
// wire names with the kernel's own profiles and the given timeout, and no description or schema
// (these tools are declared from the kernel catalog, never imported). A memory plugin makes it
// by default, and the host replaces whatever a memory plugin announced with it, so a plugin
// cannot misstate its effects.
func KernelAnnouncement(timeout time.Duration) announce.Announcement {
	ms := timeout.Milliseconds()
	var a announce.Announcement
	for _, name := range Tools() {
		p, _ := Profile(name)
		t := ms
		a.Tools = append(a.Tools, announce.Tool{Name: name, EffectProfile: announce.Announced(p), TimeoutMS: &t})
	}
	return a
}
