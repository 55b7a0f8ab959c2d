package registry

import "github.com/nexuskernel/nexus/sdk/announce"

// EffectName names one of the registry's effect-profile constants.
type EffectName string

const (
	// ReadOnlyClosed: reads kernel state and changes nothing.
	ReadOnlyClosed EffectName = "READ_ONLY_CLOSED"
	// GraphWrite: places or settles work in the task graph, keyed on the call so a second
	// evaluation reuses what the first created.
	GraphWrite EffectName = "GRAPH_WRITE"
	// MemoryRead equals ReadOnlyClosed; the separate name keeps the memory family readable.
	MemoryRead EffectName = "MEMORY_READ"
	// MemoryWrite: overwrites or deletes a memory document; repeating it lands the same state.
	MemoryWrite EffectName = "MEMORY_WRITE"
	// MemoryEdit: the one kernel tool that is not replayable, because a repeated edit finds
	// its old text already replaced.
	MemoryEdit EffectName = "MEMORY_EDIT"
)

// EffectNames lists the constants in the order the effect profile lists its fields.
func EffectNames() []EffectName {
	return []EffectName{ReadOnlyClosed, GraphWrite, MemoryRead, MemoryWrite, MemoryEdit}
}

// Profile returns the effect profile the name stands for; ok is false for an unknown name.
func (n EffectName) Profile() (p announce.EffectProfile, ok bool) {
	switch n {
	case ReadOnlyClosed, MemoryRead:
		return announce.EffectProfile{Kind: announce.KindReadOnly, Destructive: false, EffectScope: announce.ScopeClosed, Idempotency: announce.IdempotencyIntrinsic, Reconciliation: announce.ReconciliationNone}, true
	case GraphWrite:
		return announce.EffectProfile{Kind: announce.KindWrite, Destructive: false, EffectScope: announce.ScopeClosed, Idempotency: announce.IdempotencyIntrinsic, Reconciliation: announce.ReconciliationLookup}, true
	case MemoryWrite:
		return announce.EffectProfile{Kind: announce.KindWrite, Destructive: true, EffectScope: announce.ScopeClosed, Idempotency: announce.IdempotencyIntrinsic, Reconciliation: announce.ReconciliationLookup}, true
	case MemoryEdit:
		return announce.EffectProfile{Kind: announce.KindWrite, Destructive: true, EffectScope: announce.ScopeClosed, Idempotency: announce.IdempotencyNone, Reconciliation: announce.ReconciliationLookup}, true
	}
	return announce.EffectProfile{}, false
}

// effects gives each kernel tool its profile constant, in catalog order. It is keyed by the
// canonical name so that New can check it row by row against sdk/announce's name table.
var effects = [...]struct {
	canonical string
	effect    EffectName
}{
	{"nexus.graph.delegate_task", GraphWrite},
	{"nexus.graph.wait", GraphWrite},
	{"nexus.human.ask", GraphWrite},
	{"nexus.conversation.spawn", GraphWrite},
	{"nexus.conversation.send", GraphWrite},
	{"nexus.conversation.status", ReadOnlyClosed},
	{"nexus.conversation.cancel", GraphWrite},
	{"nexus.conversation.read", ReadOnlyClosed},
	{"nexus.conversation.search", ReadOnlyClosed},
	{"nexus.memory.ls", MemoryRead},
	{"nexus.memory.read", MemoryRead},
	{"nexus.memory.grep", MemoryRead},
	{"nexus.memory.write", MemoryWrite},
	{"nexus.memory.edit", MemoryEdit},
	{"nexus.memory.delete", MemoryWrite},
	{"nexus.tools.search", ReadOnlyClosed},
	{"nexus.tools.call", GraphWrite},
	{"nexus.runners.list", ReadOnlyClosed},
	{"nexus.models.list", ReadOnlyClosed},
	{"nexus.skill.load", ReadOnlyClosed},
}
