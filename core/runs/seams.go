package runs

import (
	"context"
	"encoding/json"

	"github.com/nexuskernel/nexus/core/envelope"
	"github.com/nexuskernel/nexus/core/store"
	"github.com/nexuskernel/nexus/sdk/announce"
)

// KernelTools runs kernel tool calls in-process. core/kernel implements it (one handler per
// family behind a dispatch table) and core/server wires it in; the engine defines the interface
// so that it never imports the code that does the work (core/kernel imports core/runs to read
// conversations and, later, to place child rows).
//
// One method serves every tool. A tool that settles its call directly returns its result; the
// tools that place rows (delegate_task, wait, ask, spawn, tool_call) return a Placement in their
// outcome, which the engine writes in the settling transaction while the call row stays running
// with awaiting_child set, and settles the call in the transaction that settles the child
// (docs/agent-tools.md#delegation-and-conversations; placement.go).
type KernelTools interface {
	Run(ctx context.Context, call *KernelCall) (*KernelOutcome, error)
	ToolTexts
}

// ToolTexts words the results the engine settles itself on a kernel tool's behalf, when no
// handler runs to end the call: a wait whose clock ran out, that was canceled or whose target was
// collected, a waited spawn whose waiting ended before the reply, a waited delegate_task's model
// line (docs/agent-tools.md#delegation-and-conversations). core/kernel owns these texts, and the
// argument words they read, beside the tools that speak them.
type ToolTexts interface {
	WaitTimedOut(task string, timeoutMS int64) string
	WaitCanceled(task string) string
	// WaitTargetGone is the error result of a wait whose target was collected while observed.
	WaitTargetGone(task string) *KernelResult
	SpawnStillWorking(conversationPublicID, label, answeredBy string) string
	// DelegateModelLine is the "[model: …]" line of a waited delegate_task call whose stored
	// input is input (nil for none): "" when the call named no model. ranOn is the model the
	// branch's final round ran on, if it started.
	DelegateModelLine(input []byte, ranOn string, started bool) (string, error)
}

// KernelCall is one claimed kernel tool row, with the run facts a handler reads.
type KernelCall struct {
	RunID                int64
	RunPublicID          string
	WorkspaceID          int64
	WorkspacePublicID    string
	ConversationPublicID string // "" on a standalone run
	// MemoryPrincipal is the run's memory principal (docs/agent-tools.md#memory-and-skills): {kind,
	// public_id}.
	MemoryPrincipal Member
	// MemoryContext is the run's frozen memory configuration, as stored
	// (docs/agent-tools.md#memory-and-skills).
	MemoryContext json.RawMessage
	TaskKey       string
	// ToolName is the kernel wire name; Canonical its canonical name.
	ToolName  string
	Canonical string
	// ToolAlias is the row's tool_alias: the callable the model used when it is not the wire
	// name (a profile alias, or a Runner skill callable answered in the kernel); "" otherwise.
	ToolAlias string
	// Input is the row's tool_input (a JSON object, after alias mapping).
	Input json.RawMessage
	// Attempt is the claim generation: 2 or more means the row was claimed before (a replay).
	Attempt int64
	// Tx is the transaction that will settle the row, under the run's lock: a handler whose effects
	// are rows of this database (kernel memory, placed children) writes them here, so that its effect
	// and the row's result commit together or not at all (docs/agent-tools.md#memory-and-skills).
	Tx *store.Tx
	// Round reads the calling round (the row's declaring_task_key): the frozen declaration,
	// skill catalog and environment the call runs against. It is read on first use only, so a
	// tool that never needs it pays nothing; nil on a row no model round declared.
	Round func(ctx context.Context) (*CallingRound, error)
	// Engine is the engine transaction that will settle the row, whose store transaction is Tx,
	// under the calling run's lock: the conversation tools (spawn, send, status, cancel) place
	// their rows through it. nil outside the engine.
	Engine *Tx
}

// CallingRound is the frozen context of the model round that made a kernel call: what acceptance
// froze onto it and every continuation copies unchanged (docs/agent-tools.md#declaring-tools).
type CallingRound struct {
	Key          string
	Model        string
	Instructions *string
	// ToolDefinitions, SkillCatalog and Environment are the stored JSON, as frozen.
	ToolDefinitions []byte
	SkillCatalog    []byte
	Environment     []byte
	Lifetime        string
	Wake            string
	Mainline        bool
	LineageRoot     string
}

// KernelOutcome is how a kernel call settles. Exactly one of Result, Failure and Place is set,
// except that a Placement that awaits nothing settles the call at once with Result.
type KernelOutcome struct {
	// Result settles the row completed with this envelope (docs/agent-tools.md#what-a-model-reads).
	Result *KernelResult
	// Failure settles the row failed with this error (the task failures
	// docs/agent-tools.md#what-a-model-reads assigns to the kernel: an overridden memory row refused
	// before dispatch, a tool the kernel has no handler for).
	Failure *TaskError
	// Place writes rows under the call and lets the call wait on one of them
	// (docs/agent-tools.md#delegation-and-conversations).
	Place *Placement
}

// KernelResult is a kernel tool's result envelope: plain string content, optional structured
// content, the error flag and the title.
type KernelResult struct {
	Content           string
	StructuredContent json.RawMessage
	IsError           bool
	Title             string
}

// TaskError is a task's error: {key, detail?}.
type TaskError struct {
	Key    string `json:"key"`
	Detail string `json:"detail,omitempty"`
}

func (e *TaskError) Error() string { return e.Key + ": " + e.Detail }

// Member is a principal reference: {kind, public_id}, as rows store it.
type Member = store.Member

// Conversations is the conversation side of the runs a conversation hosts
// (docs/api.md#conversations, docs/agent-tools.md#delegation-and-conversations): their turns and
// the requests the conversation tools write. core/conversations implements it (Hosted) and
// core/server fills it; the engine defines it so that it never imports the package built on it,
// and calls it where its own work reaches those rows, on the engine transaction x under the run's
// lock: a run's status change moves its turn (FollowTurn), a mainline that answered while only
// conversation-lifetime work runs completes its turn (AnswerTurn), a late conversation-lifetime
// result is delivered as kernel mail (PostDelivery), a reply row settles with its request's reply
// (Reply), and the sweeper makes its pass over conversations (Sweep).
type Conversations interface {
	// FollowTurn keeps the turn of run, a conversation-hosted run whose status just changed, in
	// step with it and, when the turn leaves running, starts the conversation's next queued turn.
	FollowTurn(ctx context.Context, x *Tx, run *store.Run, now int64) error
	// AnswerTurn completes run's running turn with the answer of d, its mainline's final round,
	// while conversation-lifetime detached work still runs, and moves the conversation on.
	AnswerTurn(ctx context.Context, x *Tx, run *store.Run, d *store.TaskTrace, now int64) error
	// PostDelivery posts text, the envelope of root's late result, as a kernel-authored turn
	// into c, which the engine has locked and found active, and answers the turn.
	PostDelivery(ctx context.Context, x *Tx, c *store.Conversation, text string, root *store.TaskTrace, now int64) (*store.Turn, error)
	// Reply reads the reply the request of call callKey (a row of run runID) has had, through q:
	// its envelope keyed by the call, and whether it has settled.
	Reply(ctx context.Context, q store.Querier, runID int64, callKey string) (*envelope.TaskResult, bool, error)
	// Sweep is the sweeper's pass over conversations, each change in a transaction of its own
	// through e: it reports how many runs and inputs it moved.
	Sweep(ctx context.Context, e *Engine) (int, error)
}

// ExecutorSignal tells the executor plane that rows addressed to executors changed after a
// commit: new work (push work_available, naming the served tool) or work taken away (push
// work_canceled with its reason). The engine computes the addressees inside the transaction
// (the addressed executor, the pool's current members, or the claimant); the executor plane's
// push hub implements it. A nil ExecutorSignal signals nobody.
type ExecutorSignal interface {
	WorkAvailable(runPublicID, taskKey, toolName string, executorPublicIDs []string)
	WorkCanceled(runPublicID, taskKey string, executorPublicIDs []string, reason string)
}

// Reasons of work_canceled (docs/api.md#the-executor-plane).
const (
	CancelRunCanceled  = KeyRunCanceled
	CancelTaskCanceled = KeyTaskCanceled
	CancelExpired      = "expired"
)

// Announcements answers addressing's questions about executors
// (docs/development.md#how-the-kernel-runs-work): which Runner or tool providers currently announce
// a served name in a workspace, with their profiles. The executor plane implements it over its
// announcements table, inside the birth transaction. A nil Announcements means nobody announces
// anything: every non-kernel name is tool_not_served.
type Announcements interface {
	// RunnerTool reports whether the executor is a Runner of the workspace, active, and
	// announces name, with its display name and the announced profile (timeout_ms included when
	// given). A true answer is all of these at once: acceptance takes it as the Runner's
	// eligibility and reads the executor row only to word a refusal.
	RunnerTool(ctx context.Context, q store.Querier, workspaceID int64, runnerPublicID, name string) (Served, bool, error)
	// PoolTool lists the active tool providers serving the workspace that announce name.
	PoolTool(ctx context.Context, q store.Querier, workspaceID int64, name string) ([]Served, error)
}

// Served is one executor's announcement of one name.
type Served struct {
	ExecutorPublicID string
	DisplayName      string
	Profile          announce.EffectProfile
	// TimeoutMS is the announced timeout_ms, 0 when none.
	TimeoutMS int64
}
