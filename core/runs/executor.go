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
	if !live(t.Status) {
		return nil
	}
	return x.e.expire(ctx, x.Tx, x.fx, run, t, x.e.nowMS())
}

// Fail settles a live row failed with te under the run's lock (LockRow), then readiness: a
// revoked executor's rows (executor_revoked). No work_canceled is sent; the executor is gone.
func (x *Tx) Fail(ctx context.Context, run *store.Run, t *store.Task, te TaskError) error {
	if !live(t.Status) {
		return nil
	}
	x.fx.abandon = append(x.fx.abandon, t.ID)
	if err := x.e.settleRow(ctx, x.Tx, run, &t.TaskTrace, StatusFailed, te, x.e.nowMS()); err != nil {
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
	set := []store.Assign{{Col: "status", Val: s.Status}, {Col: "is_error", Val: s.IsError}, {Col: "output", Val: s.Output},
		{Col: "completed_at", Val: now}, {Col: "settle_seq", Val: store.NextSettleSeqOf(run.ID)}}
	if s.Content != nil {
		set = append(set, store.Assign{Col: "content", Val: string(s.Content)})
	}
	if s.StructuredContent != nil {
		set = append(set, store.Assign{Col: "structured_content", Val: string(s.StructuredContent)})
	}
	if s.Title != "" {
		set = append(set, store.Assign{Col: "title", Val: s.Title})
	}
	if s.Metadata != nil {
		set = append(set, store.Assign{Col: "metadata", Val: string(s.Metadata)})
	}
	if s.Error != nil {
		set = append(set, store.Assign{Col: "error_key", Val: s.Error.Key}, store.Assign{Col: "error_detail", Val: nullable(s.Error.Detail)})
	}
	gen := s.Generation
	guard := &store.TaskGuard{Statuses: []string{StatusDispatched}, Generation: &gen, TokenHash: s.TokenHash}
	ok, trace, err := store.SetTaskAndTrace(ctx, x.Tx, t.ID, guard, set, run.ID, nil)
	if err != nil {
		return err
	}
	if !ok {
		return errClaimFence
	}
	t.Status = s.Status
	_, err = x.e.advanceTrace(ctx, x.Tx, x.fx, run, trace, nil)
	return err
}
