package store

import (
	"context"
	"database/sql"
	"strings"
)

// ServedTool is one name an executor currently announces, as addressing reads it.
type ServedTool struct {
	ExecutorID  int64  `db:"executor_id"`
	WorkspaceID int64  `db:"workspace_id"`
	Name        string `db:"name"`
	// Profile is the announced effect profile, stored JSON.
	Profile string `db:"profile"`
	// TimeoutMS is the announced park budget; nil when none was announced.
	TimeoutMS *int64 `db:"timeout_ms"`
	// FrozenTarget and FrozenProfile are what a row addressed to this executor for this name
	// freezes (its target and effect profile, stored JSON), which CreateRun's Served rows take;
	// "" stores NULL, which CreateRun does not take.
	FrozenTarget  string `db:"frozen_target"`
	FrozenProfile string `db:"frozen_profile"`
	// DefinitionDigest is the name's definition digest (sdk/announce.DefinitionDigest), which a
	// pinned call's claim compares; "" stores NULL.
	DefinitionDigest string `db:"definition_digest"`
}

// servedInsertBatch bounds the rows of one multi-row insert: 512 tools (the announcement
// bound) go in a few statements, each well under SQLite's 32,766 bound parameters (eight a row).
const servedInsertBatch = 128

// ReplaceServedTools replaces an executor's served names whole, in the caller's transaction,
// beside the announcement it derives from.
func ReplaceServedTools(ctx context.Context, q Querier, executorID int64, tools []ServedTool) error {
	if _, err := q.Exec(ctx, `DELETE FROM executor_served_tools WHERE executor_id = ?`, executorID); err != nil {
		return err
	}
	for start := 0; start < len(tools); start += servedInsertBatch {
		batch := tools[start:min(start+servedInsertBatch, len(tools))]
		var b strings.Builder
		b.WriteString(`INSERT INTO executor_served_tools (executor_id, workspace_id, name, profile, timeout_ms, frozen_target, frozen_profile, definition_digest) VALUES `)
		args := make([]any, 0, 8*len(batch))
		for i, t := range batch {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString("(?, ?, ?, ?, ?, ?, ?, ?)")
			args = append(args, executorID, t.WorkspaceID, t.Name, t.Profile, t.TimeoutMS, nullIfEmpty(t.FrozenTarget), nullIfEmpty(t.FrozenProfile),
				nullIfEmpty(t.DefinitionDigest))
		}
		if _, err := q.Exec(ctx, b.String(), args...); err != nil {
			return err
		}
	}
	return nil
}

// Serving is an executor that announces a name, with what it announced for it.
type Serving struct {
	ExecutorID  int64  `db:"executor_id"`
	PublicID    string `db:"public_id"`
	DisplayName string `db:"display_name"`
	Profile     string `db:"profile"`
	TimeoutMS   *int64 `db:"timeout_ms"`
}

// RunnerServing finds the active Runner of the workspace with this public id when it currently
// announces name; ErrNotFound otherwise (unknown, another workspace's, revoked, not a Runner, or
// silent about name).
func RunnerServing(ctx context.Context, q Querier, workspaceID int64, publicID, name string) (*Serving, error) {
	var s Serving
	err := q.Get(ctx, &s, `SELECT e.id AS executor_id, e.public_id, e.display_name, s.profile, s.timeout_ms
FROM executors e JOIN executor_served_tools s ON s.executor_id = e.id
WHERE e.public_id = ? AND e.workspace_id = ? AND e.kind = ? AND e.status = ? AND s.name = ?`,
		ID(publicID), workspaceID, ExecutorRunner, ExecutorActive, name)
	if err != nil {
		return nil, notFound(err)
	}
	return &s, nil
}

// PoolServing lists the active tool providers of the workspace that currently announce name,
// in public id order.
func PoolServing(ctx context.Context, q Querier, workspaceID int64, name string) ([]Serving, error) {
	var out []Serving
	err := q.Select(ctx, &out, `SELECT e.id AS executor_id, e.public_id, e.display_name, s.profile, s.timeout_ms
FROM executor_served_tools s JOIN executors e ON e.id = s.executor_id
WHERE s.workspace_id = ? AND s.name = ? AND e.kind = ? AND e.status = ?
ORDER BY e.public_id`, workspaceID, name, ExecutorToolProvider, ExecutorActive)
	return out, err
}

// ServedDigest reads the definition digest an executor currently announces name with: ok is
// false when it does not announce name, digest "" when the name was announced before digests
// were stored.
func ServedDigest(ctx context.Context, q Querier, executorID int64, name string) (digest string, ok bool, err error) {
	var d []sql.NullString
	if err := q.Select(ctx, &d, `SELECT definition_digest FROM executor_served_tools WHERE executor_id = ? AND name = ?`, executorID, name); err != nil {
		return "", false, err
	}
	if len(d) == 0 {
		return "", false, nil
	}
	return d[0].String, true, nil
}

// Announces reports whether an executor currently announces name.
func Announces(ctx context.Context, q Querier, executorID int64, name string) (bool, error) {
	var n int64
	err := q.Get(ctx, &n, `SELECT COUNT(*) FROM executor_served_tools WHERE executor_id = ? AND name = ?`, executorID, name)
	return n > 0, err
}

// nullIfEmpty is s as a nullable column: NULL for "".
func nullIfEmpty(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}
