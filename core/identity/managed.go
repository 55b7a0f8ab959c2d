package identity

import (
	"context"

	"github.com/nexuskernel/nexus/core/store"
)

// RevokeManaged revokes a plugin's managed executor on the host's behalf
// (docs/plugins.md#states-status-reload-and-restart: a plugin removed from the catalog), with the
// same effects as RevokeExecutor: its dispatched work settles executor_revoked in the same
// transaction and its streams close after. No member standing is checked; only the server's plugin
// plane calls it. An executor that is not managed, or already revoked, is left as it is.
func (d *Directory) RevokeManaged(ctx context.Context, publicID string) error {
	now := d.now()
	at := store.Millis(now)
	var id int64
	var invs []invalidation
	defer func() { d.auth.forget(invs...) }()
	err := d.store.Write(ctx, func(tx *store.Tx) error {
		id = 0
		e, err := store.ExecutorByPublicID(ctx, tx, publicID)
		if err != nil {
			return err
		}
		m, err := store.ManagementOf(ctx, tx, e.ID)
		if err != nil {
			return err
		}
		if m.ManagedBy == "" || e.Status != ExecutorActive {
			return nil
		}
		if err := store.LockExecutor(ctx, tx, e.ID); err != nil {
			return err
		}
		if _, err := store.RevokeExecutor(ctx, tx, e.ID, at); err != nil {
			return err
		}
		if d.revoked != nil {
			if err := d.revoked.SettleRevoked(ctx, tx, e.ID, now); err != nil {
				return err
			}
		}
		invs = append(invs, invalidation{kind: invalidateExecutor, id: e.ID})
		if err := d.auth.announce(ctx, tx, invs...); err != nil {
			return err
		}
		id = e.ID
		return nil
	})
	if err != nil {
		return err
	}
	if id != 0 && d.revoked != nil {
		d.revoked.Revoked(id)
	}
	return nil
}
