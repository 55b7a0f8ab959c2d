package memory

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/nexuskernel/nexus/core/store"
	memsdk "github.com/nexuskernel/nexus/sdk/memory"
)

// ErrStale is a conditional mutation whose expected document is not the one at the path: it
// changed, was deleted or recreated, or (on a create) the path is occupied. Nothing changed. It
// is sdk/memory's, so a memory plugin's answer and this store's read the same.
var ErrStale = memsdk.ErrStale

// Expect is the state a member door's conditional mutation expects at its path
// (docs/api.md#memory).
type Expect struct {
	// Absent expects no document: a create.
	Absent bool
	// PublicID and LockVersion name the document expected, when Absent is false.
	PublicID    string
	LockVersion int64
}

// expectOf is a Provider call's condition in this store's terms: a document's id is its public
// id and its version its lock version.
func expectOf(e *memsdk.Expect) *Expect {
	if e == nil {
		return nil
	}
	return &Expect{Absent: e.Absent, PublicID: e.ID, LockVersion: int64(e.Version)}
}

// check compares the expectation with the current document (nil when none).
func (e *Expect) check(cur *store.MemoryDocument) error {
	if e == nil {
		return nil
	}
	switch {
	case e.Absent && cur == nil:
		return nil
	case e.Absent:
		return fmt.Errorf("%w: the path holds a document", ErrStale)
	case cur == nil:
		return fmt.Errorf("%w: no document at the path", ErrStale)
	case cur.PublicID != e.PublicID || cur.LockVersion != e.LockVersion:
		return fmt.Errorf("%w: the document is %s at version %d", ErrStale, cur.PublicID, cur.LockVersion)
	}
	return nil
}

// putOptions adjust a write beyond the Provider contract, for the member doors.
type putOptions struct {
	expect *Expect
	// setDescription replaces the stored description with description (nil clears it). Without
	// it a replace keeps the description and a create stores none.
	setDescription bool
	description    *string
}

// current reads the document at name in a locked anchor, nil when there is none.
func current(ctx context.Context, tx *store.Tx, anchorID int64, name string, withContent bool) (*store.MemoryDocument, error) {
	cur, err := store.MemoryDocumentIn(ctx, tx, anchorID, name, withContent)
	if errors.Is(err, store.ErrNotFound) {
		return nil, nil
	}
	return cur, err
}

func nullString(s *string) sql.NullString {
	if s == nil {
		return sql.NullString{}
	}
	return sql.NullString{String: *s, Valid: true}
}

// put creates or replaces a document under its anchor's lock. The caller has checked the scope,
// the name, the access and the content.
func (s *Store) put(ctx context.Context, scope memsdk.Scope, name, content string, at time.Time, opt putOptions) (*store.MemoryDocument, bool, error) {
	var out *store.MemoryDocument
	created := false
	err := s.write(ctx, func(tx *store.Tx) error {
		anchorID, err := store.LockMemoryAnchor(ctx, tx, string(scope.Kind), scope.OwnerID)
		if err != nil {
			return err
		}
		cur, err := current(ctx, tx, anchorID, name, false)
		if err != nil {
			return err
		}
		if err := opt.expect.check(cur); err != nil {
			return err
		}
		if cur != nil {
			cur.Content, cur.Bytesize = content, int64(len(content))
			cur.LockVersion++
			cur.WrittenAtUS = microsOf(at)
			if opt.setDescription {
				cur.Description = nullString(opt.description)
			}
			out = cur
			return store.UpdateMemoryDocument(ctx, tx, cur)
		}
		n, err := store.CountMemoryDocuments(ctx, tx, anchorID)
		if err != nil {
			return err
		}
		if n >= memsdk.MaxDocumentsPerAnchor {
			return fmt.Errorf("%w: the anchor holds %d documents", memsdk.ErrFull, n)
		}
		d := &store.MemoryDocument{
			PublicID: store.NewPublicID(), AnchorID: anchorID, Name: name,
			Content: content, Bytesize: int64(len(content)), LockVersion: 1, WrittenAtUS: microsOf(at),
		}
		if opt.setDescription {
			d.Description = nullString(opt.description)
		}
		out, created = d, true
		return store.InsertMemoryDocument(ctx, tx, d)
	})
	if err != nil {
		return nil, false, failure(err)
	}
	return out, created, nil
}

// edit replaces the one occurrence of oldText under the anchor's lock, keeping the document's
// description. With an expectation, a missing document is ErrStale rather than ErrNotFound, and
// the condition is checked before the text is matched.
func (s *Store) edit(ctx context.Context, scope memsdk.Scope, name, oldText, newText string, at time.Time, expect *Expect) (*store.MemoryDocument, error) {
	var out *store.MemoryDocument
	err := s.write(ctx, func(tx *store.Tx) error {
		anchorID, err := store.LockMemoryAnchor(ctx, tx, string(scope.Kind), scope.OwnerID)
		if err != nil {
			return err
		}
		cur, err := current(ctx, tx, anchorID, name, true)
		if err != nil {
			return err
		}
		if err := expect.check(cur); err != nil {
			return err
		}
		if cur == nil {
			return memsdk.ErrNotFound
		}
		content, err := memsdk.ApplyEdit(cur.Content, oldText, newText)
		if err != nil {
			return err
		}
		cur.Content, cur.Bytesize = content, int64(len(content))
		cur.LockVersion++
		cur.WrittenAtUS = microsOf(at)
		out = cur
		return store.UpdateMemoryDocument(ctx, tx, cur)
	})
	if err != nil {
		return nil, failure(err)
	}
	return out, nil
}

// remove deletes a document under the anchor's lock.
func (s *Store) remove(ctx context.Context, scope memsdk.Scope, name string, expect *Expect) error {
	err := s.write(ctx, func(tx *store.Tx) error {
		anchorID, err := store.LockMemoryAnchor(ctx, tx, string(scope.Kind), scope.OwnerID)
		if err != nil {
			return err
		}
		cur, err := current(ctx, tx, anchorID, name, false)
		if err != nil {
			return err
		}
		if err := expect.check(cur); err != nil {
			return err
		}
		if cur == nil {
			return memsdk.ErrNotFound
		}
		return store.DeleteMemoryDocument(ctx, tx, cur.ID)
	})
	return failure(err)
}
