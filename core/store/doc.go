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
// the partial index tasks_runnable (runnableFrom), since a database that never ran ANALYZE has
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
// A SQLite database serves one process at a time: the server and nexus migrate hold a flock on
// the file beside it (HoldSQLite, docs/operations.md#stores).
package store
