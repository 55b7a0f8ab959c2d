package store

import (
	"context"
	"fmt"
)

// PluginRoot is where one instance's copy of a plugin keeps its data, for the plugins whose
// storage the host can name (docs/operations.md#several-instances): memory-fs's root, by its
// marker. Serving is true when the instance's root was admitted, false when the instance holds
// its copy unready because another root is in use. Host and StartedAt are the instance's, read
// with the row.
type PluginRoot struct {
	InstanceID string `db:"instance_id"`
	Plugin     string `db:"plugin"`
	RootID     string `db:"root_id"`
	RootPath   string `db:"root_path"`
	Serving    bool   `db:"serving"`
	RecordedAt int64  `db:"recorded_at"`
	Host       string `db:"host"`
	StartedAt  int64  `db:"started_at"`
}

// pluginRootsLockClass is the first key of the advisory locks that serialize the admissions of
// one plugin's roots; the second is the hash of the plugin's catalog name. The value is arbitrary
// and used by nothing else.
const pluginRootsLockClass = 0x6e6578

// LockPluginRoots serializes the admissions of one plugin's roots across instances until the
// transaction ends, so that two instances starting at once with different roots cannot both
// find none in use. SQLite's immediate transaction already holds the write lock.
func LockPluginRoots(ctx context.Context, tx *Tx, plugin string) error {
	if tx.Dialect() != Postgres {
		return nil
	}
	if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(?, hashtext(?))`, pluginRootsLockClass, plugin); err != nil {
		return fmt.Errorf("store: plugin roots lock: %w", err)
	}
	return nil
}

// LivePluginRoots lists the plugin's rows of the instances that are live (heartbeat at or after
// cutoff, not declared dead), oldest instance first.
func LivePluginRoots(ctx context.Context, q Querier, plugin string, cutoff int64) ([]PluginRoot, error) {
	var out []PluginRoot
	err := q.Select(ctx, &out, `SELECT r.instance_id, r.plugin, r.root_id, r.root_path, r.serving, r.recorded_at, i.host, i.started_at
FROM instance_plugin_roots r JOIN instances i ON i.id = r.instance_id
WHERE r.plugin = ? AND i.dead_at IS NULL AND i.heartbeat_at >= ?
ORDER BY i.started_at, r.instance_id`, plugin, cutoff)
	return out, err
}

// PutPluginRoot records the instance's root of the plugin, replacing the one it recorded before.
func PutPluginRoot(ctx context.Context, q Querier, r PluginRoot) error {
	_, err := q.Exec(ctx, `INSERT INTO instance_plugin_roots (instance_id, plugin, root_id, root_path, serving, recorded_at)
VALUES (?, ?, ?, ?, ?, ?)
ON CONFLICT (instance_id, plugin) DO UPDATE SET root_id = excluded.root_id, root_path = excluded.root_path,
serving = excluded.serving, recorded_at = excluded.recorded_at`,
		r.InstanceID, r.Plugin, r.RootID, r.RootPath, r.Serving, r.RecordedAt)
	return err
}

// DeletePluginRoot forgets the instance's root of the plugin (a plugin block removed or disabled).
func DeletePluginRoot(ctx context.Context, q Querier, instanceID, plugin string) error {
	_, err := q.Exec(ctx, `DELETE FROM instance_plugin_roots WHERE instance_id = ? AND plugin = ?`, instanceID, plugin)
	return err
}
