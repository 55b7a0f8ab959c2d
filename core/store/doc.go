// Package store owns persistence: the two SQL dialects (SQLite, the embedded default, and
// PostgreSQL, the production store), their embedded migrations, and the repositories that read and
// write rows. It knows nothing of HTTP and holds no business rule beyond what a constraint
// enforces: services in the other core packages decide, the store records.
//
// Every query is written once with `?` placeholders and rebound for PostgreSQL. Timestamps are
// stored as integer Unix milliseconds in both dialects, which keeps one query text per statement
// and gives the millisecond precision the API serves. Internal row ids never leave the server;
// public ids are UUIDv7 strings minted in Go.
//
// Both dialects' connections keep the statements they run prepared, by text (stmtcache.go): a
// statement is parsed once per connection and then costs one round trip per execution. Signals
// about committed changes go out through PostgreSQL NOTIFY, inside a transaction (Notify) or
// queued after it (NotifyLater, which batches and never makes its caller wait). An instance
// listens on all its channels through one connection, shared by its subscriptions: PostgreSQL
// wakes every listening backend of the database on each NOTIFY, whatever its channel, so each
// further listening connection would cost the server CPU on every notification.
//
// A planned write (plan.go, Store.Plan) is a transaction sent as one autocommit statement on
// PostgreSQL: the caller's code runs against a Tx that sends plain reads on their own, records a
// new run and its rows with the updates made to them and the notifications to send, and collects
// guards (facts taken from a cache, such as RunnerServing's served-tools entries) that the
// statement checks before it writes. What a plan cannot hold (any other write, a locking read)
// makes it answer ErrPlanUnsupported, and a failed guard ErrPlanStale, both before anything is
// written; the caller then runs the same code as a transaction. A store has one planned statement
// in flight at a time: plans sent meanwhile queue and go out together in the next one, each as
// a chain of its own with its own guards (planGroup), so that concurrent writes share the cost
// of a statement and its commit.
package store
