package store

import (
	"context"
	"database/sql"

	"github.com/jmoiron/sqlx"
)

// Executor kinds and statuses (docs/api.md#executors).
const (
	ExecutorRunner       = "runner"
	ExecutorToolProvider = "tool_provider"
	ExecutorActive       = "active"
	ExecutorRevoked      = "revoked"
)

// Executor is a runner or a tool provider of one workspace.
type Executor struct {
	ID                int64         `db:"id"`
	PublicID          string        `db:"public_id"`
	WorkspaceID       int64         `db:"workspace_id"`
	WorkspacePublicID string        `db:"workspace_public_id"`
	Kind              string        `db:"kind"`
	DisplayName       string        `db:"display_name"`
	Status            string        `db:"status"`
	CreatedAt         int64         `db:"created_at"`
	RevokedAt         sql.NullInt64 `db:"revoked_at"`
	LastSeenAt        sql.NullInt64 `db:"last_seen_at"`
	// ConnectedAt is when its current event stream opened; null while none is open.
	ConnectedAt sql.NullInt64 `db:"connected_at"`
	// ManagedBy is the catalog name of the plugin whose managed executor this is; null for an
	// ordinary executor.
	ManagedBy sql.NullString `db:"managed_by"`
}

const executorColumns = `e.id, e.public_id, e.workspace_id, w.public_id AS workspace_public_id, e.kind, e.display_name,
       e.status, e.created_at, e.revoked_at, e.last_seen_at, e.connected_at, e.managed_by`

// InsertExecutor stores e (its workspace public id is not stored) and sets its ID.
func InsertExecutor(ctx context.Context, q Querier, e *Executor) error {
	return q.Get(ctx, &e.ID,
		`INSERT INTO executors (public_id, workspace_id, kind, display_name, status, created_at) VALUES (?, ?, ?, ?, ?, ?) RETURNING id`,
		e.PublicID, e.WorkspaceID, e.Kind, e.DisplayName, e.Status, e.CreatedAt)
}

// ExecutorByPublicID finds an executor by public id (canonical UUID form).
func ExecutorByPublicID(ctx context.Context, q Querier, publicID string) (*Executor, error) {
	var e Executor
	err := q.Get(ctx, &e, `SELECT `+executorColumns+`
FROM executors e JOIN workspaces w ON w.id = e.workspace_id WHERE e.public_id = ?`, ID(publicID))
	if err != nil {
		return nil, notFound(err)
	}
	return &e, nil
}

// ExecutorFilter narrows an executor listing; an empty field does not filter.
type ExecutorFilter struct {
	Kind   string
	Status string
}

// ExecutorsOfWorkspaces lists the executors of the given workspaces, in no particular order.
func ExecutorsOfWorkspaces(ctx context.Context, q Querier, workspaceIDs []int64, f ExecutorFilter) ([]Executor, error) {
	if len(workspaceIDs) == 0 {
		return nil, nil
	}
	query, args, err := inClause(`SELECT `+executorColumns+`
FROM executors e JOIN workspaces w ON w.id = e.workspace_id WHERE e.workspace_id IN (?)`, workspaceIDs)
	if err != nil {
		return nil, err
	}
	if f.Kind != "" {
		query += ` AND e.kind = ?`
		args = append(args, f.Kind)
	}
	if f.Status != "" {
		query += ` AND e.status = ?`
		args = append(args, f.Status)
	}
	var out []Executor
	err = q.Select(ctx, &out, query, args...)
	return out, err
}

// RevokeExecutor marks an executor revoked at at and reports whether it was active until now.
func RevokeExecutor(ctx context.Context, q Querier, executorID, at int64) (bool, error) {
	res, err := q.Exec(ctx, `UPDATE executors SET status = ?, revoked_at = ? WHERE id = ? AND status = ?`,
		ExecutorRevoked, at, executorID, ExecutorActive)
	if err != nil {
		return false, err
	}
	n, err := res.RowsAffected()
	return n > 0, err
}

// LockExecutor takes an executor's row lock inside a write transaction on PostgreSQL, so that a
// rotation and a revocation of one executor run one after the other; SQLite's immediate
// transaction already serializes them.
func LockExecutor(ctx context.Context, tx *Tx, executorID int64) error {
	if tx.Dialect() != Postgres {
		return nil
	}
	var id int64
	if err := tx.Get(ctx, &id, `SELECT id FROM executors WHERE id = ? FOR UPDATE`, executorID); err != nil {
		return notFound(err)
	}
	return nil
}

// TouchExecutor records an executor-plane request at at, never moving last_seen_at backwards.
func TouchExecutor(ctx context.Context, q Querier, executorID, at int64) error {
	_, err := q.Exec(ctx, `UPDATE executors SET last_seen_at = ? WHERE id = ? AND (last_seen_at IS NULL OR last_seen_at < ?)`,
		at, executorID, at)
	return err
}

// ExecutorToken is a stored executor credential (its SHA-256 only).
type ExecutorToken struct {
	ID         int64         `db:"id"`
	PublicID   string        `db:"public_id"`
	ExecutorID int64         `db:"executor_id"`
	SecretHash []byte        `db:"secret_hash"`
	CreatedAt  int64         `db:"created_at"`
	RevokedAt  sql.NullInt64 `db:"revoked_at"`
}

// InsertExecutorToken stores t and sets its ID.
func InsertExecutorToken(ctx context.Context, q Querier, t *ExecutorToken) error {
	return q.Get(ctx, &t.ID,
		`INSERT INTO executor_tokens (public_id, executor_id, secret_hash, created_at) VALUES (?, ?, ?, ?) RETURNING id`,
		t.PublicID, t.ExecutorID, t.SecretHash, t.CreatedAt)
}

// RevokeExecutorTokens revokes every live token of an executor at at.
func RevokeExecutorTokens(ctx context.Context, q Querier, executorID, at int64) error {
	_, err := q.Exec(ctx, `UPDATE executor_tokens SET revoked_at = ? WHERE executor_id = ? AND revoked_at IS NULL`, at, executorID)
	return err
}

// ExecutorTokenPrincipal is what an executor token authenticates as, read in one query.
type ExecutorTokenPrincipal struct {
	Executor
	TokenID        int64         `db:"token_id"`
	SecretHash     []byte        `db:"secret_hash"`
	TokenRevokedAt sql.NullInt64 `db:"token_revoked_at"`
}

// ExecutorTokenByHash finds the executor token with this secret hash and the executor it names.
func ExecutorTokenByHash(ctx context.Context, q Querier, hash []byte) (*ExecutorTokenPrincipal, error) {
	var p ExecutorTokenPrincipal
	err := q.Get(ctx, &p, `SELECT `+executorColumns+`, t.id AS token_id, t.secret_hash, t.revoked_at AS token_revoked_at
FROM executor_tokens t JOIN executors e ON e.id = t.executor_id JOIN workspaces w ON w.id = e.workspace_id
WHERE t.secret_hash = ?`, hash)
	if err != nil {
		return nil, notFound(err)
	}
	return &p, nil
}

// inClause expands the one `IN (?)` of query for ids.
func inClause(query string, ids []int64) (string, []any, error) {
	return sqlx.In(query, ids)
}
