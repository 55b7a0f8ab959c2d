package runs

import (
	"context"
	"time"

	"github.com/nexuskernel/nexus/core/store"
)

// Tx is one engine transaction, the one window the packages above the engine have into it: the
// store transaction (Tx), the run and row locks taken through it (LockRun, LockRow), and the
// effects the engine owes the world once it commits (kernel wake-ups, work_available and
// work_canceled, the observing runs to advance after), which it collects as the engine's own
// changes are made through it and delivers after the commit, never before and never after a
// rollback. The executor plane settles its rows through a Tx (executor.go); a kernel call's
// settling transaction is one too (KernelCall.Engine), through which the conversation tools
// place their rows under the calling run's lock (convtools.go).
type Tx struct {
	e *Engine
	// Tx is the store transaction; rows the caller writes itself go here, so that they commit
	// with the engine's changes or not at all.
	Tx *store.Tx
	fx *effects
	// run is the calling run when the Tx settles a kernel call, under that run's lock; nil
	// otherwise.
	run *store.Run
}

// Write runs fn in one engine transaction (retried when the store answers store.ErrRetryable)
// and delivers its effects once it commits.
func (e *Engine) Write(ctx context.Context, fn func(x *Tx) error) error {
	return e.write(ctx, func(tx *store.Tx, fx *effects) error {
		return fn(&Tx{e: e, Tx: tx, fx: fx})
	})
}

// WriteIn runs fn in the caller's transaction (a revocation's, which core/identity owns) and
// returns what to deliver once that transaction commits; the caller must not deliver after a
// rollback.
func (e *Engine) WriteIn(ctx context.Context, tx *store.Tx, fn func(x *Tx) error) (deliver func(), err error) {
	fx := &effects{}
	if err := fn(&Tx{e: e, Tx: tx, fx: fx}); err != nil {
		return nil, err
	}
	return func() { e.deliver(fx) }, nil
}

// Now is the engine's clock, which every deadline reads.
func (x *Tx) Now() time.Time { return x.e.now() }

// NowMS is Now in Unix milliseconds.
func (x *Tx) NowMS() int64 { return x.e.nowMS() }

// LockRun takes the run's lock (docs/development.md#how-the-kernel-runs-work) and reads the run
// under it.
func (x *Tx) LockRun(ctx context.Context, runID int64) (*store.Run, error) {
	return store.LockRun(ctx, x.Tx, runID)
}

// LockRow takes the run's lock, then the row's (docs/development.md#how-the-kernel-runs-work), and
// reads both under them.
func (x *Tx) LockRow(ctx context.Context, runID, taskID int64) (*store.Run, *store.Task, error) {
	run, err := x.LockRun(ctx, runID)
	if err != nil {
		return nil, nil, err
	}
	t, err := store.LockTask(ctx, x.Tx, taskID)
	if err != nil {
		return nil, nil, err
	}
	return run, t, nil
}
