package executors

import (
	"context"
	"time"

	"github.com/nexuskernel/nexus/core/identity"
	"github.com/nexuskernel/nexus/core/store"
)

// Revocation is what revoking an executor does beyond its tokens (executor.md §1.2), the
// identity.RevocationEffects the server wires in: its event streams close on every instance.
// Settling the rows addressed to it executor_revoked joins SettleRevoked with the inbox.
type Revocation struct {
	Hub *Hub
}

var _ identity.RevocationEffects = Revocation{}

// SettleRevoked runs inside the revoking transaction: it tells the other instances, on commit,
// to close the executor's streams.
func (r Revocation) SettleRevoked(ctx context.Context, tx *store.Tx, executorID int64, _ time.Time) error {
	return r.Hub.notifyRevokedIn(ctx, tx, executorID)
}

// Revoked runs after the revocation committed: this instance closes the executor's streams.
func (r Revocation) Revoked(executorID int64) { r.Hub.CloseExecutor(executorID) }
