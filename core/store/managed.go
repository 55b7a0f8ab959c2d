package store

import (
	"context"
	"database/sql"
	"errors"
)

// AllWorkspaces lists every workspace in id order (a plugin's managed executor serves all of them
// when its catalog entry names none).
func AllWorkspaces(ctx context.Context, q Querier) ([]Workspace, error) {
	var out []Workspace
	err := q.Select(ctx, &out, `SELECT id, public_id, handle, name, created_at FROM workspaces ORDER BY id`)
	return out, err
}

// ManagedExecutor finds the managed executor of a plugin (its catalog name) in a workspace.
func ManagedExecutor(ctx context.Context, q Querier, workspaceID int64, catalogName string) (*Executor, error) {
	var e Executor
	err := q.Get(ctx, &e, `SELECT `+executorColumns+`
FROM executors e JOIN workspaces w ON w.id = e.workspace_id WHERE e.workspace_id = ? AND e.managed_by = ?`, workspaceID, catalogName)
	if err != nil {
		return nil, notFound(err)
	}
	return &e, nil
}

// ManagedExecutorsOf lists every managed executor of a plugin, in every workspace.
func ManagedExecutorsOf(ctx context.Context, q Querier, catalogName string) ([]Executor, error) {
	var out []Executor
	err := q.Select(ctx, &out, `SELECT `+executorColumns+`
FROM executors e JOIN workspaces w ON w.id = e.workspace_id WHERE e.managed_by = ? ORDER BY e.workspace_id`, catalogName)
	return out, err
}

// InsertManagedExecutor stores e as the managed executor of a plugin and sets its ID.
func InsertManagedExecutor(ctx context.Context, q Querier, e *Executor, catalogName string) error {
	return q.Get(ctx, &e.ID,
		`INSERT INTO executors (public_id, workspace_id, kind, display_name, status, created_at, managed_by, managed_eligible)
VALUES (?, ?, ?, ?, ?, ?, ?, 1) RETURNING id`,
		e.PublicID, e.WorkspaceID, e.Kind, e.DisplayName, e.Status, e.CreatedAt, catalogName)
}

// ReactivateExecutor makes a revoked managed executor active again under the same public id
// (docs/api.md#executors: the one exception to final revocation).
func ReactivateExecutor(ctx context.Context, q Querier, executorID int64) error {
	_, err := q.Exec(ctx, `UPDATE executors SET status = ?, revoked_at = NULL WHERE id = ? AND managed_by IS NOT NULL`,
		ExecutorActive, executorID)
	return err
}

// SetManagedEligible records whether the plugin's catalog entry still serves the executor's
// workspace.
func SetManagedEligible(ctx context.Context, q Querier, executorID int64, eligible bool) error {
	v := 0
	if eligible {
		v = 1
	}
	_, err := q.Exec(ctx, `UPDATE executors SET managed_eligible = ? WHERE id = ?`, v, executorID)
	return err
}

// Management is what a workspace's override check needs of an executor besides its row: the
// plugin that manages it ("" for an ordinary executor) and whether that plugin serves the
// executor's workspace.
type Management struct {
	ManagedBy string
	Eligible  bool
}

// ManagementOf reads an executor's management.
func ManagementOf(ctx context.Context, q Querier, executorID int64) (Management, error) {
	var row struct {
		ManagedBy sql.NullString `db:"managed_by"`
		Eligible  int64          `db:"managed_eligible"`
	}
	if err := q.Get(ctx, &row, `SELECT managed_by, managed_eligible FROM executors WHERE id = ?`, executorID); err != nil {
		return Management{}, notFound(err)
	}
	return Management{ManagedBy: row.ManagedBy.String, Eligible: row.Eligible != 0}, nil
}

// ToolProviderOverrides reads a workspace's override map (canonical JSON) and lock version; a
// workspace that never wrote one has "{}" at version 0.
func ToolProviderOverrides(ctx context.Context, q Querier, workspaceID int64) (string, int64, error) {
	var row struct {
		Overrides   string `db:"overrides"`
		LockVersion int64  `db:"lock_version"`
	}
	err := q.Get(ctx, &row, `SELECT overrides, lock_version FROM workspace_tool_provider_overrides WHERE workspace_id = ?`, workspaceID)
	if errors.Is(err, sql.ErrNoRows) {
		return "{}", 0, nil
	}
	if err != nil {
		return "", 0, err
	}
	return row.Overrides, row.LockVersion, nil
}

// PutToolProviderOverrides writes a workspace's override map at the given lock version.
func PutToolProviderOverrides(ctx context.Context, q Querier, workspaceID int64, overrides string, lockVersion int64) error {
	_, err := q.Exec(ctx, `INSERT INTO workspace_tool_provider_overrides (workspace_id, overrides, lock_version) VALUES (?, ?, ?)
ON CONFLICT (workspace_id) DO UPDATE SET overrides = excluded.overrides, lock_version = excluded.lock_version`,
		workspaceID, overrides, lockVersion)
	return err
}
