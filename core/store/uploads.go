package store

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/jmoiron/sqlx"
)

// Upload creator kinds (docs/api.md#uploads): a member (user, agent) or an executor (runner,
// tool_provider, the latter's uploads being captures).
const (
	UploadCreatorUser         = "user"
	UploadCreatorAgent        = "agent"
	UploadCreatorRunner       = ExecutorRunner
	UploadCreatorToolProvider = ExecutorToolProvider
)

// Upload binding target kinds: what keeps an upload alive (docs/api.md#uploads).
const (
	BindingTaskResult = "task_result"
	BindingTaskInput  = "task_input"
	BindingTurnInput  = "turn_input"
)

// Upload is one row of uploads. ContentType and SHA256 are null, and CompletedAt too, until the
// last chunk is in.
type Upload struct {
	ID                int64          `db:"id"`
	PublicID          string         `db:"public_id"`
	CreatorKind       string         `db:"creator_kind"`
	CreatorUserID     sql.NullInt64  `db:"creator_user_id"`
	CreatorAgentID    sql.NullInt64  `db:"creator_agent_id"`
	CreatorExecutorID sql.NullInt64  `db:"creator_executor_id"`
	CreatorPublicID   string         `db:"creator_public_id"`
	Filename          string         `db:"filename"`
	ContentType       sql.NullString `db:"content_type"`
	ByteSize          int64          `db:"byte_size"`
	SHA256            sql.NullString `db:"sha256"`
	CreatedAt         int64          `db:"created_at"`
	CompletedAt       sql.NullInt64  `db:"completed_at"`
	// ImageWidth and ImageHeight are an image's dimensions once read from its header.
	ImageWidth  sql.NullInt64 `db:"image_width"`
	ImageHeight sql.NullInt64 `db:"image_height"`
	// Bound reports whether any row binds the upload (read, not stored).
	Bound bool `db:"bound"`
}

const uploadColumns = `u.id, u.public_id, u.creator_kind, u.creator_user_id, u.creator_agent_id, u.creator_executor_id,
       u.creator_public_id, u.filename, u.content_type, u.byte_size, u.sha256, u.created_at, u.completed_at,
       u.image_width, u.image_height,
       EXISTS (SELECT 1 FROM upload_bindings b WHERE b.upload_id = u.id) AS bound`

// InsertUpload stores u (Bound is ignored) and sets its ID.
func InsertUpload(ctx context.Context, q Querier, u *Upload) error {
	return q.Get(ctx, &u.ID, `INSERT INTO uploads (public_id, creator_kind, creator_user_id, creator_agent_id, creator_executor_id,
    creator_public_id, filename, content_type, byte_size, sha256, created_at, completed_at)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id`,
		u.PublicID, u.CreatorKind, u.CreatorUserID, u.CreatorAgentID, u.CreatorExecutorID,
		u.CreatorPublicID, u.Filename, u.ContentType, u.ByteSize, u.SHA256, u.CreatedAt, u.CompletedAt)
}

// InsertUploadChunk stores one chunk of an upload's bytes.
func InsertUploadChunk(ctx context.Context, q Querier, uploadID int64, seq int64, data []byte) error {
	_, err := q.Exec(ctx, `INSERT INTO upload_chunks (upload_id, seq, data) VALUES (?, ?, ?)`, uploadID, seq, data)
	return err
}

// CompleteUpload marks an incomplete upload complete with its measured size, digest and detected
// type, and reports whether the row was still there to complete (the sweeper may have reclaimed
// an upload whose client stalled for a day).
func CompleteUpload(ctx context.Context, q Querier, uploadID, byteSize int64, sha256, contentType string, at int64) (bool, error) {
	res, err := q.Exec(ctx, `UPDATE uploads SET byte_size = ?, sha256 = ?, content_type = ?, completed_at = ?
WHERE id = ? AND completed_at IS NULL`, byteSize, sha256, contentType, at, uploadID)
	if err != nil {
		return false, err
	}
	n, err := res.RowsAffected()
	return n == 1, err
}

// DeleteUploads deletes uploads and their chunks. A bound upload cannot be deleted: its bindings
// reference it, so the statement fails instead.
func DeleteUploads(ctx context.Context, q Querier, uploadIDs []int64) error {
	if len(uploadIDs) == 0 {
		return nil
	}
	for _, stmt := range []string{`DELETE FROM upload_chunks WHERE upload_id IN (?)`, `DELETE FROM uploads WHERE id IN (?)`} {
		query, args, err := inClause(stmt, uploadIDs)
		if err != nil {
			return err
		}
		if _, err := q.Exec(ctx, query, args...); err != nil {
			return err
		}
	}
	return nil
}

// CompleteUploadByPublicID reads a complete upload by public id (canonical UUID form); an
// incomplete or absent one is ErrNotFound.
func CompleteUploadByPublicID(ctx context.Context, q Querier, publicID string) (*Upload, error) {
	var u Upload
	err := q.Get(ctx, &u, `SELECT `+uploadColumns+` FROM uploads u WHERE u.public_id = ? AND u.completed_at IS NOT NULL`, ID(publicID))
	if err != nil {
		return nil, notFound(err)
	}
	return &u, nil
}

// LockCompleteUploads reads the complete uploads among publicIDs (canonical UUID form) and, on
// PostgreSQL, locks their rows FOR SHARE until tx ends, in id order: a row a binder holds is
// never one the sweeper reclaims (it locks FOR UPDATE SKIP LOCKED), and a row the sweeper holds
// makes the binder wait and then find it gone. On SQLite the immediate transaction is the lock.
func LockCompleteUploads(ctx context.Context, tx *Tx, publicIDs []string) ([]Upload, error) {
	if len(publicIDs) == 0 {
		return nil, nil
	}
	lock := ""
	if tx.Dialect() == Postgres {
		lock = ` FOR SHARE OF u`
	}
	query, args, err := expandIn(`SELECT `+uploadColumns+` FROM uploads u
WHERE u.public_id IN (?) AND u.completed_at IS NOT NULL ORDER BY u.id`+lock, IDs(publicIDs))
	if err != nil {
		return nil, err
	}
	var out []Upload
	if err := tx.Select(ctx, &out, query, args...); err != nil {
		return nil, err
	}
	return out, nil
}

// CompleteUploadsByPublicIDs reads the complete uploads among publicIDs, without locking.
func CompleteUploadsByPublicIDs(ctx context.Context, q Querier, publicIDs []string) ([]Upload, error) {
	if len(publicIDs) == 0 {
		return nil, nil
	}
	query, args, err := expandIn(`SELECT `+uploadColumns+` FROM uploads u
WHERE u.public_id IN (?) AND u.completed_at IS NOT NULL ORDER BY u.id`, IDs(publicIDs))
	if err != nil {
		return nil, err
	}
	var out []Upload
	if err := q.Select(ctx, &out, query, args...); err != nil {
		return nil, err
	}
	return out, nil
}

// UploadBinding is one row that keeps an upload alive.
type UploadBinding struct {
	UploadID    int64  `db:"upload_id"`
	TargetKind  string `db:"target_kind"`
	TargetID    int64  `db:"target_id"`
	WorkspaceID int64  `db:"workspace_id"`
	BoundAt     int64  `db:"bound_at"`
}

// InsertUploadBinding binds an upload to a target; binding the same upload to the same target
// twice changes nothing.
func InsertUploadBinding(ctx context.Context, q Querier, b *UploadBinding) error {
	_, err := q.Exec(ctx, `INSERT INTO upload_bindings (upload_id, target_kind, target_id, workspace_id, bound_at)
VALUES (?, ?, ?, ?, ?) ON CONFLICT (upload_id, target_kind, target_id) DO NOTHING`,
		b.UploadID, b.TargetKind, b.TargetID, b.WorkspaceID, b.BoundAt)
	return err
}

// UploadBindings lists the bindings of an upload, in no particular order.
func UploadBindings(ctx context.Context, q Querier, uploadID int64) ([]UploadBinding, error) {
	var out []UploadBinding
	err := q.Select(ctx, &out, `SELECT upload_id, target_kind, target_id, workspace_id, bound_at FROM upload_bindings WHERE upload_id = ?`, uploadID)
	return out, err
}

// UploadsBoundTo returns which of the complete uploads among publicIDs are bound to one of the
// targets of kind, locking them FOR SHARE on PostgreSQL like LockCompleteUploads.
func UploadsBoundTo(ctx context.Context, tx *Tx, kind string, targetIDs []int64, publicIDs []string) ([]Upload, error) {
	if len(publicIDs) == 0 || len(targetIDs) == 0 {
		return nil, nil
	}
	lock := ""
	if tx.Dialect() == Postgres {
		lock = ` FOR SHARE OF u`
	}
	query, args, err := expandIn(`SELECT `+uploadColumns+` FROM uploads u
WHERE u.public_id IN (?) AND u.completed_at IS NOT NULL
  AND EXISTS (SELECT 1 FROM upload_bindings t WHERE t.upload_id = u.id AND t.target_kind = ? AND t.target_id IN (?))
ORDER BY u.id`+lock, IDs(publicIDs), kind, targetIDs)
	if err != nil {
		return nil, err
	}
	var out []Upload
	if err := tx.Select(ctx, &out, query, args...); err != nil {
		return nil, err
	}
	return out, nil
}

// UploadReadableByUser reports whether a binding of the upload lies in a workspace the user is a
// member of.
func UploadReadableByUser(ctx context.Context, q Querier, uploadID, userID int64) (bool, error) {
	var ok bool
	err := q.Get(ctx, &ok, `SELECT EXISTS (SELECT 1 FROM upload_bindings b JOIN workspace_members m ON m.workspace_id = b.workspace_id
WHERE b.upload_id = ? AND m.user_id = ?)`, uploadID, userID)
	return ok, err
}

// UploadBoundInWorkspace reports whether a binding of the upload lies in the workspace.
func UploadBoundInWorkspace(ctx context.Context, q Querier, uploadID, workspaceID int64) (bool, error) {
	var ok bool
	err := q.Get(ctx, &ok, `SELECT EXISTS (SELECT 1 FROM upload_bindings b WHERE b.upload_id = ? AND b.workspace_id = ?)`, uploadID, workspaceID)
	return ok, err
}

// UploadChunk reads one chunk's bytes; a missing chunk is ErrNotFound.
func UploadChunk(ctx context.Context, q Querier, uploadID, seq int64) ([]byte, error) {
	var data []byte
	if err := q.Get(ctx, &data, `SELECT data FROM upload_chunks WHERE upload_id = ? AND seq = ?`, uploadID, seq); err != nil {
		return nil, notFound(err)
	}
	return data, nil
}

// UploadChunkCount counts the chunks stored for an upload.
func UploadChunkCount(ctx context.Context, q Querier, uploadID int64) (int64, error) {
	var n int64
	err := q.Get(ctx, &n, `SELECT COUNT(*) FROM upload_chunks WHERE upload_id = ?`, uploadID)
	return n, err
}

// LockReclaimableUploads takes up to limit uploads created at or before cutoff that nothing
// binds, complete or not, and returns their ids. On PostgreSQL they are locked FOR UPDATE SKIP
// LOCKED: a row a binder holds FOR SHARE, or another sweeper holds, is passed over, never waited
// for. Because a binder that committed after this statement's snapshot is invisible to it, the
// caller must check the locked rows again with UnboundAmong before deleting them.
func LockReclaimableUploads(ctx context.Context, tx *Tx, cutoff int64, limit int) ([]int64, error) {
	lock := ""
	if tx.Dialect() == Postgres {
		lock = ` FOR UPDATE OF u SKIP LOCKED`
	}
	var ids []int64
	err := tx.Select(ctx, &ids, `SELECT u.id FROM uploads u
WHERE u.created_at <= ? AND NOT EXISTS (SELECT 1 FROM upload_bindings b WHERE b.upload_id = u.id)
ORDER BY u.created_at, u.id LIMIT ?`+lock, cutoff, limit)
	return ids, err
}

// UnboundAmong returns the ids among uploadIDs that nothing binds, read by a new statement (on
// PostgreSQL at READ COMMITTED, a fresh snapshot that sees every binder that committed before
// the caller's lock was granted).
func UnboundAmong(ctx context.Context, q Querier, uploadIDs []int64) ([]int64, error) {
	if len(uploadIDs) == 0 {
		return nil, nil
	}
	query, args, err := inClause(`SELECT u.id FROM uploads u
WHERE u.id IN (?) AND NOT EXISTS (SELECT 1 FROM upload_bindings b WHERE b.upload_id = u.id) ORDER BY u.id`, uploadIDs)
	if err != nil {
		return nil, err
	}
	var out []int64
	err = q.Select(ctx, &out, query, args...)
	return out, err
}

// expandIn expands every `IN (?)` of query whose argument is a slice.
func expandIn(query string, args ...any) (string, []any, error) {
	q, a, err := sqlx.In(query, args...)
	if err != nil {
		return "", nil, fmt.Errorf("store: expand IN: %w", err)
	}
	return q, a, nil
}

// SetImageSize keeps an image upload's dimensions, read once from its header.
func SetImageSize(ctx context.Context, q Querier, uploadID, width, height int64) error {
	_, err := q.Exec(ctx, `UPDATE uploads SET image_width = ?, image_height = ? WHERE id = ?`, width, height, uploadID)
	return err
}

// InsertMediaRefusal remembers that a provider refused an upload for a model; remembering it
// twice changes nothing.
func InsertMediaRefusal(ctx context.Context, q Querier, uploadPublicID, modelRef string, at int64) error {
	_, err := q.Exec(ctx, `INSERT INTO media_refusals (upload_public_id, model_ref, created_at) VALUES (?, ?, ?)
ON CONFLICT (upload_public_id, model_ref) DO NOTHING`, uploadPublicID, modelRef, at)
	return err
}

// MediaRefusals are the uploads among publicIDs a provider refused for the model.
func MediaRefusals(ctx context.Context, q Querier, modelRef string, publicIDs []string) (map[string]bool, error) {
	out := map[string]bool{}
	if len(publicIDs) == 0 {
		return out, nil
	}
	query, args, err := expandIn(`SELECT upload_public_id FROM media_refusals WHERE model_ref = ? AND upload_public_id IN (?)`, modelRef, publicIDs)
	if err != nil {
		return nil, err
	}
	var ids []string
	if err := q.Select(ctx, &ids, query, args...); err != nil {
		return nil, err
	}
	for _, id := range ids {
		out[id] = true
	}
	return out, nil
}
