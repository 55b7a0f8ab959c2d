package store

import (
	"context"
	"database/sql"
	"errors"
	"strings"

	"github.com/nexuskernel/nexus/internal/memo"
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
}

// servedInsertBatch bounds the rows of one multi-row insert: 512 tools (the announcement
// bound) go in a few statements, each well under SQLite's 32,766 bound parameters.
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
		b.WriteString(`INSERT INTO executor_served_tools (executor_id, workspace_id, name, profile, timeout_ms) VALUES `)
		args := make([]any, 0, 5*len(batch))
		for i, t := range batch {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString("(?, ?, ?, ?, ?)")
			args = append(args, executorID, t.WorkspaceID, t.Name, t.Profile, t.TimeoutMS)
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
//
// A planned write (Tx.Planning) takes the answer from the store's cache of served tools when it
// holds one, and its statement then checks that the row still reads the same (servingGuard): a
// stale entry costs the plan, never a wrong row, and the transaction the caller falls back to
// reads the row afresh and refreshes the entry. Any other reader reads the row.
func RunnerServing(ctx context.Context, q Querier, workspaceID int64, publicID, name string) (*Serving, error) {
	tx, _ := q.(*Tx)
	key := servingKey{workspaceID, publicID, name}
	if tx.Planning() {
		if s, ok := tx.st.serving.get(key); ok {
			tx.Require(servingGuard, s.guardArgs(workspaceID, name)...)
			return &s, nil
		}
	}
	var s Serving
	err := q.Get(ctx, &s, `SELECT e.id AS executor_id, e.public_id, e.display_name, s.profile, s.timeout_ms
FROM executors e JOIN executor_served_tools s ON s.executor_id = e.id
WHERE e.public_id = ? AND e.workspace_id = ? AND e.kind = ? AND e.status = ? AND s.name = ?`,
		publicID, workspaceID, ExecutorRunner, ExecutorActive, name)
	if tx != nil && q.Dialect() == Postgres {
		switch {
		case err == nil:
			tx.st.serving.put(key, s)
			tx.Require(servingGuard, s.guardArgs(workspaceID, name)...)
		case errors.Is(err, sql.ErrNoRows):
			tx.st.serving.drop(key)
		}
	}
	if err != nil {
		return nil, notFound(err)
	}
	return &s, nil
}

// servingGuard is RunnerServing's read as a planned write's guard: the Runner is still active and
// announces the name with the same profile and budget under the same display name.
const servingGuard = `EXISTS (SELECT 1 FROM executors e JOIN executor_served_tools s ON s.executor_id = e.id
WHERE e.id = ? AND e.public_id = ? AND e.workspace_id = ? AND e.kind = ? AND e.status = ? AND e.display_name = ?
AND s.name = ? AND s.profile = ? AND s.timeout_ms IS NOT DISTINCT FROM ?)`

func (s *Serving) guardArgs(workspaceID int64, name string) []any {
	return []any{s.ExecutorID, s.PublicID, workspaceID, ExecutorRunner, ExecutorActive, s.DisplayName, name, s.Profile, s.TimeoutMS}
}

// maxServingCache bounds the served-tools cache: an entry is a few hundred bytes, and a server
// addresses far fewer (Runner, tool) pairs than this between two announcements; a full cache is
// emptied rather than tracked for recency, since refilling costs one read per pair.
const maxServingCache = 4096

type servingKey struct {
	workspaceID int64
	publicID    string
	name        string
}

// servingCache remembers what RunnerServing last read per (workspace, Runner, name), for
// planned writes (PostgreSQL; on SQLite its bound is zero and it remembers nothing). It needs no
// invalidation: a planned write checks every entry it uses.
type servingCache struct {
	m memo.Map[servingKey, Serving]
}

// get and put copy the entry, so that no caller shares its budget pointer with the cache.
func (c *servingCache) get(k servingKey) (Serving, bool) {
	s, ok := c.m.Get(k)
	return s.clone(), ok
}

func (c *servingCache) put(k servingKey, s Serving) { c.m.Put(k, s.clone()) }

func (c *servingCache) drop(k servingKey) { c.m.Delete(k) }

func (s Serving) clone() Serving {
	if s.TimeoutMS != nil {
		t := *s.TimeoutMS
		s.TimeoutMS = &t
	}
	return s
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

// Announces reports whether an executor currently announces name.
func Announces(ctx context.Context, q Querier, executorID int64, name string) (bool, error) {
	var n int64
	err := q.Get(ctx, &n, `SELECT COUNT(*) FROM executor_served_tools WHERE executor_id = ? AND name = ?`, executorID, name)
	return n > 0, err
}
