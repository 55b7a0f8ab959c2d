// Package memorypostgres is the PostgreSQL memory store (docs/plugins.md): a memory.Provider
// over sqlx and lib/pq that keeps documents in its own schema (default nexus_memory), applies
// its embedded migrations under an advisory lock, serializes mutations of an anchor on the
// anchor's row (which also holds the document count for the cap), and greps in Go with the SDK's
// matcher, never with PostgreSQL's regular expressions, so that every store agrees.
//
// It stores only: every input rule a model can break and every result text belong to
// sdk/memory's Engine. It shares nothing with the kernel's own store, imports nothing from the
// project beyond the SDK, and is a library; the plugin binary that serves it lives in cmd/.
package memorypostgres
