package runs

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/nexuskernel/nexus/core/approval"
	"github.com/nexuskernel/nexus/core/events"
	"github.com/nexuskernel/nexus/core/store"
)

// AfterKeys are the keys of the rows t waits on.
func AfterKeys(t *store.TaskTrace) []string {
	if t.AfterKeys == nil {
		return nil
	}
	return slices.Clone(t.AfterKeys)
}

// FailedStatus reports whether a settled status counts as a failure for the failure policy
// (docs/api.md#runs): failed, timed out, uncertain, canceled, and skipped (which propagates).
func FailedStatus(s string) bool {
	switch s {
	case StatusFailed, StatusTimedOut, StatusUncertain, StatusCanceled, StatusSkipped:
		return true
	}
	return false
}

func live(s string) bool {
	switch s {
	case StatusRunning, StatusDispatched, StatusAwaitingInput, StatusNeedsApproval:
		return true
	}
	return false
}

// advance is readiness (docs/development.md#how-the-kernel-runs-work) and the run lifecycle
// (docs/api.md#runs), in the caller's transaction under the run's lock: every waiting row whose
// predecessors all settled becomes ready, a row behind a failed propagate predecessor is skipped
// (and the skip propagates), a row behind a failed halt predecessor stays held; then the run
// completes, needs attention, or finishes canceling when it is quiescent.
func (e *Engine) advance(ctx context.Context, tx *store.Tx, fx *effects, run *store.Run) error {
	_, err := e.advanceTrace(ctx, tx, fx, run, nil, nil)
	return err
}

// advanceTrace is advance over trace, the trace of the run's every row as the caller's
// transaction left them, in id order; when trace is nil, over the trace it reads. written are whole
// rows the caller holds as written (the rows of a run it just created), from which readiness
// takes what the trace lacks (a tool row's input, which an approval rule may read) instead of
// reading the row; nil for none. It answers the trace as readiness left it, kept current row by
// row as every step here does, so that a caller holding it does not read it again.
func (e *Engine) advanceTrace(ctx context.Context, tx *store.Tx, fx *effects, run *store.Run, trace []store.TaskTrace, written []store.Task) ([]store.TaskTrace, error) {
	tasks := trace
	if tasks == nil {
		var err error
		if tasks, err = store.TraceTasks(ctx, tx, run.ID); err != nil {
			return nil, err
		}
	}
	byKey := make(map[string]*store.TaskTrace, len(tasks))
	for i := range tasks {
		byKey[tasks[i].Key] = &tasks[i]
	}
	now := e.nowMS()
	if run.Status == RunRunning {
		for changed := true; changed; {
			observed, err := e.observe(ctx, tx, fx, run, tasks, byKey, now)
			if err != nil {
				return nil, err
			}
			replied, err := e.observeRequests(ctx, tx, fx, run, tasks, byKey, now)
			if err != nil {
				return nil, err
			}
			changed = observed || replied
			for i := range tasks {
				t := &tasks[i]
				if t.Status != StatusWaiting {
					continue
				}
				settled, held := true, false
				var skipBy *store.TaskTrace
				for _, k := range AfterKeys(t) {
					p := byKey[k]
					if p == nil || !Terminal(p.Status) {
						settled = false
						continue
					}
					if FailedStatus(p.Status) {
						switch p.OnFailure {
						case OnFailurePropagate:
							if skipBy == nil {
								skipBy = p
							}
						case OnFailureHalt:
							held = true
						}
					}
				}
				switch {
				case skipBy != nil:
					detail := fmt.Sprintf("%s %s", skipBy.Key, skipBy.Status)
					if skipBy.ErrorKey != nil {
						detail = fmt.Sprintf("%s failed (%s)", skipBy.Key, *skipBy.ErrorKey)
					}
					if err := e.settleRow(ctx, tx, fx, run, t, failAs(StatusSkipped, TaskError{Key: KeyPredecessorFailed, Detail: detail}, now)); err != nil {
						return nil, err
					}
					changed = true
				case settled && !held:
					if err := e.ready(ctx, tx, fx, run, t, written, now); err != nil {
						return nil, err
					}
					changed = true
				}
			}
		}
		// Branch results that outlived the mainline's final round
		// (docs/agent-tools.md#delegation-and-conversations); a wake round it plants is a new row, so
		// readiness starts over.
		planted, err := e.deliverLate(ctx, tx, fx, run, tasks, byKey, now)
		if err != nil {
			return nil, err
		}
		if planted {
			return e.advanceTrace(ctx, tx, fx, run, nil, nil)
		}
	}
	before := run.Status
	if err := e.runState(ctx, tx, run, tasks, byKey, now); err != nil {
		return nil, err
	}
	if run.Status != before {
		if err := e.runChanged(ctx, tx, fx, run, now); err != nil {
			return nil, err
		}
	}
	return tasks, nil
}

// settleRow settles row t, under the run's lock, with an error status (skipped, failed, canceled,
// timed out) by f (its ID is t's), and keeps the in-memory trace current: t is the row's trace as
// the statement left it.
func (e *Engine) settleRow(ctx context.Context, tx *store.Tx, fx *effects, run *store.Run, t *store.TaskTrace, f store.Fail) error {
	f.ID = t.ID
	ok, err := f.Exec(ctx, tx, t)
	if ok {
		fx.settled(run, t)
	}
	return err
}

// failAs is the settle of a row with an error status at now (settleRow), its other fields unset.
func failAs(status string, te TaskError, now int64) store.Fail {
	return store.Fail{Status: status, Error: store.Failure(te), At: now}
}

func nullable(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// ready moves a row whose predecessors settled: a model task is queued for the kernel; a tool
// task crosses the approval gate and is parked for its executor or queued for the kernel. The
// row's input is read when the run has an approval rule that matches on it, from written (whole
// rows the caller holds, see advanceTrace) or else from the store.
func (e *Engine) ready(ctx context.Context, tx *store.Tx, fx *effects, run *store.Run, t *store.TaskTrace, written []store.Task, now int64) error {
	switch t.Kind {
	case KindModel:
		// A round is queued for the kernel, whose claim starts its clock.
		if _, err := (store.Dispatch{ID: t.ID, Status: StatusRunning, At: now, ReadyAt: &now}).Exec(ctx, tx); err != nil {
			return err
		}
		t.Status = StatusRunning
		e.wakeKernel(fx, run.PublicID, t.Key)
		return nil
	case KindTool:
		rules, err := storedRules(run.ApprovalRules)
		if err != nil {
			return err
		}
		// Only a rule with a path reads the input (approval.ReadsInput): without one, the row's
		// input is not read.
		var input json.RawMessage
		if approval.ReadsInput(rules) {
			full := writtenRow(written, t.ID)
			if full == nil {
				if full, err = store.TaskByID(ctx, tx, t.ID); err != nil {
					return err
				}
			}
			if full.ToolInput != nil {
				input = json.RawMessage(*full.ToolInput)
			}
		}
		d := Evaluate(run.ApprovalMode, rules, t.Origin, deref(t.ToolName), input)
		// The row's whole transition is one statement: ready_at, then what the gate decided
		// (the approval record and the settle, the hold, or the park) in the same UPDATE.
		switch d.Outcome {
		case Denied:
			f := failAs(StatusFailed, TaskError{Key: KeyApprovalDenied, Detail: d.Detail}, now)
			f.ReadyAt, f.Approval = &now, approvalOf(d.Origin, nil, now)
			return e.settleRow(ctx, tx, fx, run, t, f)
		case Held:
			hold := store.Hold{ID: t.ID, Status: StatusNeedsApproval, ReadyAt: now, Deadline: now + ApprovalHold.Milliseconds()}
			if err := hold.Exec(ctx, tx); err != nil {
				return err
			}
			t.Status = StatusNeedsApproval
			fx.note(events.ApprovalWaiting{Scope: scopeOf(run), Row: rowOf(t)})
			return nil
		}
		return e.dispatch(ctx, tx, fx, run, t, now, &now, approvalOf(d.Origin, nil, now))
	}
	return fmt.Errorf("runs: ready: %s rows are not placed in this version", t.Kind)
}

// writtenRow is the row of written with this id, nil when written has none.
func writtenRow(written []store.Task, id int64) *store.Task {
	for i := range written {
		if written[i].ID == id {
			return &written[i]
		}
	}
	return nil
}

// dispatch parks a granted tool row: dispatched for its executor, or running in the kernel's
// queue; the park clock starts now. A row addressed to an executor that was revoked meanwhile
// settles failed executor_revoked instead (docs/api.md#executors). readyAt and approval, when
// not nil, are what the caller's transition writes on the row with it (readiness's ready_at, the
// gate's record), folded into the same statement.
func (e *Engine) dispatch(ctx context.Context, tx *store.Tx, fx *effects, run *store.Run, t *store.TaskTrace, now int64, readyAt *int64, approval *Approval) error {
	status, timeout := parkOf(t)
	deadline := now + timeout
	park := store.Dispatch{ID: t.ID, Status: status, At: now, Deadline: &deadline, ReadyAt: readyAt, Approval: approval}
	// The addressee's revocation is checked by the parking UPDATE itself (the row parks only
	// while its executor is not revoked), which reads what a read of the executor row a
	// statement earlier would, one round trip fewer; the row settles failed when it did not park.
	if t.AddressedExecutorPublicID != nil && !fx.active[*t.AddressedExecutorPublicID] {
		park.UnlessRevoked = *t.AddressedExecutorPublicID
	}
	parked, err := park.Exec(ctx, tx)
	if err != nil {
		return err
	}
	if !parked {
		f := failAs(StatusFailed, RevokedError(*t.AddressedExecutorPublicID), now)
		f.ReadyAt, f.Approval = readyAt, approval
		return e.settleRow(ctx, tx, fx, run, t, f)
	}
	t.Status = status
	if status == StatusRunning {
		e.wakeKernel(fx, run.PublicID, t.Key)
		return nil
	}
	ids, err := e.addressees(ctx, tx, run, t)
	if err != nil {
		return err
	}
	fx.parked(run, t, ids)
	return nil
}

// parkOf is where a granted tool row parks and for how long: dispatched for its executor, or
// running in the kernel's queue, for its budget (ToolParkDefault when it has none).
func parkOf(t *store.TaskTrace) (status string, timeout int64) {
	timeout = deref(t.TimeoutMS)
	if timeout <= 0 {
		timeout = ToolParkDefault.Milliseconds()
	}
	if t.AddressedRole != nil {
		return StatusDispatched, timeout
	}
	return StatusRunning, timeout
}

// RevokedError is the error of a row settled because its executor was revoked.
func RevokedError(executorPublicID string) TaskError {
	return TaskError{Key: KeyExecutorRevoked, Detail: "executor " + executorPublicID + " was revoked"}
}

// addressees are the executors a dispatched row's signals go to (docs/api.md#the-executor-plane):
// its claimant once claimed; else the executor it is addressed to; else the current members of its
// pool.
func (e *Engine) addressees(ctx context.Context, q store.Querier, run *store.Run, t *store.TaskTrace) ([]string, error) {
	if t.ClaimedAt != nil {
		if id := t.ClaimedBy.Executor(); id != "" {
			return []string{id}, nil
		}
	}
	if t.AddressedExecutorPublicID != nil {
		return []string{*t.AddressedExecutorPublicID}, nil
	}
	if t.AddressedRole == nil || e.ann == nil {
		return nil, nil
	}
	pool, err := e.ann.PoolTool(ctx, q, run.WorkspaceID, deref(t.ToolName))
	if err != nil {
		return nil, err
	}
	ids := make([]string, len(pool))
	for i, s := range pool {
		ids[i] = s.ExecutorPublicID
	}
	return ids, nil
}

// signalCanceled records work_canceled for a dispatched executor row about to settle by
// anything other than its executor's own commit (a stop, a branch cancel, the expiry rule).
// Call it before the row's status changes.
func (e *Engine) signalCanceled(ctx context.Context, q store.Querier, fx *effects, run *store.Run, t *store.TaskTrace, reason string) error {
	if t.AddressedRole == nil || t.Status != StatusDispatched {
		return nil
	}
	ids, err := e.addressees(ctx, q, run, t)
	if err != nil || len(ids) == 0 {
		return err
	}
	fx.canceled = append(fx.canceled, signalRow{run: run.PublicID, key: t.Key, executors: ids, reason: reason})
	return nil
}

// Approval is a row's approval record (docs/agent-tools.md#the-approval-gate).
type Approval = store.Approval

func approvalOf(origin string, by *Member, now int64) *Approval {
	return &Approval{Origin: origin, DecidedBy: by, DecidedAt: store.FormatMillis(now)}
}

func storedRules(s string) ([]Rule, error) {
	var rules []Rule
	if s == "" {
		return nil, nil
	}
	if err := json.Unmarshal([]byte(s), &rules); err != nil {
		return nil, fmt.Errorf("runs: stored approval rules: %w", err)
	}
	return rules, nil
}

// runState applies the run lifecycle once readiness is done.
func (e *Engine) runState(ctx context.Context, tx *store.Tx, run *store.Run, tasks []store.TaskTrace, byKey map[string]*store.TaskTrace, now int64) error {
	anyLive, anyOpen := false, false
	for i := range tasks {
		if live(tasks[i].Status) {
			anyLive = true
		}
		if !Terminal(tasks[i].Status) {
			anyOpen = true
		}
	}
	switch run.Status {
	case RunCanceling:
		if !anyOpen {
			return e.setRunStatus(ctx, tx, run, RunCanceled, now)
		}
	case RunRunning, RunNeedsAttention:
		if anyLive {
			return nil
		}
		d := byKey[run.DeliverableTaskKey]
		if !anyOpen && d != nil && d.Status == StatusCompleted {
			// The answer is the deliverable's output, copied in the statement that completes
			// the run: the loaded rows are light and carry no output.
			if err := (store.CompleteRun{ID: run.ID, Status: RunCompleted, Deliverable: d.ID, At: now}).Exec(ctx, tx); err != nil {
				return err
			}
			run.Status = RunCompleted
			return nil
		}
		if run.Status == RunRunning {
			return e.setRunStatus(ctx, tx, run, RunNeedsAttention, now)
		}
	}
	return nil
}

func (e *Engine) setRunStatus(ctx context.Context, tx *store.Tx, run *store.Run, status string, now int64) error {
	move := store.MoveRun{ID: run.ID, Status: status, At: now}
	if status == RunCompleted || status == RunCanceled {
		move.CompletedAt = &now
	}
	if err := move.Exec(ctx, tx); err != nil {
		return err
	}
	run.Status = status
	return nil
}

// runChanged follows a run's status change onto its turn and queue, and owes its readers a word.
func (e *Engine) runChanged(ctx context.Context, tx *store.Tx, fx *effects, run *store.Run, now int64) error {
	fx.note(events.RunStatus{Scope: scopeOf(run), Status: run.Status})
	if run.ConversationID == nil {
		return nil
	}
	if run.Answer == nil && run.Status == RunCompleted {
		r, err := store.RunByID(ctx, tx, run.ID)
		if err != nil {
			return err
		}
		run.Answer = r.Answer
	}
	return e.conv.FollowTurn(ctx, &Tx{e: e, Tx: tx, fx: fx}, run, now)
}
