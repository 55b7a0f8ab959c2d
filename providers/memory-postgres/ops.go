package memorypostgres

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/nexuskernel/nexus/sdk/memory"
)

// checkTarget applies the contract's first checks: scope, name, then access for a mutation.
func checkTarget(s memory.Scope, name string, mutation bool) error {
	if err := memory.ValidScope(s); err != nil {
		return err
	}
	if err := memory.ValidName(name); err != nil {
		return err
	}
	if mutation && !s.Writable() {
		return fmt.Errorf("%w: %s scope", memory.ErrReadOnly, s.Binding)
	}
	return nil
}

// checkContent refuses content no store keeps, before any SQL.
func checkContent(content string) error {
	if err := memory.CheckContent(content); err != nil {
		return err
	}
	if len(content) > memory.MaxDocumentBytes {
		return fmt.Errorf("%w: %d bytes", memory.ErrTooLarge, len(content))
	}
	return nil
}

// likePrefix turns a literal name prefix into a LIKE pattern: %, _ and \ match themselves.
func likePrefix(prefix string) string {
	r := strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`)
	return r.Replace(prefix) + "%"
}

type docRow struct {
	Name      string    `db:"name"`
	Content   string    `db:"content"`
	SizeBytes int64     `db:"size_bytes"`
	WrittenAt time.Time `db:"written_at"`
	Version   uint64    `db:"version"`
	// ID is "" for a row written before ids were kept, until its next write.
	ID string `db:"id"`
}

func (r docRow) entry() memory.Entry {
	return memory.Entry{Name: r.Name, SizeBytes: r.SizeBytes, WrittenAt: r.WrittenAt.UTC(), Version: r.Version, ID: r.ID}
}

// state is a locked document's version and id.
type state struct {
	Content string `db:"content"`
	Version uint64 `db:"version"`
	ID      string `db:"id"`
}

func (s *state) entry(name string) *memory.Entry {
	return &memory.Entry{Name: name, Version: s.Version, ID: s.ID}
}

// keptID is the id a replace or edit keeps: the document's own, or a new one for a row
// written before ids were kept.
func keptID(id string) string {
	if id == "" {
		return memory.NewID()
	}
	return id
}

// Ls implements memory.Provider.
func (s *Store) Ls(ctx context.Context, req *memory.LsRequest) (*memory.LsResponse, error) {
	if err := memory.ValidScope(req.Scope); err != nil {
		return nil, err
	}
	var rows []docRow
	if err := s.db.SelectContext(ctx, &rows, s.q.ls, req.Scope.Kind, req.Scope.OwnerID, likePrefix(req.NamePrefix)); err != nil {
		return nil, unavailable("ls", err)
	}
	resp := &memory.LsResponse{}
	for _, r := range rows {
		resp.Entries = append(resp.Entries, r.entry())
	}
	return resp, nil
}

// Read implements memory.Provider.
func (s *Store) Read(ctx context.Context, req *memory.ReadRequest) (*memory.ReadResponse, error) {
	if err := checkTarget(req.Scope, req.Name, false); err != nil {
		return nil, err
	}
	var r docRow
	err := s.db.GetContext(ctx, &r, s.q.readDoc, req.Scope.Kind, req.Scope.OwnerID, req.Name)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, memory.ErrNotFound
	}
	if err != nil {
		return nil, unavailable("read", err)
	}
	return &memory.ReadResponse{Entry: r.entry(), Content: r.Content}, nil
}

// Grep implements memory.Provider: the candidates stream in name order and match in Go; the
// context's deadline cancels the query and is checked between documents and lines.
func (s *Store) Grep(ctx context.Context, req *memory.GrepRequest) (*memory.GrepResponse, error) {
	if err := memory.ValidScope(req.Scope); err != nil {
		return nil, err
	}
	matcher, err := memory.NewMatcher(req)
	if err != nil {
		return nil, err
	}
	if err := memory.CheckDeadline(ctx); err != nil {
		return nil, err
	}
	rows, err := s.db.QueryxContext(ctx, s.q.grep, req.Scope.Kind, req.Scope.OwnerID, likePrefix(req.NamePrefix))
	if err != nil {
		return nil, grepFailure(ctx, err)
	}
	defer func() { _ = rows.Close() }()
	for rows.Next() {
		var name, content string
		if err := rows.Scan(&name, &content); err != nil {
			return nil, grepFailure(ctx, err)
		}
		done, err := matcher.Scan(ctx, name, content)
		if err != nil {
			return nil, err
		}
		if done {
			break
		}
	}
	if err := rows.Err(); err != nil {
		return nil, grepFailure(ctx, err)
	}
	return matcher.Response(), nil
}

// grepFailure is ErrPatternTooCostly once the budget has passed (the query was cancelled by
// it), else the database's failure.
func grepFailure(ctx context.Context, err error) error {
	if derr := memory.CheckDeadline(ctx); derr != nil {
		return derr
	}
	return unavailable("grep", err)
}

// lockAnchor creates the anchor's row when missing and locks it: the row is the anchor's
// serialization point and holds its document count.
func (s *Store) lockAnchor(ctx context.Context, tx *sqlx.Tx, scope memory.Scope) (int, error) {
	if _, err := tx.ExecContext(ctx, s.q.upsertAnchor, scope.Kind, scope.OwnerID); err != nil {
		return 0, unavailable("anchor", err)
	}
	var count int
	if err := tx.GetContext(ctx, &count, s.q.lockAnchor, scope.Kind, scope.OwnerID); err != nil {
		return 0, unavailable("lock anchor", err)
	}
	return count, nil
}

// Write implements memory.Provider.
func (s *Store) Write(ctx context.Context, req *memory.WriteRequest) (*memory.WriteResponse, error) {
	if err := checkTarget(req.Scope, req.Name, true); err != nil {
		return nil, err
	}
	if err := checkContent(req.Content); err != nil {
		return nil, err
	}
	at := memory.StoredTime(req.WrittenAt)
	var resp *memory.WriteResponse
	err := s.inTx(ctx, func(tx *sqlx.Tx) error {
		count, err := s.lockAnchor(ctx, tx, req.Scope)
		if err != nil {
			return err
		}
		k, o := req.Scope.Kind, req.Scope.OwnerID
		var cur state
		err = tx.GetContext(ctx, &cur, s.q.docVersion, k, o, req.Name)
		switch {
		case err == nil:
			if err := req.Expect.Check(cur.entry(req.Name)); err != nil {
				return err
			}
			id := keptID(cur.ID)
			var next uint64
			if err := tx.GetContext(ctx, &next, s.q.updateDoc, k, o, req.Name, req.Content, len(req.Content), at, cur.Version, id); err != nil {
				return sqlFailure("replace", err) // the anchor lock makes a lost race impossible
			}
			resp = &memory.WriteResponse{Entry: memory.Entry{Name: req.Name, SizeBytes: int64(len(req.Content)), WrittenAt: at, Version: next, ID: id}}
			return nil
		case !errors.Is(err, sql.ErrNoRows):
			return unavailable("write", err)
		}
		if err := req.Expect.Check(nil); err != nil {
			return err
		}
		if count >= memory.MaxDocumentsPerAnchor {
			return memory.ErrFull
		}
		id := memory.NewID()
		if _, err := tx.ExecContext(ctx, s.q.insertDoc, k, o, req.Name, req.Content, len(req.Content), at, id); err != nil {
			return unavailable("create", err)
		}
		if _, err := tx.ExecContext(ctx, s.q.bumpCount, k, o, 1); err != nil {
			return unavailable("count", err)
		}
		resp = &memory.WriteResponse{Entry: memory.Entry{Name: req.Name, SizeBytes: int64(len(req.Content)), WrittenAt: at, Version: 1, ID: id}, Created: true}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return resp, nil
}

// Edit implements memory.Provider.
func (s *Store) Edit(ctx context.Context, req *memory.EditRequest) (*memory.EditResponse, error) {
	if err := checkTarget(req.Scope, req.Name, true); err != nil {
		return nil, err
	}
	if err := memory.CheckContent(req.NewText); err != nil {
		return nil, err
	}
	if req.OldText == "" {
		return nil, fmt.Errorf("%w: empty edit text", memory.ErrInvalidArgument)
	}
	at := memory.StoredTime(req.WrittenAt)
	var resp *memory.EditResponse
	// A zero-row update (which the anchor lock should prevent) is retried once.
	for attempt := 0; attempt < 2 && resp == nil; attempt++ {
		err := s.inTx(ctx, func(tx *sqlx.Tx) error {
			if _, err := s.lockAnchor(ctx, tx, req.Scope); err != nil {
				return err
			}
			k, o := req.Scope.Kind, req.Scope.OwnerID
			var cur state
			if err := tx.GetContext(ctx, &cur, s.q.lockDoc, k, o, req.Name); errors.Is(err, sql.ErrNoRows) {
				if err := req.Expect.Check(nil); err != nil {
					return err
				}
				return memory.ErrNotFound
			} else if err != nil {
				return unavailable("edit", err)
			}
			if err := req.Expect.Check(cur.entry(req.Name)); err != nil {
				return err
			}
			content, err := memory.ApplyEdit(cur.Content, req.OldText, req.NewText)
			if err != nil {
				return err
			}
			id := keptID(cur.ID)
			var next uint64
			err = tx.GetContext(ctx, &next, s.q.updateDoc, k, o, req.Name, content, len(content), at, cur.Version, id)
			if errors.Is(err, sql.ErrNoRows) {
				return nil // lost a race: retry
			}
			if err != nil {
				return unavailable("edit", err)
			}
			resp = &memory.EditResponse{Entry: memory.Entry{Name: req.Name, SizeBytes: int64(len(content)), WrittenAt: at, Version: next, ID: id}}
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	if resp == nil {
		return nil, fmt.Errorf("%w: memorypostgres: the document changed under its anchor lock", memory.ErrUnavailable)
	}
	return resp, nil
}

// Delete implements memory.Provider.
func (s *Store) Delete(ctx context.Context, req *memory.DeleteRequest) (*memory.DeleteResponse, error) {
	if err := checkTarget(req.Scope, req.Name, true); err != nil {
		return nil, err
	}
	err := s.inTx(ctx, func(tx *sqlx.Tx) error {
		if _, err := s.lockAnchor(ctx, tx, req.Scope); err != nil {
			return err
		}
		k, o := req.Scope.Kind, req.Scope.OwnerID
		if req.Expect != nil {
			var cur state
			err := tx.GetContext(ctx, &cur, s.q.lockDoc, k, o, req.Name)
			switch {
			case errors.Is(err, sql.ErrNoRows):
				if err := req.Expect.Check(nil); err != nil {
					return err
				}
			case err != nil:
				return unavailable("delete", err)
			default:
				if err := req.Expect.Check(cur.entry(req.Name)); err != nil {
					return err
				}
			}
		}
		var version uint64
		if err := tx.GetContext(ctx, &version, s.q.deleteDoc, k, o, req.Name); errors.Is(err, sql.ErrNoRows) {
			return memory.ErrNotFound
		} else if err != nil {
			return unavailable("delete", err)
		}
		if _, err := tx.ExecContext(ctx, s.q.bumpCount, k, o, -1); err != nil {
			return unavailable("count", err)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return &memory.DeleteResponse{}, nil
}
