package runs

import (
	"github.com/nexuskernel/nexus/core/approval"
	"github.com/nexuskernel/nexus/core/envelope"
	"github.com/nexuskernel/nexus/core/identity"
	"github.com/nexuskernel/nexus/core/model"
	"github.com/nexuskernel/nexus/core/refusal"
	"github.com/nexuskernel/nexus/core/steps"
	"github.com/nexuskernel/nexus/core/uploads"
	memsdk "github.com/nexuskernel/nexus/sdk/memory"
)

// Task kinds (docs/api.md#runs).
const (
	KindModel      = "model_task"
	KindTool       = "tool_task"
	KindAwait      = "await_task"
	KindDelegation = "delegation_task"
)

// Task statuses (docs/api.md#runs).
const (
	StatusWaiting       = "waiting"
	StatusNeedsApproval = "needs_approval"
	StatusRunning       = "running"
	StatusDispatched    = "dispatched"
	StatusAwaitingInput = "awaiting_input"
	StatusCompleted     = "completed"
	StatusFailed        = "failed"
	StatusCanceled      = "canceled"
	StatusTimedOut      = "timed_out"
	StatusUncertain     = "uncertain"
	StatusSkipped       = "skipped"
)

// TaskStatuses lists every status in the order task_progress serves them.
func TaskStatuses() []string {
	return []string{StatusWaiting, StatusNeedsApproval, StatusRunning, StatusDispatched,
		StatusAwaitingInput, StatusCompleted, StatusFailed, StatusCanceled, StatusTimedOut, StatusUncertain, StatusSkipped}
}

// Terminal reports whether a task status is settled.
func Terminal(status string) bool {
	switch status {
	case StatusCompleted, StatusFailed, StatusCanceled, StatusTimedOut, StatusUncertain, StatusSkipped:
		return true
	}
	return false
}

// Run statuses (docs/api.md#runs).
const (
	RunPending        = "pending"
	RunRunning        = "running"
	RunNeedsAttention = "needs_attention"
	RunCanceling      = "canceling"
	RunCompleted      = "completed"
	RunCanceled       = "canceled"
)

// Origins, failure policies, lifetimes, wakes and visibilities (docs/api.md#runs).
const (
	OriginModel  = approval.OriginModel
	OriginAuthor = approval.OriginAuthor
	OriginKernel = approval.OriginKernel

	OnFailureHalt      = steps.OnFailureHalt
	OnFailurePropagate = steps.OnFailurePropagate
	OnFailureAbsorb    = steps.OnFailureAbsorb

	LifetimeTurn         = "turn"
	LifetimeConversation = "conversation"
	WakeAuto             = "auto"
	WakePassive          = "passive"

	VisibilityVisible   = steps.VisibilityVisible
	VisibilityCollapsed = steps.VisibilityCollapsed
	VisibilityHidden    = steps.VisibilityHidden
)

// Task error keys (docs/api.md#task-error-keys).
const (
	KeyUnknownTool            = "unknown_tool"
	KeyInvalidToolArguments   = "invalid_tool_arguments"
	KeyTruncatedToolArguments = "truncated_tool_arguments"
	KeyToolInputTooLarge      = steps.CodeToolInputTooLarge
	KeyInvalidToolInput       = steps.CodeInvalidToolInput
	KeyToolNotServed          = refusal.CodeToolNotServed
	// KeyToolDefinitionChanged: a pinned import's claimant announces the tool with another
	// definition than the pinned one (docs/agent-tools.md#pinned-imports).
	KeyToolDefinitionChanged  = "tool_definition_changed"
	KeyToolFailed             = "tool_failed"
	KeyExecutorRevoked        = identity.CodeExecutorRevoked
	KeyResultUnstorable       = envelope.CodeResultUnstorable
	KeyToolTimeout            = "tool_timeout"
	KeyToolUncertain          = "tool_uncertain"
	KeyAwaitTimeout           = "await_timeout"
	KeyApprovalExpired        = "approval_expired"
	KeyApprovalDenied         = "approval_denied"
	KeyAwaitFailed            = "await_failed"
	KeyRunCanceled            = "run_canceled"
	KeyTaskCanceled           = "task_canceled"
	KeyRoundExpansionRefused  = "round_expansion_refused"
	KeyAttemptBudgetSpent     = "attempt_budget_spent"
	KeyProviderError          = model.KeyProviderError
	KeyPredecessorFailed      = "predecessor_failed"
	KeyMemoryScopeUnavailable = memsdk.CodeScopeUnavailable
	KeyMemoryReadOnly         = memsdk.CodeReadOnly
)

// Approval modes, verdicts and approval origins (docs/agent-tools.md#the-approval-gate).
const (
	ModeBypass = approval.ModeBypass
	ModeAsk    = approval.ModeAsk
	ModeRules  = approval.ModeRules

	// The verdicts of a rule (core/approval owns the rule grammar).
	VerdictAllow = approval.VerdictAllow
	VerdictAsk   = approval.VerdictAsk
	VerdictDeny  = approval.VerdictDeny

	ApprovalOriginMode   = approval.ApprovedByMode
	ApprovalOriginRule   = approval.ApprovedByRule
	ApprovalOriginAuthor = approval.ApprovedByAuthor
	ApprovalOriginKernel = approval.ApprovedByKernel
	ApprovalOriginHuman  = "human"
	ApprovalOriginAgent  = "agent"
)

// Attention reasons, in the order they are served (docs/api.md#runs).
const (
	ReasonHaltFailure           = "halt_failure"
	ReasonDeliverableUnresolved = "deliverable_unresolved"
	ReasonApprovalRequired      = "approval_required"
	ReasonAwaitingHuman         = "awaiting_human"
)

// Refusal words of the engine's operations (docs/api.md#runs); the step grammar's are
// core/steps'.
const (
	CodeAlreadyTerminal            = "already_terminal"
	CodeNotABranch                 = "not_a_branch"
	CodeToolNotServed              = refusal.CodeToolNotServed
	CodeUnknownInputUpload         = uploads.CodeUnknownInputUpload
	CodeToolNotDeclared            = refusal.CodeToolNotDeclared
	CodeUnknownModel               = model.CodeUnknownModel
	CodeModelCapabilityUnavailable = model.CodeModelCapabilityUnavailable
)

// Conversation statuses (docs/api.md#conversations) and turn statuses (docs/api.md#conversations).
const (
	ConversationActive   = "active"
	ConversationArchived = "archived"

	TurnQueued    = "queued"
	TurnRunning   = "running"
	TurnCompleted = "completed"
	TurnFailed    = "failed"
	TurnCanceled  = "canceled"
)
