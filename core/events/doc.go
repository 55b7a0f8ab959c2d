// Package events is the engine's typed event feed: facts announced once, after the transaction
// that made them true commits, and fanned out to this process's subscribers
// (docs/development.md#the-event-feed). An event is a Go type of this package (the executors'
// WorkAvailable and WorkCanceled; the members' RunStatus, TaskSettled and the others of
// member.go), never a string a subscriber parses.
//
// Publishing never waits for a subscriber: each subscription holds at most SubscriberBuffer
// events between two takes, and one that falls that far behind drops what follows and is told
// so (Take's lost), which its reader answers by reading the store, where the authority is. An
// event is a hint that something committed, never the authority for acting on it: whoever acts
// re-reads and locks in its own transaction. The bus numbers member events and keeps the last
// Window of them for member streams that resume (docs/api.md#events).
//
// The package holds no business rule and imports nothing of the module but the executor
// plane's words (sdk/announce). A Relay encodes member events for the other instances and
// publishes theirs here; the notification channel that carries them is the store's, which the
// server wires to it.
package events
