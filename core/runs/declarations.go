package runs

import (
	"context"
	"encoding/json"

	"github.com/nexuskernel/nexus/core/declare"
	"github.com/nexuskernel/nexus/core/projection"
	"github.com/nexuskernel/nexus/core/store"
)

// Declarations is the declaration compiler and the provider projection as the engine reads
// them: acceptance freezes a model step's declaration; Open reads a round's frozen set back for
// the pairing law (is the called name a callable, what does a call under an alias become) and
// for sealing (the schemas offered, the skills block). core/declare and core/projection own
// every rule; the engine never re-implements one.
type Declarations interface {
	// AcceptStep freezes the declaration of an authored model step (or a tool step's
	// model_defaults). A refusal is a *refusal.Error carrying the declaration word and a path
	// under in.Path.
	AcceptStep(ctx context.Context, q store.Querier, in *StepDeclaration) (*FrozenDeclaration, error)
	// Open reads a round's frozen tool_definitions and skill catalog.
	Open(toolDefinitions, skillCatalog []byte) (Toolset, error)
	// KernelName reports whether name is a registered kernel tool in either spelling, and its
	// wire name: the append door and tool steps refuse it with reserved_tool_name.
	KernelName(name string) (wire string, ok bool)
}

// StepDeclaration is what an authored model step declares.
type StepDeclaration struct {
	WorkspaceID int64
	// Tools, KernelTools, RunnerExecutorPublicIDs and RunnerToolNames are the step's raw
	// fields; nil when absent.
	Tools                   json.RawMessage
	KernelTools             json.RawMessage
	RunnerExecutorPublicIDs json.RawMessage
	RunnerToolNames         json.RawMessage
	// Selection is the run's default Runner, "" for none.
	Selection string
	// Path is the step's path, e.g. "steps[1].model".
	Path string
	// ToolNames narrows the frozen set (a conversation turn's tool_names); nil keeps all.
	ToolNames []string
	// NarrowPath, when set, answers refusals as a narrowing door under this prefix
	// ("message."), as a turn's acceptance does, instead of the run door at Path.
	NarrowPath string
	// Skills are the facts a kernel skill callable's catalog is read against; nil reads none.
	Skills *SkillFacts
}

// FrozenDeclaration is what acceptance stores on the work (docs/agent-tools.md#declaring-tools).
type FrozenDeclaration struct {
	ToolDefinitions []byte
	Environment     []byte
	SkillCatalog    []byte
	// HasTools is false for an empty set (the model's tools capability is then not needed).
	HasTools bool
}

// Offer is what a round offers a provider: request_options.tools and, in native deferral,
// request_options.tool_search's variant.
type Offer struct {
	Tools      []json.RawMessage
	ToolSearch string
}

// Toolset is one round's frozen declaration.
type Toolset interface {
	// ResolveCall resolves a call by name (alias lookup included). Declared is false when the
	// name is no callable of the set. input is a JSON object.
	ResolveCall(name string, input json.RawMessage) (CallResolution, error)
	// Offered is request_options.tools for a provider: the projected schemas, in order, and the
	// variant of the provider's own tool search when native deferral applies.
	Offered(target projection.Target) Offer
	// SkillsBlock is the skills block text, "" when none is rendered.
	SkillsBlock() string
	// FrozenSkill finds a skill of the frozen skill catalog under a callable.
	FrozenSkill(callable, name string) (declare.SkillEntry, bool)
}

// CallResolution is what a model's call becomes on its task row
// (docs/development.md#how-the-kernel-runs-work).
type CallResolution struct {
	Declared bool
	// ToolName is the row's tool_name: the kernel wire name for a kernel tool (alias or not),
	// the served name for a routed tool, else the called name.
	ToolName string
	// Canonical is the kernel tool the call runs, "" when not a kernel tool.
	Canonical string
	Input     json.RawMessage
	// Alias is tool_alias: the alias called, or a routed callable differing from its served name.
	Alias string
	// Route is set for a Runner-routed callable.
	Route *Route
}

// Route is a declared Runner route, as a tool row stores it.
type Route = store.Route
