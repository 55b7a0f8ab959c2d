package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
)

// MemoryDocument is one document of the kernel's memory store. Content is empty when a read
// asked for the head alone.
type MemoryDocument struct {
	ID          int64          `db:"id"`
	PublicID    string         `db:"public_id"`
	AnchorID    int64          `db:"anchor_id"`
	Name        string         `db:"name"`
	Description sql.NullString `db:"description"`
	Content     string         `db:"content"`
	Bytesize    int64          `db:"bytesize"`
	LockVersion int64          `db:"lock_version"`
	// WrittenAtUS is Unix microseconds, unlike every other stored time: a memory store answers
	// the write time exactly as it was sent, to the microsecond.
	WrittenAtUS int64 `db:"written_at_us"`
}

const (
	memoryHeadColumns = `d.id, d.public_id, d.anchor_id, d.name, d.description, '' AS content, d.bytesize, d.lock_version, d.written_at_us`
	memoryFullColumns = `d.id, d.public_id, d.anchor_id, d.name, d.description, d.content, d.bytesize, d.lock_version, d.written_at_us`
)

func memoryColumns(withContent bool) string {
	if withContent {
		return memoryFullColumns
	}
	return memoryHeadColumns
}

// LockMemoryAnchor finds or creates the anchor of (kind, owner) and locks it for the rest of the
// transaction, so that every mutation of one anchor's documents is serialized
// (docs/agent-tools.md#memory-and-skills). On PostgreSQL the anchor row is locked FOR UPDATE; on
// SQLite the immediate transaction already holds the database's write lock. No statement here can
// fail on a conflict, so a caller's transaction that this joins is never aborted by it.
func LockMemoryAnchor(ctx context.Context, tx *Tx, kind, owner string) (int64, error) {
	lock := ""
	if tx.Dialect() == Postgres {
		lock = ` FOR UPDATE`
	}
	find := `SELECT id FROM memory_anchors WHERE scope_kind = ? AND owner_public_id = ?` + lock
	var id int64
	err := tx.Get(ctx, &id, find, kind, ID(owner))
	if err == nil {
		return id, nil
	}
	if !errors.Is(err, sql.ErrNoRows) {
		return 0, fmt.Errorf("store: lock memory anchor: %w", err)
	}
	// A concurrent first writer of the same anchor makes this insert wait for its commit and
	// then do nothing; the second read then finds (and locks) the row it made.
	if _, err := tx.Exec(ctx, `INSERT INTO memory_anchors (scope_kind, owner_public_id) VALUES (?, ?)
ON CONFLICT (scope_kind, owner_public_id) DO NOTHING`, kind, owner); err != nil {
		return 0, fmt.Errorf("store: create memory anchor: %w", err)
	}
	if err := tx.Get(ctx, &id, find, kind, ID(owner)); err != nil {
		return 0, fmt.Errorf("store: lock memory anchor: %w", err)
	}
	return id, nil
}

// MemoryDocumentAt reads the document name of anchor (kind, owner); a missing anchor or document
// is ErrNotFound.
func MemoryDocumentAt(ctx context.Context, q Querier, kind, owner, name string, withContent bool) (*MemoryDocument, error) {
	var d MemoryDocument
	err := q.Get(ctx, &d, `SELECT `+memoryColumns(withContent)+`
FROM memory_documents d JOIN memory_anchors a ON a.id = d.anchor_id
WHERE a.scope_kind = ? AND a.owner_public_id = ? AND d.name = ?`, kind, ID(owner), name)
	if err != nil {
		return nil, notFound(err)
	}
	return &d, nil
}

// MemoryDocumentIn reads the document name of a locked anchor; missing is ErrNotFound.
func MemoryDocumentIn(ctx context.Context, q Querier, anchorID int64, name string, withContent bool) (*MemoryDocument, error) {
	var d MemoryDocument
	err := q.Get(ctx, &d, `SELECT `+memoryColumns(withContent)+` FROM memory_documents d WHERE d.anchor_id = ? AND d.name = ?`, anchorID, name)
	if err != nil {
		return nil, notFound(err)
	}
	return &d, nil
}

// CountMemoryDocuments counts an anchor's documents.
func CountMemoryDocuments(ctx context.Context, q Querier, anchorID int64) (int, error) {
	var n int
	err := q.Get(ctx, &n, `SELECT COUNT(*) FROM memory_documents WHERE anchor_id = ?`, anchorID)
	return n, err
}

// MemoryPrefix selects the documents whose name starts with Text. Chars is Text's length in
// characters, which SQL's substr counts in both dialects; a zero Chars selects every document.
type MemoryPrefix struct {
	Text  string
	Chars int
}

// MemoryDocuments lists the documents of anchor (kind, owner) under a name prefix, ordered by
// name in byte order. A missing anchor holds nothing.
func MemoryDocuments(ctx context.Context, q Querier, kind, owner string, prefix MemoryPrefix, withContent bool) ([]MemoryDocument, error) {
	query := `SELECT ` + memoryColumns(withContent) + `
FROM memory_documents d JOIN memory_anchors a ON a.id = d.anchor_id
WHERE a.scope_kind = ? AND a.owner_public_id = ?`
	args := []any{kind, ID(owner)}
	if prefix.Chars > 0 {
		// substr is literal, unlike LIKE: %, _ and \ in a prefix match themselves.
		query += ` AND substr(d.name, 1, CAST(? AS INTEGER)) = ?`
		args = append(args, prefix.Chars, prefix.Text)
	}
	query += ` ORDER BY d.name`
	var out []MemoryDocument
	err := q.Select(ctx, &out, query, args...)
	return out, err
}

// InsertMemoryDocument stores d and sets its ID.
func InsertMemoryDocument(ctx context.Context, q Querier, d *MemoryDocument) error {
	return q.Get(ctx, &d.ID, `INSERT INTO memory_documents
(public_id, anchor_id, name, description, content, bytesize, lock_version, written_at_us)
VALUES (?, ?, ?, ?, ?, ?, ?, ?) RETURNING id`,
		d.PublicID, d.AnchorID, d.Name, d.Description, d.Content, d.Bytesize, d.LockVersion, d.WrittenAtUS)
}

// UpdateMemoryDocument rewrites the content, description, size, version and time of the
// document with d.ID.
func UpdateMemoryDocument(ctx context.Context, q Querier, d *MemoryDocument) error {
	_, err := q.Exec(ctx, `UPDATE memory_documents
SET description = ?, content = ?, bytesize = ?, lock_version = ?, written_at_us = ? WHERE id = ?`,
		d.Description, d.Content, d.Bytesize, d.LockVersion, d.WrittenAtUS, d.ID)
	return err
}

// DeleteMemoryDocument removes the document with this row id.
func DeleteMemoryDocument(ctx context.Context, q Querier, id int64) error {
	_, err := q.Exec(ctx, `DELETE FROM memory_documents WHERE id = ?`, id)
	return err
}

// AgentStewardPublicID answers the public id of the steward user of the agent with this public
// id (canonical UUID form), removed or not; an unknown agent is ErrNotFound.
func AgentStewardPublicID(ctx context.Context, q Querier, agentPublicID string) (string, error) {
	var id string
	err := q.Get(ctx, &id, `SELECT u.public_id FROM agents a JOIN users u ON u.id = a.steward_user_id WHERE a.public_id = ?`, ID(agentPublicID))
	if err != nil {
		return "", notFound(err)
	}
	return id, nil
}
