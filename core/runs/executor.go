package runs

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/nexuskernel/nexus/core/store"
)

// The executor plane's settles (docs/api.md#the-executor-plane), on the engine's Tx: core/executors
// decides what its doors answer and calls these to change rows, so that every settle goes through
// this engine's readiness, lifecycle and wake-ups exactly as the kernel's own do.

// Now is the engine's clock, which every deadline reads.
func (e *Engine) Now() time.Time { return e.now() }

// Expire applies the expiry rule to a live row whose deadline passed, under the run's lock
// (LockRow), then readiness and the run lifecycle; the row's executors get work_canceled
// (expired). A row that is no longer live is left alone.
func (x *Tx) Expire(ctx context.Context, run *store.Run, t *store.Task) error {
	return x.ExpireEarly(ctx, run, t, "")
}

// ExpireEarly is Expire before the deadline, its detail saying cause (docs/plugins.md#crashes);
// an empty cause is Expire's.
func (x *Tx) ExpireEarly(ctx context.Context, run *store.Run, t *store.Task, cause string) error {
	if !live(t.Status) {
		return nil
	}
	return x.e.expire(ctx, x.Tx, x.fx, run, t, x.e.nowMS(), cause)
}

// Fail settles a live row failed with te under the run's lock (LockRow), then readiness: a
// revoked executor's rows (executor_revoked). No work_canceled is sent; the executor is gone.
func (x *Tx) Fail(ctx context.Context, run *store.Run, t *store.Task, te TaskError) error {
	if !live(t.Status) {
		return nil
	}
	x.fx.abandon = append(x.fx.abandon, t.ID)
	if err := x.e.settleRow(ctx, x.Tx, x.fx, run, &t.TaskTrace, failAs(StatusFailed, te, x.e.nowMS())); err != nil {
		return err
	}
	return x.e.advance(ctx, x.Tx, x.fx, run)
}

// ToolSettlement is how an executor's commit settles its row (docs/api.md#the-executor-plane).
type ToolSettlement struct {
	// Status is StatusCompleted or StatusFailed.
	Status  string
	IsError bool
	// Output is the text projection; Content the stored block array, nil when no body is written.
	Output            string
	Content           []byte
	StructuredContent json.RawMessage
	Title             string
	Metadata          json.RawMessage
	// Error is set on a failed row: tool_failed or result_unstorable.
	Error *TaskError
	// Generation and TokenHash fence the write: the row changes only while it is still
	// dispatched under this claim (docs/development.md#how-the-kernel-runs-work).
	Generation int64
	TokenHash  []byte
}

// errClaimFence is a settle whose row moved under it although the caller held its lock.
var errClaimFence = errors.New("runs: the row left its claim under the caller's lock")

// Settle settles a dispatched executor row with its executor's result, under the run's lock
// (LockRow) and the claim's compare-and-set, then readiness, the run lifecycle and wake-ups in
// the same transaction. Upload bindings are the caller's, in x.Tx.
func (x *Tx) Settle(ctx context.Context, run *store.Run, t *store.Task, s ToolSettlement) error {
	now := x.e.nowMS()
	// The settlement number is computed by the UPDATE itself, and the statement that settles the
	// row answers the run's trace as it left it, which readiness works on.
	settle := store.Settle{ID: t.ID, Status: s.Status, Result: store.Result{IsError: &s.IsError, Output: s.Output,
		Content: stored(s.Content), StructuredContent: stored(s.StructuredContent), Metadata: stored(s.Metadata)},
		Error: (*store.Failure)(s.Error), At: now, From: StatusDispatched, Claim: &store.Fence{Generation: s.Generation, TokenHash: s.TokenHash}}
	if s.Title != "" {
		settle.Result.Title = &s.Title
	}
	ok, trace, err := settle.ExecTrace(ctx, x.Tx, run.ID)
	if err != nil {
		return err
	}
	if !ok {
		return errClaimFence
	}
	t.Status = s.Status
	x.fx.settledAs(run, &t.TaskTrace, s.Status, (*store.Failure)(s.Error))
	_, err = x.e.advanceTrace(ctx, x.Tx, x.fx, run, trace, nil)
	return err
}
