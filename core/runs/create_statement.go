package runs

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/nexuskernel/nexus/core/store"
)

// ErrNeedsTransaction says that a create cannot be one statement (a guard of the statement
// failed, or the run is of a shape the statement does not hold) and runs as a transaction.
var ErrNeedsTransaction = errors.New("runs: the create needs a transaction")

// CreateInStatement creates a run without an idempotency key in one statement
// (store.CreateRun; docs/development.md#how-a-door-reaches-the-store): the run is accepted by plain
// reads, its rows are built with their first readiness applied, and the statement writes them
// only while the caller's standing and the executors the rows are parked for still hold. It
// answers ErrNeedsTransaction, having written nothing, when the statement's guard failed or the
// run is of a shape the statement does not hold (a step that attaches uploads, more rows than
// store.MaxCreateRunTasks, a first step that the gate holds or denies, or any other row than a
// model or tool step): the caller then runs the create as its ordinary transaction, which reads
// everything afresh and finds the refusal word when there is one.
//
// Plain reads before the statement see what the transaction's own plain reads would: at READ
// COMMITTED each statement of a transaction takes a new snapshot, and a plain read locks nothing.
// What the transaction checks in the statement that writes (the standing it rereads, the
// addressee's revocation a dispatch checks in its UPDATE) is a guard of this statement.
//
// answer runs through the store's reader on the run and rows as they will be written, before the
// write, so that a create is never reported failed once its run is written.
func (e *Engine) CreateInStatement(ctx context.Context, a *Actor, in *NewRun, answer func(q store.Querier, c *CreatedRun) error) error {
	fx := &effects{}
	q := e.store.Reader()
	r, steps, err := e.acceptRun(ctx, q, nil, fx, a, in)
	if err != nil {
		return err
	}
	if len(steps) > store.MaxCreateRunTasks {
		return ErrNeedsTransaction
	}
	keys, rows := stepRows(0, steps, "", r.CreatedAt)
	stmt := &store.CreateRun{Run: r, Tasks: rows, Standing: a.standing()}
	if in.Start {
		ok, err := e.bornReady(ctx, q, fx, stmt)
		if err != nil {
			return err
		}
		if !ok {
			return ErrNeedsTransaction
		}
	}
	if err := answer(q, &CreatedRun{Run: r, Keys: keys, Rows: rows}); err != nil {
		return err
	}
	if err := e.store.CreateRun(ctx, stmt); err != nil {
		if errors.Is(err, store.ErrGuardFailed) {
			return ErrNeedsTransaction
		}
		return err
	}
	e.afterCommit(ctx, fx)
	return nil
}

// bornReady applies the first readiness of a run born running to its unwritten rows, as
// advanceTrace applies it to written ones (ready, dispatch): the first row (every later one waits
// on the one before it) is a model row running for the kernel, or a tool row the gate grants,
// parked for its executor or running for the kernel. It adds the statement's guard that the
// row's executor is not revoked and its kernel wake-up, and notes the signals owed once it
// commits. It answers false, having changed nothing, for a first row it does not hold.
func (e *Engine) bornReady(ctx context.Context, q store.Querier, fx *effects, stmt *store.CreateRun) (bool, error) {
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
		status, timeout := parkOf(t)
		deadline := now + timeout
		t.ReadyAt, t.Approval = &now, jsonText(approvalOf(d.Origin, nil, now))
		t.Status, t.DispatchedAt, t.DeadlineAt = status, &now, &deadline
		if t.AddressedExecutorPublicID != nil {
			stmt.UnlessRevoked = append(stmt.UnlessRevoked, *t.AddressedExecutorPublicID)
		}
		if status == StatusRunning {
			e.wakeKernelIn(stmt, fx, t.Key)
			return true, nil
		}
		ids, err := e.addressees(ctx, q, r, t)
		if err != nil {
			return false, err
		}
		fx.available = append(fx.available, signalRow{run: r.PublicID, key: t.Key, tool: deref(t.ToolName), executors: ids})
		return true, nil
	}
	return false, nil
}

// wakeKernelIn is wakeKernel for a statement: the kernel wake-up rides in it.
func (e *Engine) wakeKernelIn(stmt *store.CreateRun, fx *effects, key string) {
	fx.kernel++
	stmt.Notify = append(stmt.Notify, store.Notification{Channel: e.channel, Payload: kernelWake(stmt.Run.PublicID, key)})
}
