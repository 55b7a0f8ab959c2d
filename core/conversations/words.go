package conversations

// Refusal words of the doors (docs/api.md#conversations, docs/api.md#runs) that only a door
// speaks; the words the engine's operations answer with are core/runs', the run and step grammar's
// core/steps'.
const (
	CodeConversationArchived        = "conversation_archived"
	CodeConversationBusy            = "conversation_busy"
	CodeInputQueueFull              = "input_queue_full"
	CodeConversationHosted          = "conversation_hosted"
	CodeNotStartable                = "not_startable"
	CodeRunNotAppendable            = "run_not_appendable"
	CodeStaleRevision               = "stale_revision"
	CodeIdempotencyEnvelopeMismatch = "idempotency_envelope_mismatch"
	CodeAwaitNotResolvable          = "await_not_resolvable"
	CodeNotAdjudicable              = "not_adjudicable"
	CodeNotAwaitingApproval         = "not_awaiting_approval"
	CodeRequestNotSealed            = "request_not_sealed"
)
