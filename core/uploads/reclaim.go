package uploads

import (
	"context"

	"github.com/nexuskernel/nexus/core/store"
)

// Reclaim deletes, rows and chunks, up to ReclaimBatch uploads that nothing binds and that were
// created UnboundLifetime or longer ago, complete or not (an upload a dropped connection or a
// crash left incomplete is reclaimed like an unbound one), and returns how many it deleted. The
// sweeper calls it every pass; a pass that deleted ReclaimBatch may have left more.
//
// On PostgreSQL candidates are locked FOR UPDATE SKIP LOCKED, so a row a binder holds FOR SHARE
// is passed over, and each locked row is checked for bindings again in a new statement before
// it is deleted, so a binder that committed between the scan and the lock keeps its upload.
// Several instances' sweepers share the work without waiting on each other.
func (s *Service) Reclaim(ctx context.Context) (int, error) {
	cutoff := store.Millis(s.now().Add(-UnboundLifetime))
	var n int
	err := s.store.Write(ctx, func(tx *store.Tx) error {
		locked, err := store.LockReclaimableUploads(ctx, tx, cutoff, ReclaimBatch)
		if err != nil || len(locked) == 0 {
			return err
		}
		unbound, err := store.UnboundAmong(ctx, tx, locked)
		if err != nil {
			return err
		}
		n = len(unbound)
		return store.DeleteUploads(ctx, tx, unbound)
	})
	if err != nil {
		return 0, err
	}
	return n, nil
}
