package runs

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/nexuskernel/nexus/core/events"
	"github.com/nexuskernel/nexus/core/refusal"
	"github.com/nexuskernel/nexus/core/steps"
	"github.com/nexuskernel/nexus/core/store"
)

// ErrNeedsTransaction says that a create cannot be one statement (a guard of the statement
// failed, or the run is of a shape the statement does not hold) and runs as a transaction.
var ErrNeedsTransaction = errors.New("runs: the create needs a transaction")

// errNeedsWorkspace says that a create's acceptance for a statement reads the workspace (a
// declaration, a kernel or pool tool) of an actor whose standing the door left to the statement:
// the create reads the standing first (Actor.Reread) and accepts the run again.
var errNeedsWorkspace = errors.New("runs: the create needs the workspace read")

// CreateInStatement creates a run without an idempotency key in one statement
// (store.CreateRun; docs/development.md#how-a-door-reaches-the-store): the run is accepted by plain
// reads, its rows are built with their first readiness applied, and the statement writes them
// only while its guards still hold: the caller's standing (read in the statement itself when the
// door left it unresolved), the default Runner, the Runners that routed rows are addressed to
// (whose announcements the statement addresses the rows from, store.Served) and the executors
// the rows are parked for. A standalone run of routed tool steps created by a user is thus one
// round trip. It answers ErrNeedsTransaction, having written nothing, when the statement's guard
// failed or the run is of a shape the statement does not hold (a step that attaches uploads,
// more rows than store.MaxCreateRunTasks, a first step that the gate holds or denies, or any
// other row than a model or tool step), or when acceptance found a refusal without a fact the
// statement was to check: the caller then runs the create as its ordinary transaction, which
// reads everything afresh and finds the refusal word, in order, when there is one.
//
// Plain reads before the statement see what the transaction's own plain reads would: at READ
// COMMITTED each statement of a transaction takes a new snapshot, and a plain read locks nothing.
// What the transaction checks in the statement that writes (the standing it rereads, the
// addressee's revocation a dispatch checks in its UPDATE) is a guard of this statement.
//
// It answers the run as written; the caller builds its answer from it, after the write, so that a
// create is never reported failed once its run is written.
func (e *Engine) CreateInStatement(ctx context.Context, a *Actor, in *steps.Run) (*CreatedRun, error) {
	fx := &effects{}
	q := e.store.Reader()
	r, list, err := e.acceptRun(ctx, q, nil, fx, a, in)
	if errors.Is(err, errNeedsWorkspace) {
		if a, err = a.Resolve(ctx, q); err != nil {
			return nil, err
		}
		fx = &effects{}
		r, list, err = e.acceptRun(ctx, q, nil, fx, a, in)
	}
	if _, ok := refusal.As(err); ok && !a.resolved() {
		// The standing's word comes before the body's: the transaction reads it first.
		return nil, ErrNeedsTransaction
	}
	if err != nil {
		return nil, err
	}
	if len(list) > store.MaxCreateRunTasks {
		return nil, ErrNeedsTransaction
	}
	keys, rows, err := stepRows(0, list, "", r.CreatedAt)
	if err != nil {
		return nil, err
	}
	stmt := &store.CreateRun{Run: r, Tasks: rows, Standing: a.standing()}
	if r.DefaultRunnerExecutorPublicID != nil {
		stmt.DefaultRunner = *r.DefaultRunnerExecutorPublicID
	}
	for i, s := range list {
		if s.served {
			stmt.Served = append(stmt.Served, store.Served{Task: i, RunnerPublicID: s.address.Executor, Name: s.Name,
				DefaultTimeoutMS: ToolParkDefault.Milliseconds()})
		}
	}
	if in.Starts() {
		ok, err := e.bornReady(ctx, q, fx, stmt, len(list) > 0 && list[0].served)
		if err != nil {
			return nil, err
		}
		if !ok {
			return nil, ErrNeedsTransaction
		}
	}
	if err := e.store.CreateRun(ctx, stmt); err != nil {
		if errors.Is(err, store.ErrGuardFailed) {
			return nil, ErrNeedsTransaction
		}
		return nil, err
	}
	// The statement gave the run its workspace and the served rows their address: the member
	// events name them once it has run.
	fx.note(events.RunStatus{Scope: scopeOf(r), Status: r.Status})
	for _, s := range fx.available {
		fx.note(events.TaskParked{Scope: scopeOf(r), Row: events.Row{TaskKey: s.key, TaskKind: KindTool, ToolName: s.tool}})
	}
	e.afterCommit(ctx, fx)
	return &CreatedRun{Run: r, Keys: keys, Trace: store.TracesOf(rows)}, nil
}

// bornReady applies the first readiness of a run born running to its unwritten rows, as
// advanceTrace applies it to written ones (ready, dispatch): the first row (every later one waits
// on the one before it) is a model row running for the kernel, or a tool row the gate grants,
// parked for its executor or running for the kernel. It adds the statement's guard that the
// row's executor is not revoked and its kernel wake-up, and notes the signals owed once it
// commits. A served first row's deadline is the statement's, from the budget it reads
// (store.Served). It answers false, having changed nothing, for a first row it does not hold.
func (e *Engine) bornReady(ctx context.Context, q store.Querier, fx *effects, stmt *store.CreateRun, served bool) (bool, error) {
	r, t := stmt.Run, &stmt.Tasks[0]
	now := r.CreatedAt
	switch t.Kind {
	case KindModel:
		t.Status, t.ReadyAt, t.DispatchedAt = StatusRunning, &now, &now
		e.wakeKernelIn(stmt, fx, t.Key)
		return true, nil
	case KindTool:
		rules, err := storedRules(r.ApprovalRules)
		if err != nil {
			return false, err
		}
		var input json.RawMessage
		if t.ToolInput != nil {
			input = json.RawMessage(*t.ToolInput)
		}
		d := Evaluate(r.ApprovalMode, rules, t.Origin, deref(t.ToolName), input)
		if d.Outcome != Granted {
			return false, nil
		}
		status, timeout := parkOf(&t.TaskTrace)
		t.ReadyAt, t.Approval = &now, approvalOf(d.Origin, nil, now)
		t.Status, t.DispatchedAt = status, &now
		if !served {
			deadline := now + timeout
			t.DeadlineAt = &deadline
		}
		if t.AddressedExecutorPublicID != nil {
			stmt.UnlessRevoked = append(stmt.UnlessRevoked, *t.AddressedExecutorPublicID)
		}
		if status == StatusRunning {
			e.wakeKernelIn(stmt, fx, t.Key)
			return true, nil
		}
		ids, err := e.addressees(ctx, q, r, &t.TaskTrace)
		if err != nil {
			return false, err
		}
		fx.available = append(fx.available, signalRow{run: r.PublicID, key: t.Key, tool: deref(t.ToolName), executors: ids})
		return true, nil
	}
	return false, nil
}

// wakeKernelIn is wakeKernel for a statement's run.
func (e *Engine) wakeKernelIn(stmt *store.CreateRun, fx *effects, key string) {
	e.wakeKernel(fx, stmt.Run.PublicID, key)
}
