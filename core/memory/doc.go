// Package memory is the kernel's built-in memory: Store, the memory.Provider of sdk/memory over
// the kernel's own database (one anchor row locked per mutation, documents keyed by anchor and
// name); the frozen memory context a run stores and the Resolver that turns it into live
// bindings on every call; skill documents (the member-door write rules, the kernel skill catalog
// frozen at acceptance, and the loader the skill tool reads through); and Doors, the member
// doors' semantics with their conditional writes and refusal words, acting where the workspace's
// memory calls go: this store, or the memory plugin its override names, reached through the
// Backings the server fills (docs/api.md#memory). Skill documents stay in this store.
//
// It must not decide what a memory tool answers (sdk/memory's Engine owns every tool text and
// word), know HTTP (core/httpapi maps its refusals to statuses), or reach into runs and tasks:
// the run engine hands it the run's facts and, through ConversationStates, the live state of
// the run's conversation.
package memory
