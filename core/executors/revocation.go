package executors

import (
	"context"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/nexuskernel/nexus/core/identity"
	"github.com/nexuskernel/nexus/core/runs"
	"github.com/nexuskernel/nexus/core/store"
)

// Revocation is what revoking an executor does beyond its tokens (docs/api.md#executors), the
// identity.RevocationEffects the server wires in: inside the revoking transaction, every
// dispatched row addressed to the executor (claimed or not) and every pool row it had claimed
// settles failed executor_revoked, with readiness, and the other instances are told to close its
// event streams; once that committed, this instance closes them and delivers the settles'
// wake-ups. Rows that reach dispatch later addressed to it settle the same way at that moment
// (the run engine's dispatch). Unclaimed pool rows stay for the remaining members.
type Revocation struct {
	hub    *Hub
	engine *runs.Engine
	log    hclog.Logger

	mu sync.Mutex
	// pending holds the effects of settles whose revocation has not committed yet, by
	// executor: they are delivered by Revoked, never after a rollback.
	pending map[int64][]func()
}

// NewRevocation returns the revocation effects over the hub and the engine; a nil engine
// settles no work (streams still close).
func NewRevocation(hub *Hub, engine *runs.Engine, log hclog.Logger) *Revocation {
	if log == nil {
		log = hclog.NewNullLogger()
	}
	return &Revocation{hub: hub, engine: engine, log: log, pending: map[int64][]func(){}}
}

var _ identity.RevocationEffects = (*Revocation)(nil)

// SettleRevoked runs inside the revoking transaction, after the executor's status changed.
func (r *Revocation) SettleRevoked(ctx context.Context, tx *store.Tx, executorID int64, _ time.Time) error {
	if err := r.hub.notifyRevokedIn(ctx, tx, executorID); err != nil {
		return err
	}
	if r.engine == nil {
		return nil
	}
	deliver, err := r.settle(ctx, tx, executorID)
	if err != nil || deliver == nil {
		return err
	}
	r.mu.Lock()
	r.pending[executorID] = append(r.pending[executorID], deliver)
	r.mu.Unlock()
	return nil
}

// settle fails the executor's dispatched work in tx and returns the effects to deliver once tx
// commits.
func (r *Revocation) settle(ctx context.Context, tx *store.Tx, executorID int64) (func(), error) {
	ex, err := store.ExecutorByID(ctx, tx, executorID)
	if err != nil {
		return nil, err
	}
	rows, err := store.DispatchedFor(ctx, tx, ex.PublicID, store.ExecutorClaimant(ex.PublicID))
	if err != nil || len(rows) == 0 {
		return nil, err
	}
	return r.engine.WriteIn(ctx, tx, func(x *runs.Tx) error {
		for _, row := range rows {
			run, t, err := x.LockRow(ctx, row.RunID, row.ID)
			if err != nil {
				return err
			}
			if t.Status != runs.StatusDispatched {
				continue // an earlier settle of this loop (a skip it propagated) took it
			}
			if err := x.Fail(ctx, run, t, runs.RevokedError(ex.PublicID)); err != nil {
				return err
			}
		}
		return nil
	})
}

// Revoked runs after the revocation committed: this instance closes the executor's streams and
// delivers the wake-ups of the settles. Then it settles, in transactions of its own, any row that
// a concurrent dispatch parked for the executor while the revocation was committing.
func (r *Revocation) Revoked(executorID int64) {
	r.hub.CloseExecutor(executorID)
	r.mu.Lock()
	pending := r.pending[executorID]
	delete(r.pending, executorID)
	r.mu.Unlock()
	for _, d := range pending {
		d()
	}
	if r.engine == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), revokedSweepTimeout)
	defer cancel()
	var deliver func()
	err := r.engine.Write(ctx, func(x *runs.Tx) error {
		var err error
		deliver, err = r.settle(ctx, x.Tx, executorID)
		return err
	})
	if err != nil {
		r.log.Warn("settling a revoked executor's late work failed", "executor_id", executorID, "error", err)
		return
	}
	if deliver != nil {
		deliver()
	}
}

// revokedSweepTimeout bounds the follow-up settle after a revocation: a few row updates; a
// store that takes longer is in trouble, and the rows still settle by their deadline.
const revokedSweepTimeout = 30 * time.Second
