package store

import (
	"context"
	"database/sql"

	"github.com/jmoiron/sqlx"
)

// Announcement is an executor's stored announcement. The JSON columns hold the text the caller
// encoded (sdk/announce's stored form); the store never interprets them.
type Announcement struct {
	ExecutorID int64 `db:"executor_id"`
	// Tools is a JSON array of tool entries.
	Tools string `db:"tools"`
	// Environment is a JSON object ("{}" when none was announced).
	Environment string `db:"environment"`
	// Documents is a JSON array of {name, description}.
	Documents string `db:"documents"`
	// AnnouncedAt is Unix ms of the replacement.
	AnnouncedAt int64 `db:"announced_at"`
}

// PutAnnouncement replaces an executor's announcement whole, in one statement.
func PutAnnouncement(ctx context.Context, q Querier, a *Announcement) error {
	_, err := q.Exec(ctx, `INSERT INTO executor_announcements (executor_id, tools, environment, documents, announced_at)
VALUES (?, ?, ?, ?, ?)
ON CONFLICT (executor_id) DO UPDATE SET tools = excluded.tools, environment = excluded.environment,
    documents = excluded.documents, announced_at = excluded.announced_at`,
		a.ExecutorID, a.Tools, a.Environment, a.Documents, a.AnnouncedAt)
	return err
}

// AnnouncementOf reads an executor's announcement; ErrNotFound when it never announced.
func AnnouncementOf(ctx context.Context, q Querier, executorID int64) (*Announcement, error) {
	var a Announcement
	err := q.Get(ctx, &a, `SELECT executor_id, tools, environment, documents, announced_at
FROM executor_announcements WHERE executor_id = ?`, executorID)
	if err != nil {
		return nil, notFound(err)
	}
	return &a, nil
}

// AnnouncedExecutor is an executor with its announcement, NULL columns when it never announced.
type AnnouncedExecutor struct {
	Executor
	Tools       sql.NullString `db:"tools"`
	Environment sql.NullString `db:"environment"`
	Documents   sql.NullString `db:"documents"`
	AnnouncedAt sql.NullInt64  `db:"announced_at"`
}

// AnnouncedExecutorsOf reads the executors of one workspace whose public ids are listed (in
// lowercase UUID form), each with its announcement, in no particular order. Ids of other
// workspaces and unknown ids yield nothing.
func AnnouncedExecutorsOf(ctx context.Context, q Querier, workspaceID int64, publicIDs []string) ([]AnnouncedExecutor, error) {
	if len(publicIDs) == 0 {
		return nil, nil
	}
	query, args, err := sqlx.In(`SELECT `+executorColumns+`, a.tools, a.environment, a.documents, a.announced_at
FROM executors e JOIN workspaces w ON w.id = e.workspace_id
LEFT JOIN executor_announcements a ON a.executor_id = e.id
WHERE e.workspace_id = ? AND e.public_id IN (?)`, workspaceID, IDs(publicIDs))
	if err != nil {
		return nil, err
	}
	var out []AnnouncedExecutor
	err = q.Select(ctx, &out, query, args...)
	return out, err
}

// AnnouncedToolProviders reads the active tool providers of one workspace that have announced,
// each with its announcement, in public id order: the pool a tool-provider import reads.
func AnnouncedToolProviders(ctx context.Context, q Querier, workspaceID int64) ([]AnnouncedExecutor, error) {
	var out []AnnouncedExecutor
	err := q.Select(ctx, &out, `SELECT `+executorColumns+`, a.tools, a.environment, a.documents, a.announced_at
FROM executors e JOIN workspaces w ON w.id = e.workspace_id
JOIN executor_announcements a ON a.executor_id = e.id
WHERE e.workspace_id = ? AND e.kind = ? AND e.status = ?
ORDER BY e.public_id`, workspaceID, ExecutorToolProvider, ExecutorActive)
	return out, err
}
