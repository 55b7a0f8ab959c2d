package events

// Member events are the facts a workspace's members follow on their event stream
// (docs/api.md#events): a run's status, its rows parked, claimed and settled, its rounds sealed,
// the asks and approvals that wait for a person and are decided, and a conversation's turns. Each one names its Scope,
// which the stream filters on; its JSON form is the stream's data line, keys as docs/api.md
// lists them.

// The member event kinds, spelled as a member stream's event field spells them.
const (
	KindRunStatus       Kind = "run.status"
	KindTaskParked      Kind = "task.parked"
	KindTaskClaimed     Kind = "task.claimed"
	KindTaskSettled     Kind = "task.settled"
	KindRoundSealed     Kind = "round.sealed"
	KindApprovalWaiting Kind = "approval.waiting"
	KindApprovalDecided Kind = "approval.decided"
	KindAskWaiting      Kind = "ask.waiting"
	KindAskAnswered     Kind = "ask.answered"
	KindTurnStatus      Kind = "turn.status"
	KindModelDelta      Kind = "model.delta"
	KindPluginState     Kind = "plugin.state"
)

// Scope places a member event: the workspace whose members may read it, and the run and the
// conversation it concerns (empty when it concerns none).
type Scope struct {
	Workspace    string `json:"workspace_public_id"`
	Run          string `json:"run_public_id,omitempty"`
	Conversation string `json:"conversation_public_id,omitempty"`
}

// MemberEvent is an event a member stream carries.
type MemberEvent interface {
	Event
	// Where is the event's scope.
	Where() Scope
}

// Where is the scope itself; every member event embeds one.
func (s Scope) Where() Scope { return s }

func (Scope) addressed(string) bool { return false }

// RunStatus: a run's status changed (created runs too: their first status).
type RunStatus struct {
	Scope
	Status string `json:"status"`
}

// Kind is KindRunStatus.
func (RunStatus) Kind() Kind { return KindRunStatus }

// Row names one task row of a run, as the run read's brief rows do.
type Row struct {
	TaskKey string `json:"task_key"`
	// TaskKind is the row's kind (model, tool, await, …).
	TaskKind string `json:"kind"`
	// ToolName is a tool row's served name; empty for other rows.
	ToolName string `json:"tool_name,omitempty"`
}

// TaskParked: a row entered dispatched, handed to an executor (or a plugin) to claim.
type TaskParked struct {
	Scope
	Row
}

// Kind is KindTaskParked.
func (TaskParked) Kind() Kind { return KindTaskParked }

// TaskClaimed: an executor claimed a dispatched row.
type TaskClaimed struct {
	Scope
	Row
	// Executor is the claiming executor's public id.
	Executor   string `json:"executor_public_id"`
	Generation int64  `json:"generation"`
}

// Kind is KindTaskClaimed.
func (TaskClaimed) Kind() Kind { return KindTaskClaimed }

// TaskSettled: a row reached a settled status.
type TaskSettled struct {
	Scope
	Row
	Status string `json:"status"`
	// ErrorKey is the settled row's error key; empty when it has none.
	ErrorKey string `json:"error_key,omitempty"`
}

// Kind is KindTaskSettled.
func (TaskSettled) Kind() Kind { return KindTaskSettled }

// RoundSealed: a model round's answer was stored (its row settles completed with it).
type RoundSealed struct {
	Scope
	TaskKey string `json:"task_key"`
	Round   int64  `json:"round_number"`
	Finish  string `json:"finish"`
	// ToolCalls is how many tool calls the answer made.
	ToolCalls int `json:"tool_calls"`
}

// Kind is KindRoundSealed.
func (RoundSealed) Kind() Kind { return KindRoundSealed }

// ApprovalWaiting: a tool row waits for a person's approval.
type ApprovalWaiting struct {
	Scope
	Row
}

// Kind is KindApprovalWaiting.
func (ApprovalWaiting) Kind() Kind { return KindApprovalWaiting }

// ApprovalDecided: a person approved or denied a row.
type ApprovalDecided struct {
	Scope
	Row
	// Decision is "approved" or "denied".
	Decision string `json:"decision"`
	// By is the deciding member's public id.
	By string `json:"by"`
}

// Kind is KindApprovalDecided.
func (ApprovalDecided) Kind() Kind { return KindApprovalDecided }

// AskWaiting: an ask row waits for a person's resolution.
type AskWaiting struct {
	Scope
	TaskKey string `json:"task_key"`
}

// Kind is KindAskWaiting.
func (AskWaiting) Kind() Kind { return KindAskWaiting }

// AskAnswered: a person resolved an ask row.
type AskAnswered struct {
	Scope
	TaskKey string `json:"task_key"`
	// By is the resolving member's public id.
	By string `json:"by"`
}

// Kind is KindAskAnswered.
func (AskAnswered) Kind() Kind { return KindAskAnswered }

// TurnStatus: a conversation's turn was posted (queued) or changed status.
type TurnStatus struct {
	Scope
	Turn     string `json:"turn_public_id"`
	Position int64  `json:"position"`
	Status   string `json:"status"`
}

// Kind is KindTurnStatus.
func (TurnStatus) Kind() Kind { return KindTurnStatus }

// ModelDelta: a piece of a model round's answer as its provider streams it, text or the name of
// a tool call as the call begins. It is not stored and not numbered: a bus keeps no delta in
// its window, so a stream that resumes sees the settled state (round.sealed), never deltas.
type ModelDelta struct {
	Scope
	TaskKey string `json:"task_key"`
	// Attempt is the provider attempt the piece belongs to: a retried call streams its answer
	// again from the start under the next attempt.
	Attempt  int    `json:"attempt"`
	Text     string `json:"text,omitempty"`
	ToolCall string `json:"tool_call,omitempty"`
}

// Kind is KindModelDelta.
func (ModelDelta) Kind() Kind { return KindModelDelta }

// PluginState: a plugin of the deployment changed state (docs/plugins.md#crashes). It concerns
// no workspace: its scope is empty, and only the streams of workspace owners hear it
// (MemberFilter.Deployment), as only they read the plugins' status.
type PluginState struct {
	Scope
	Name  string `json:"name"`
	State string `json:"state"`
	// Instance is the instance whose copy of the plugin changed state (docs/operations.md#several-instances).
	Instance string `json:"instance"`
}

// Kind is KindPluginState.
func (PluginState) Kind() Kind { return KindPluginState }

// KernelWork: a kernel row became runnable (a model round, a kernel tool row). It is no member
// event: it crosses to the other instances, whose workers it wakes (Bus.SubscribeKernelWork),
// and this instance's workers were woken at the commit.
type KernelWork struct {
	// Origin is the instance that committed it (docs/operations.md#several-instances).
	Origin  string `json:"origin"`
	Run     string `json:"run_public_id"`
	TaskKey string `json:"task_key"`
}

// KindKernelWork names KernelWork.
const KindKernelWork Kind = "kernel.work"

// Kind is KindKernelWork.
func (KernelWork) Kind() Kind { return KindKernelWork }

func (KernelWork) addressed(string) bool { return false }
