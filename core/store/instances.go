package store

import (
	"context"
	"database/sql"
	"fmt"
)

// Instance is one server process serving this store (docs/operations.md#several-instances): it
// registers at start and renews HeartbeatAt; a survivor that finds the heartbeat older than the
// timeout sets DeadAt and releases the claims the instance held, its kernel's and its plugins'.
// Times are Unix ms.
type Instance struct {
	ID          string `db:"id" json:"id"`
	Host        string `db:"host" json:"host"`
	Version     string `db:"version" json:"version"`
	StartedAt   int64  `db:"started_at" json:"-"`
	HeartbeatAt int64  `db:"heartbeat_at" json:"-"`
	DeadAt      *int64 `db:"dead_at" json:"-"`
}

const instanceColumns = `id, host, version, started_at, heartbeat_at, dead_at`

// RegisterInstance records in at its start, live with its heartbeat at in.HeartbeatAt.
func (s *Store) RegisterInstance(ctx context.Context, in Instance) error {
	err := s.Write(ctx, func(tx *Tx) error { return upsertInstance(ctx, tx, in, in.HeartbeatAt) })
	if err != nil {
		return fmt.Errorf("store: register instance: %w", err)
	}
	return nil
}

// Heartbeat renews in's heartbeat to now and reports whether the instance had been declared dead
// meanwhile (its row marked, or forgotten after that): it is live again, but the claims it held
// were released and its commits under them are refused by the claim fence.
func (s *Store) Heartbeat(ctx context.Context, in Instance, now int64) (wasDead bool, err error) {
	err = s.Write(ctx, func(tx *Tx) error {
		var dead []sql.NullInt64
		if err := tx.Select(ctx, &dead, `SELECT dead_at FROM instances WHERE id = ?`, in.ID); err != nil {
			return err
		}
		wasDead = len(dead) == 0 || dead[0].Valid
		return upsertInstance(ctx, tx, in, now)
	})
	if err != nil {
		return false, fmt.Errorf("store: heartbeat: %w", err)
	}
	return wasDead, nil
}

func upsertInstance(ctx context.Context, tx *Tx, in Instance, heartbeat int64) error {
	_, err := tx.Exec(ctx, `INSERT INTO instances (`+instanceColumns+`) VALUES (?, ?, ?, ?, ?, NULL)
ON CONFLICT (id) DO UPDATE SET heartbeat_at = excluded.heartbeat_at, dead_at = NULL`,
		in.ID, in.Host, in.Version, in.StartedAt, heartbeat)
	return err
}

// LeaveInstance declares an instance dead at now, at its clean stop: the survivors release at once
// the claims its abandoned work held, and the list of live instances no longer shows it.
func (s *Store) LeaveInstance(ctx context.Context, id string, now int64) error {
	return s.Write(ctx, func(tx *Tx) error {
		_, err := tx.Exec(ctx, `UPDATE instances SET dead_at = ? WHERE id = ? AND dead_at IS NULL`, now, id)
		return err
	})
}

// LiveInstances lists the instances whose heartbeat is at or after cutoff and that nobody declared
// dead, oldest start first.
func LiveInstances(ctx context.Context, q Querier, cutoff int64) ([]Instance, error) {
	var out []Instance
	err := q.Select(ctx, &out, `SELECT `+instanceColumns+` FROM instances
WHERE dead_at IS NULL AND heartbeat_at >= ? ORDER BY started_at, id`, cutoff)
	return out, err
}

// DeclareDead marks every other instance whose heartbeat is older than cutoff dead at now and
// returns them. Several survivors may run it at once: the row update makes each instance
// declared once.
func DeclareDead(ctx context.Context, tx *Tx, self string, cutoff, now int64) ([]Instance, error) {
	var out []Instance
	err := tx.Select(ctx, &out, `UPDATE instances SET dead_at = ?
WHERE dead_at IS NULL AND heartbeat_at < ? AND id <> ? RETURNING `+instanceColumns, now, cutoff, self)
	return out, err
}

// ForgetInstances deletes the rows of instances declared dead before before, with the plugin
// roots they recorded.
func ForgetInstances(ctx context.Context, tx *Tx, before int64) (int64, error) {
	if _, err := tx.Exec(ctx, `DELETE FROM instance_plugin_roots WHERE instance_id IN
(SELECT id FROM instances WHERE dead_at IS NOT NULL AND dead_at < ?)`, before); err != nil {
		return 0, err
	}
	res, err := tx.Exec(ctx, `DELETE FROM instances WHERE dead_at IS NOT NULL AND dead_at < ?`, before)
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}

// OrphanedClaim is a live row held by a claim of an instance that is not live: a kernel claim, or
// a claim one of its plugins made (ClaimSpec.Instance).
type OrphanedClaim struct {
	ID         int64  `db:"id"`
	RunID      int64  `db:"run_id"`
	Key        string `db:"task_key"`
	Instance   string `db:"claimed_instance"`
	Generation int64  `db:"claim_generation"`
}

// orphanedPredicate selects live, claimed rows whose claiming instance (its kernel or one of its
// plugins) is another instance declared dead. It reads no clock: an instance is dead once declared so, and one that came back cleared its
// dead_at first. A claimant without a row (an engine that never registered, as in a test that
// drives one by hand) is never taken for dead.
const orphanedPredicate = `t.claimed_at IS NOT NULL AND t.claimed_instance IS NOT NULL AND t.claimed_instance <> ?
 AND t.status IN ('running', 'dispatched', 'awaiting_input', 'needs_approval')
 AND EXISTS (SELECT 1 FROM instances i WHERE i.id = t.claimed_instance AND i.dead_at IS NOT NULL)`

// OrphanedClaims lists up to limit rows held by the claims of instances that are not live
// (self excluded), locking them with SKIP LOCKED on PostgreSQL so that several survivors never
// take the same row.
func OrphanedClaims(ctx context.Context, tx *Tx, self string, limit int) ([]OrphanedClaim, error) {
	// No order: the batch is any of them (the next sweep takes the rest), and an order would let
	// SQLite prefer the primary key's scan to the partial index of live claimed rows.
	q := `SELECT t.id, t.run_id, t.task_key, t.claimed_instance, t.claim_generation FROM tasks t WHERE ` +
		orphanedPredicate + ` LIMIT ?`
	if tx.Dialect() == Postgres {
		q += ` FOR UPDATE SKIP LOCKED`
	}
	var out []OrphanedClaim
	err := tx.Select(ctx, &out, q, self, limit)
	return out, err
}

// StillOrphaned reports whether row id is still held by the same orphaned claim (generation gen of
// a claimant that is not live): the check under the run's lock before the claim is released.
func StillOrphaned(ctx context.Context, tx *Tx, id, gen int64, self string) (bool, error) {
	var n int
	err := tx.Get(ctx, &n, `SELECT COUNT(*) FROM tasks t WHERE t.id = ? AND t.claim_generation = ? AND `+orphanedPredicate, id, gen, self)
	return n == 1, err
}
