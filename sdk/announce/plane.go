package announce

// The executor plane's words that the server writes and the SDK's client and runner read
// (docs/api.md#the-executor-plane). They are defined here, beside the announcement an executor
// makes, because announce is the SDK package that both the server's executor plane and the
// client may import (docs/development.md#each-word-once).
const (
	// EventWorkAvailable and EventWorkCanceled are the stream's event names.
	EventWorkAvailable = "work_available"
	EventWorkCanceled  = "work_canceled"
	// RowKindToolCall is the only row kind this version pushes and lists; clients skip others.
	RowKindToolCall = "tool_call"
	// CodeTaskNotClaimable and CodeAlreadyClaimed refuse a claim of a row that is no longer
	// claimable or that another claim holds: what a runner hears when another was first.
	CodeTaskNotClaimable = "task_not_claimable"
	CodeAlreadyClaimed   = "already_claimed"
)
