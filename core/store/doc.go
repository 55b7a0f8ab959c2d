// Package store owns persistence: the two SQL dialects (SQLite, the embedded default, and
// PostgreSQL, the production store), their embedded migrations, and the repositories that read and
// write rows. It knows nothing of HTTP and holds no business rule beyond what a constraint
// enforces: services in the other core packages decide, the store records.
//
// Every query is written once with `?` placeholders and rebound for PostgreSQL. Timestamps are
// stored as integer Unix milliseconds in both dialects, which keeps one query text per statement
// and gives the millisecond precision the API serves. Internal row ids never leave the server;
// public ids are UUIDv7 strings minted in Go. A public id or a task key that comes from outside
// (a path, a body, a tool's argument) reaches a statement only as an ID or a Key (ids.go), whose
// driver value refuses a malformed one before anything is sent, and a lookup answers it
// ErrNotFound. The statements that read the kernel's queue name their plan on SQLite, through
// the partial index tasks_runnable (Runnable.from), since a database that never ran ANALYZE has
// no statistics to find it by.
//
// Both dialects' connections keep the statements they run prepared, by text (stmtcache.go): a
// statement is parsed once per connection and then costs one round trip per execution. Signals
// about committed changes go out through PostgreSQL NOTIFY, inside a transaction (Notify) or
// queued after it (NotifyLater, which batches and never makes its caller wait). An instance
// listens on all its channels through one connection, shared by its subscriptions: PostgreSQL
// wakes every listening backend of the database on each NOTIFY, whatever its channel, so each
// further listening connection would cost the server CPU on every notification.
//
// A hot path that needs one round trip has one named statement of its own (CreateRun): its
// guards, the caller's standing among them, are fields of a Go struct and conditions of the
// statement, and a guard that fails writes nothing (ErrGuardFailed) so that the caller runs its
// ordinary transaction. No code here reads SQL text, replays a caller's code or takes a fact
// from a cache.
//
// Every state change of a task or a run is a named statement too (transitions.go, runs.go,
// docs/development.md#how-a-door-reaches-the-store): Dispatch, Hold, Fail, Settle, SettleRound,
// AwaitChild, Release, ReleaseClaim, Extend, Deliver, Repoint and Seal for a task, StartRun, ReviseRun,
// RequestStop, MoveRun, CompleteRun and PlantRound for a run, each a struct of the values it writes
// and the guards it checks (the status, the claim as a Fence, the executor a row parks for), one
// statement each. A guard that no longer holds writes nothing and answers false. No caller names a
// column; the claims take the rows a Runnable of this package names. SQL text lives here alone
// (internal/archtest holds the rest of core to it).
//
// A task row is read as its trace (TaskTrace: what readiness and the run read need) or whole
// (Task, which embeds its trace), never half-filled. The JSON-valued columns the engine reads are
// Go types on the row (columns.go), encoded as they are bound and decoded once as the row is
// scanned; a stored value that does not decode fails the read.
//
// A SQLite database serves one process at a time: the server and nexus migrate hold a flock on
// the file beside it (HoldSQLite, docs/operations.md#stores).
package store
