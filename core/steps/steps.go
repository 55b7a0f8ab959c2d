package steps

import (
	"github.com/nexuskernel/nexus/core/approval"
	"github.com/nexuskernel/nexus/sdk/jsonwire"
)

// Run is a run to create (docs/api.md#runs): its steps, its approval settings, its default Runner
// and whether it starts at once. An in-process caller fills it with Go values; the create door
// decodes a body's "run" into it (UnmarshalJSON). Check judges what the grammar judges alone;
// the engine judges the rest (the default Runner's standing, then the steps, Judge) when it
// accepts the run.
type Run struct {
	// Steps are the run's steps in written order: 1 to MaxSteps. nil is no steps at all (the body
	// carried none), which Check refuses before anything else of the steps.
	Steps []Step
	// ApprovalMode is bypass, ask or rules (core/approval).
	ApprovalMode string
	// ApprovalRules are the rules of mode rules; nil is none.
	ApprovalRules []approval.Rule
	// DefaultRunnerExecutorPublicID is the Runner tool steps and Runner imports use; "" for none.
	DefaultRunnerExecutorPublicID string
	// PromptMechanism is "" or raw, the only one.
	PromptMechanism string
	// Start says whether the run starts at once; nil is true. A run that does not start stays
	// pending until its start door.
	Start *bool

	w runWritten
}

// Step is one step: exactly one of Model and Tool.
type Step struct {
	Model *Model
	Tool  *Tool

	w stepWritten
}

// Model is a model step (docs/api.md#runs, "A model step").
type Model struct {
	// Key names the step's row; "" lets the kernel name it s<revision>-model-<n>.
	Key string
	// OnFailure is halt (the default when ""), propagate or absorb.
	OnFailure string
	// Visibility is visible (the default when ""), collapsed or hidden.
	Visibility string
	// Model is a provider/model reference of the models catalog; "" is the deployment's default.
	Model string
	// Prompt is the user text; it may be empty only with Attachments.
	Prompt string
	// Instructions are the system text; nil for none.
	Instructions *string
	// Declaration is the tools the step declares (core/declare judges them).
	Declaration
	// Attachments are up to MaxAttachments upload ids the caller created.
	Attachments []string
	// Results are earlier keys whose results the step reads: nil reads the step before it, an
	// empty list reads none.
	Results []string

	w written
}

// Tool is a tool step (docs/api.md#runs, "A tool step"): one tool of an executor, with origin
// author.
type Tool struct {
	// Key names the step's row; "" lets the kernel name it s<revision>-tool-<n>.
	Key string
	// OnFailure is propagate (the default when ""), halt or absorb.
	OnFailure string
	// Visibility is collapsed (the default when ""), visible or hidden.
	Visibility string
	// Name is the served name: at most MaxToolNameLen characters, never a kernel tool's.
	Name string
	// Input is the tool's input object; nil is {}. Its canonical JSON is at most
	// MaxToolInputBytes.
	Input map[string]any
	// Route names the Runner that serves the tool; nil leaves it to the workspace's tool
	// providers.
	Route *Route
	// TimeoutMS is the row's clock, 1 to MaxTimeout in milliseconds; 0 is the default.
	TimeoutMS int64
	// ModelDefaults is the model context child model operations of the tool inherit; nil for
	// none.
	ModelDefaults *ModelDefaults

	w written
}

// Route is a tool step's route: the Runner that serves the step's tool.
type Route struct {
	// Kind is runner, the only kind.
	Kind string
	// RunnerExecutorPublicID is the Runner; "" is the run's default Runner.
	RunnerExecutorPublicID string
	// ToolName may repeat the step's name, as a declaration's route names the served tool; ""
	// leaves it out.
	ToolName string

	w written
}

// ModelDefaults is a tool step's model context (docs/api.md#runs, model_defaults): a model step's
// model, instructions and declaration, each with the model step's rules.
type ModelDefaults struct {
	// Model is a provider/model reference; "" names none.
	Model string
	// Instructions are the system text; nil for none.
	Instructions *string
	Declaration

	w written
}

// Declaration is a step's declared tools (docs/agent-tools.md#declaring-tools), which core/declare
// judges: the explicit list and the import fields.
type Declaration struct {
	// Tools is the explicit list, each entry a value of the declaration grammar; nil declares
	// none, and an empty non-nil list is refused (leave the field out instead).
	Tools []jsonwire.Value
	// KernelTools imports kernel tools by canonical name.
	KernelTools []string
	// RunnerExecutorPublicIDs are the Runner candidates.
	RunnerExecutorPublicIDs []string
	// RunnerToolNames narrows a Runner import: nil imports every model-facing tool of the
	// selected Runner, an empty non-nil list none.
	RunnerToolNames []string
	// ToolProviderTools imports the workspace's tool providers' tools by exact name or
	// trailing-"*" pattern; nil imports none.
	ToolProviderTools []string
	// EagerToolNames are imported callables offered eagerly.
	EagerToolNames []string

	w declWritten
}
