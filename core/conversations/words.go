package conversations

import (
	"bytes"
	"encoding/json"

	"github.com/nexuskernel/nexus/core/approval"
	"github.com/nexuskernel/nexus/core/refusal"
)

// Refusal words of the doors (docs/api.md#conversations, docs/api.md#runs) that only a door
// speaks; the words the engine's operations answer with are core/runs'.
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
	CodeEdgeAuthoringRefused        = "edge_authoring_refused"
	CodeInvalidApprovalMode         = "invalid_approval_mode"
	CodeInvalidPromptMechanism      = "invalid_prompt_mechanism"
	CodeInvalidApprovalRules        = "invalid_approval_rules"
)

// ParseRules validates an approval rule list (docs/agent-tools.md#the-approval-gate) and returns it
// with its stored form. A refusal is 422 invalid_approval_rules with path under prefix (e.g.
// "run.approval_rules"). Absent (nil raw or JSON null) is the empty list.
func ParseRules(raw json.RawMessage, prefix string) ([]approval.Rule, []byte, error) {
	if len(raw) == 0 || bytes.Equal(bytes.TrimSpace(raw), []byte("null")) {
		return nil, []byte("[]"), nil
	}
	rules, p := approval.Parse(raw)
	if p != nil {
		path := prefix + p.Suffix
		return nil, nil, refusal.Newf(refusal.Unprocessable, CodeInvalidApprovalRules, "%s: %s.", path, p.Detail).With("path", path)
	}
	stored, err := json.Marshal(rules)
	if err != nil {
		return nil, nil, err
	}
	return rules, stored, nil
}
