// Package executors owns the executor plane's work-facing side (executor.md): so far its push
// hub, which holds the executors' event streams on this instance, fans work_available and
// work_canceled out to them and to every other instance through PostgreSQL NOTIFY, closes an
// executor's streams when it is revoked, and records the stream presence (connected_at) that
// member discovery shows. Events are hints: the hub queues nothing for a disconnected executor
// and replays nothing, because the inbox stays authoritative.
//
// It must not know HTTP: core/httpapi writes the Server-Sent Events frames from the streams
// this package hands out. It never settles a task: the run engine decides what changed and
// calls Publish once its transaction committed.
package executors
