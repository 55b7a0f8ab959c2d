package memory

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/nexuskernel/nexus/core/store"
	memsdk "github.com/nexuskernel/nexus/sdk/memory"
)

// Store is the kernel's built-in memory store: a memsdk.Provider over the kernel's own database
// (tables memory_anchors and memory_documents). Every mutation locks its anchor's row first
// (docs/agent-tools.md#memory-and-skills), so mutations of one anchor never interleave and the
// document cap holds under concurrent creates. It is safe for concurrent use.
//
// A mutation joins the transaction carried by its context (WithTx) when there is one, so that
// the run engine commits a memory call and the task's result together, under the run's lock;
// otherwise it runs in a transaction of its own.
type Store struct {
	db *store.Store
}

var _ memsdk.Provider = (*Store)(nil)

// New returns the memory store over db, which must be migrated.
func New(db *store.Store) *Store { return &Store{db: db} }

type txKey struct{}

// WithTx returns a context whose memory calls run inside tx: reads see tx's own writes, and
// mutations lock the anchor in tx and commit or roll back with it. The caller owns tx; a
// refused mutation leaves nothing in it but the anchor row it may have created.
func WithTx(ctx context.Context, tx *store.Tx) context.Context {
	return context.WithValue(ctx, txKey{}, tx)
}

func txOf(ctx context.Context) *store.Tx {
	tx, _ := ctx.Value(txKey{}).(*store.Tx)
	return tx
}

// reader is where a read runs: the context's transaction, or the read pool.
func (s *Store) reader(ctx context.Context) store.Querier {
	if tx := txOf(ctx); tx != nil {
		return tx
	}
	return s.db.Reader()
}

// write runs fn in the context's transaction, or in one of its own.
func (s *Store) write(ctx context.Context, fn func(tx *store.Tx) error) error {
	if tx := txOf(ctx); tx != nil {
		return fn(tx)
	}
	return s.db.Write(ctx, fn)
}

// storeSentinels are the errors a call reports as they are; anything else is a store failure.
var storeSentinels = []error{
	memsdk.ErrInvalidArgument, memsdk.ErrNameInvalid, memsdk.ErrNotFound, memsdk.ErrFull,
	memsdk.ErrTooLarge, memsdk.ErrContentInvalid, memsdk.ErrEditNotFound, memsdk.ErrEditAmbiguous,
	memsdk.ErrPatternInvalid, memsdk.ErrPatternTooCostly, memsdk.ErrReadOnly, memsdk.ErrUnavailable,
	ErrStale,
}

// failure passes a sentinel through and wraps any other error (a database failure, a canceled
// context) in ErrUnavailable, as the Provider contract requires.
func failure(err error) error {
	if err == nil {
		return nil
	}
	for _, s := range storeSentinels {
		if errors.Is(err, s) {
			return err
		}
	}
	return fmt.Errorf("%w: kernel memory: %w", memsdk.ErrUnavailable, err)
}

// microsOf is the stored form of a write time.
func microsOf(t time.Time) int64 { return memsdk.StoredTime(t).UnixMicro() }

func timeOf(us int64) time.Time { return time.UnixMicro(us).UTC() }

func entryOf(d *store.MemoryDocument) memsdk.Entry {
	return memsdk.Entry{Name: d.Name, SizeBytes: d.Bytesize, WrittenAt: timeOf(d.WrittenAtUS), Version: uint64(d.LockVersion), ID: d.PublicID}
}

// namePrefix turns a literal byte prefix into the SQL filter and the exact check applied to its
// results. SQL compares characters, so the filter is the prefix's longest valid UTF-8 head; the
// byte check then keeps exactly the names that start with the whole prefix (a prefix can end
// inside a character, or hold bytes no name can contain).
func namePrefix(prefix string) (store.MemoryPrefix, func(string) bool) {
	if prefix == "" {
		return store.MemoryPrefix{}, func(string) bool { return true }
	}
	head := prefix
	for i, r := range prefix {
		if r == utf8.RuneError {
			if _, size := utf8.DecodeRuneInString(prefix[i:]); size == 1 {
				head = prefix[:i]
				break
			}
		}
	}
	return store.MemoryPrefix{Text: head, Chars: utf8.RuneCountInString(head)},
		func(name string) bool { return strings.HasPrefix(name, prefix) }
}

// documents lists an anchor's documents under a name prefix, in name order.
func (s *Store) documents(ctx context.Context, scope memsdk.Scope, prefix string, withContent bool) ([]store.MemoryDocument, error) {
	filter, keep := namePrefix(prefix)
	rows, err := store.MemoryDocuments(ctx, s.reader(ctx), string(scope.Kind), scope.OwnerID, filter, withContent)
	if err != nil {
		return nil, err
	}
	out := rows[:0]
	for _, r := range rows {
		if keep(r.Name) {
			out = append(out, r)
		}
	}
	return out, nil
}

// Ls lists the anchor's documents under NamePrefix, sorted by name in byte order.
func (s *Store) Ls(ctx context.Context, req *memsdk.LsRequest) (*memsdk.LsResponse, error) {
	if err := memsdk.ValidScope(req.Scope); err != nil {
		return nil, err
	}
	rows, err := s.documents(ctx, req.Scope, req.NamePrefix, false)
	if err != nil {
		return nil, failure(err)
	}
	resp := &memsdk.LsResponse{Entries: make([]memsdk.Entry, len(rows))}
	for i := range rows {
		resp.Entries[i] = entryOf(&rows[i])
	}
	return resp, nil
}

// Read answers one document; a missing one is ErrNotFound.
func (s *Store) Read(ctx context.Context, req *memsdk.ReadRequest) (*memsdk.ReadResponse, error) {
	if err := memsdk.ValidScope(req.Scope); err != nil {
		return nil, err
	}
	if err := memsdk.ValidName(req.Name); err != nil {
		return nil, err
	}
	d, err := store.MemoryDocumentAt(ctx, s.reader(ctx), string(req.Scope.Kind), req.Scope.OwnerID, req.Name, true)
	if errors.Is(err, store.ErrNotFound) {
		return nil, memsdk.ErrNotFound
	}
	if err != nil {
		return nil, failure(err)
	}
	return &memsdk.ReadResponse{Entry: entryOf(d), Content: d.Content}, nil
}

// Grep matches the pattern against the lines of the documents under NamePrefix with the shared
// Matcher. The context's deadline is the search budget: it bounds the one query that reads the
// documents and is checked between documents and lines.
func (s *Store) Grep(ctx context.Context, req *memsdk.GrepRequest) (*memsdk.GrepResponse, error) {
	if err := memsdk.ValidScope(req.Scope); err != nil {
		return nil, err
	}
	m, err := memsdk.NewMatcher(req)
	if err != nil {
		return nil, err
	}
	if err := memsdk.CheckDeadline(ctx); err != nil {
		return nil, failure(err)
	}
	rows, err := s.documents(ctx, req.Scope, req.NamePrefix, true)
	if err != nil {
		// A query cut short by the budget is the budget's refusal, not a store failure.
		if dl := memsdk.CheckDeadline(ctx); dl != nil {
			return nil, failure(dl)
		}
		return nil, failure(err)
	}
	for i := range rows {
		done, err := m.Scan(ctx, rows[i].Name, rows[i].Content)
		if err != nil {
			return nil, failure(err)
		}
		if done {
			break
		}
	}
	return m.Response(), nil
}

// Write creates the document or replaces its content; a replace keeps its public id and
// description and advances its version.
func (s *Store) Write(ctx context.Context, req *memsdk.WriteRequest) (*memsdk.WriteResponse, error) {
	if err := checkMutation(req.Scope, req.Name); err != nil {
		return nil, err
	}
	if err := checkContent(req.Content); err != nil {
		return nil, err
	}
	d, created, err := s.put(ctx, req.Scope, req.Name, req.Content, req.WrittenAt, putOptions{expect: expectOf(req.Expect)})
	if err != nil {
		return nil, err
	}
	return &memsdk.WriteResponse{Entry: entryOf(d), Created: created}, nil
}

// Edit replaces the one literal occurrence of OldText under the anchor's lock.
func (s *Store) Edit(ctx context.Context, req *memsdk.EditRequest) (*memsdk.EditResponse, error) {
	if err := checkMutation(req.Scope, req.Name); err != nil {
		return nil, err
	}
	if req.OldText == "" {
		return nil, fmt.Errorf("%w: empty edit text", memsdk.ErrInvalidArgument)
	}
	if err := memsdk.CheckContent(req.NewText); err != nil {
		return nil, err
	}
	d, err := s.edit(ctx, req.Scope, req.Name, req.OldText, req.NewText, req.WrittenAt, expectOf(req.Expect))
	if err != nil {
		return nil, err
	}
	return &memsdk.EditResponse{Entry: entryOf(d)}, nil
}

// Delete removes the document; a missing one is ErrNotFound.
func (s *Store) Delete(ctx context.Context, req *memsdk.DeleteRequest) (*memsdk.DeleteResponse, error) {
	if err := checkMutation(req.Scope, req.Name); err != nil {
		return nil, err
	}
	if err := s.remove(ctx, req.Scope, req.Name, expectOf(req.Expect)); err != nil {
		return nil, err
	}
	return &memsdk.DeleteResponse{}, nil
}

// checkMutation applies the contract's first checks of a mutation: scope, name, access.
func checkMutation(scope memsdk.Scope, name string) error {
	if err := memsdk.ValidScope(scope); err != nil {
		return err
	}
	if err := memsdk.ValidName(name); err != nil {
		return err
	}
	if !scope.Writable() {
		return fmt.Errorf("%w: binding %q is read-only", memsdk.ErrReadOnly, scope.Binding)
	}
	return nil
}

// checkContent is the store-level defence on written content: valid text, within the size.
func checkContent(content string) error {
	if err := memsdk.CheckContent(content); err != nil {
		return err
	}
	if len(content) > memsdk.MaxDocumentBytes {
		return fmt.Errorf("%w: %d bytes", memsdk.ErrTooLarge, len(content))
	}
	return nil
}
