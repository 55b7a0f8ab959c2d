package runs

import (
	"context"

	"github.com/nexuskernel/nexus/core/store"
)

// stopRunTx stops a run the caller has locked (docs/api.md#runs): every open row is canceled
// (run_canceled), except, without force, rows a claimant holds; the run becomes canceled, or
// canceling while claimed rows remain, and its turn follows.
func (e *Engine) stopRunTx(ctx context.Context, tx *store.Tx, fx *effects, r *store.Run, by Member, force bool, now int64) error {
	if err := (store.RequestStop{ID: r.ID, At: now, By: by, Force: force}).Exec(ctx, tx); err != nil {
		return err
	}
	tasks, err := store.TraceTasks(ctx, tx, r.ID)
	if err != nil {
		return err
	}
	claimedLeft := false
	for i := range tasks {
		t := &tasks[i]
		if Terminal(t.Status) {
			continue
		}
		claimed := t.ClaimedAt != nil && (t.Status == StatusRunning || t.Status == StatusDispatched)
		if claimed && !force && r.Status != RunPending {
			claimedLeft = true
			continue
		}
		if err := e.signalCanceled(ctx, tx, fx, r, t, CancelRunCanceled); err != nil {
			return err
		}
		fx.abandon = append(fx.abandon, t.ID)
		detail, err := e.canceledDetail(ctx, tx, t)
		if err != nil {
			return err
		}
		if err := e.settleRow(ctx, tx, fx, r, t, failAs(StatusCanceled, TaskError{Key: KeyRunCanceled, Detail: detail}, now)); err != nil {
			return err
		}
	}
	status := RunCanceled
	if claimedLeft {
		status = RunCanceling
	}
	if err := e.setRunStatus(ctx, tx, r, status, now); err != nil {
		return err
	}
	return e.runChanged(ctx, tx, fx, r, now)
}
