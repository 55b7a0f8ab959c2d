package runs

import (
	"sync/atomic"

	"github.com/nexuskernel/nexus/core/events"
	"github.com/nexuskernel/nexus/core/model"
	"github.com/nexuskernel/nexus/core/store"
)

// The engine's member events (docs/api.md#events): each transition that members follow notes
// its event in the transaction's effects, and the events go out on the event feed once the
// transaction commits (deliver), in the order the transaction made them true. A transaction
// that rolls back or is retried notes nothing: its effects are dropped with it.

// scopeOf is the place of a run's member events.
func scopeOf(run *store.Run) events.Scope {
	return events.Scope{Workspace: run.WorkspacePublicID, Run: run.PublicID, Conversation: deref(run.ConversationPublicID)}
}

// rowOf names a row in a member event.
func rowOf(t *store.TaskTrace) events.Row {
	return events.Row{TaskKey: t.Key, TaskKind: t.Kind, ToolName: deref(t.ToolName)}
}

// note records a member event of this transaction; a nil fx notes nothing.
func (fx *effects) note(ev events.MemberEvent) {
	if fx != nil {
		fx.events = append(fx.events, ev)
	}
}

// parked notes that t, a tool row of run, is dispatched for the executors ids: their
// work_available, and the members' task.parked.
func (fx *effects) parked(run *store.Run, t *store.TaskTrace, ids []string) {
	fx.available = append(fx.available, signalRow{run: run.PublicID, key: t.Key, tool: deref(t.ToolName), executors: ids})
	fx.note(events.TaskParked{Scope: scopeOf(run), Row: rowOf(t)})
}

// settled notes that t, a row of run, settled with the status and error key its trace holds.
func (fx *effects) settled(run *store.Run, t *store.TaskTrace) {
	fx.note(events.TaskSettled{Scope: scopeOf(run), Row: rowOf(t), Status: t.Status, ErrorKey: deref(t.ErrorKey)})
}

// settledAs notes that t, a row of run whose trace was read before its settle, settled with
// status and failure f (nil for none).
func (fx *effects) settledAs(run *store.Run, t *store.TaskTrace, status string, f *store.Failure) {
	ev := events.TaskSettled{Scope: scopeOf(run), Row: rowOf(t), Status: status}
	if f != nil {
		ev.ErrorKey = f.Key
	}
	fx.note(ev)
}

// NoteTurn notes that t, the turn of the conversation-hosted run, was posted or changed status;
// its event goes out once this transaction commits.
func (x *Tx) NoteTurn(run *store.Run, t *store.Turn) {
	x.fx.note(events.TurnStatus{Scope: scopeOf(run), Turn: t.PublicID, Position: t.Position, Status: t.Status})
}

// streamDeltas has req's provider hand its streamed answer to the members following the run, as
// model.delta events, never stored (docs/api.md#events); the flag it answers says whether the
// provider streamed any piece.
func (e *Engine) streamDeltas(run *store.Run, t *store.Task, req *model.Request) *atomic.Bool {
	streamed := new(atomic.Bool)
	if e.bus == nil {
		return streamed
	}
	scope := scopeOf(run)
	req.OnDelta = func(d model.Delta) {
		streamed.Store(true)
		e.bus.Publish(events.ModelDelta{Scope: scope, TaskKey: t.Key, Attempt: d.Attempt, Text: d.Text, ToolCall: d.ToolCall})
	}
	return streamed
}

// deltasOf publishes the answer of a provider that did not stream as its deltas: its text at
// once, then each call's name.
func (e *Engine) deltasOf(run *store.Run, t *store.Task, resp *model.Response) {
	if e.bus == nil {
		return
	}
	scope := scopeOf(run)
	if resp.Text != "" {
		e.bus.Publish(events.ModelDelta{Scope: scope, TaskKey: t.Key, Attempt: 1, Text: resp.Text})
	}
	for _, c := range resp.ToolCalls {
		e.bus.Publish(events.ModelDelta{Scope: scope, TaskKey: t.Key, Attempt: 1, ToolCall: c.Name})
	}
}

// Announce publishes a member event another package's transaction made true (an executor's
// claim), after that transaction committed.
func (e *Engine) Announce(ev events.MemberEvent) {
	if e.bus != nil {
		e.bus.Publish(ev)
	}
}
