package steps

import (
	"time"

	"github.com/nexuskernel/nexus/core/declare"
	"github.com/nexuskernel/nexus/core/model"
	"github.com/nexuskernel/nexus/core/refusal"
)

// The step verbs (docs/api.md#runs): the two a step may name, and the three the grammar
// reserves for a later version.
const (
	VerbModel    = "model"
	VerbTool     = "tool"
	verbAsk      = "ask"
	verbWait     = "wait"
	verbParallel = "parallel"
)

// Failure policies and visibilities of a step (docs/api.md#runs); a task row carries them as
// written.
const (
	OnFailureHalt      = "halt"
	OnFailurePropagate = "propagate"
	OnFailureAbsorb    = "absorb"

	VisibilityVisible   = "visible"
	VisibilityCollapsed = "collapsed"
	VisibilityHidden    = "hidden"
)

// RouteRunner is the one kind of a tool step's route: a Runner serves it.
const RouteRunner = "runner"

// PromptRaw is the one prompt mechanism (docs/api.md#runs).
const PromptRaw = "raw"

// Refusal words of the run and step grammar (docs/api.md#runs). A word another package owns is
// named by its constant.
const (
	CodeEdgeAuthoringRefused   = "edge_authoring_refused"
	CodeInvalidApprovalMode    = "invalid_approval_mode"
	CodeInvalidApprovalRules   = "invalid_approval_rules"
	CodeInvalidPromptMechanism = "invalid_prompt_mechanism"

	CodeUnknownStepVerb     = "unknown_step_verb"
	CodeStepVerbUnavailable = "step_verb_unavailable"
	CodeUnknownStepOption   = "unknown_step_option"
	CodeReservedTaskKey     = "reserved_task_key"
	CodeDuplicateTaskKey    = "duplicate_task_key"
	CodeInvalidOnFailure    = "invalid_on_failure"
	CodeInvalidVisibility   = "invalid_visibility"
	CodePromptRequired      = "prompt_required"
	CodeInvalidAttachments  = "invalid_attachments"
	CodeUnknownResultKey    = "unknown_result_key"
	CodeReservedToolName    = refusal.CodeReservedToolName
	CodeInvalidToolInput    = "invalid_tool_input"
	CodeToolInputTooLarge   = "tool_input_too_large"
	CodeInvalidTimeoutMS    = "invalid_timeout_ms"
	CodeInvalidToolCallID   = "invalid_tool_call_id"

	CodeInvalidTools         = declare.WordInvalidTools
	CodeInvalidToolRoute     = declare.WordInvalidToolRoute
	CodeRunnerTargetRequired = declare.WordRunnerTargetRequired
	CodeRunnerNotEligible    = refusal.CodeRunnerNotEligible
	CodeUnknownModel         = model.CodeUnknownModel
)

// Limits of docs/api.md#limits that the grammar holds a step to. Each is a contract number; the
// comment says why it has that value.
const (
	// MaxSteps bounds one create or append envelope: enough for any hand-written plan, small
	// enough that one envelope's acceptance is one short transaction.
	MaxSteps = 64
	// MaxToolNameLen bounds a tool step's name and a model's called name: providers themselves
	// cap names at 64-128 characters, and a longer one is garbage, not a tool.
	MaxToolNameLen = 128
	// MaxToolInputBytes bounds a tool step's input and a call's arguments (canonical JSON): the
	// same 64 KiB a memory document or a metadata object may hold, far above any real tool input.
	MaxToolInputBytes = 65536
	// MaxAttachments bounds a message's or a step's input uploads.
	MaxAttachments = 32
	// MaxTimeout is the authored maximum of timeout_ms: a week covers any human-paced runner.
	MaxTimeout = 7 * 24 * time.Hour
)
