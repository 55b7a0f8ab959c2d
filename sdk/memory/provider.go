package memory

import (
	"context"
	"fmt"
	"time"
)

// Provider stores memory documents. A store only stores, lists, matches and edits: every input
// rule a model can break and every result text belong to Engine.
//
// Contracts every implementation keeps (memorytest checks each one):
//   - It is safe for concurrent use and serializes mutations per anchor (Scope.Kind plus
//     Scope.OwnerID): two mutations of one anchor never interleave, so no update is lost and the
//     document cap holds under concurrent creates.
//   - A replace is atomic: a concurrent reader sees the whole old document or the whole new one.
//   - A refused call changes nothing.
//   - Each condition named by a sentinel error below is reported with that sentinel, wrapped or
//     not, so errors.Is works on either side of the plugin wire. Any other failure is wrapped in
//     ErrUnavailable.
//   - The checks run in this order: the scope (ErrInvalidArgument), the name (ErrNameInvalid),
//     the access of a mutation (ErrReadOnly), the request's own values (ErrContentInvalid,
//     ErrTooLarge for a written content, ErrInvalidArgument, ErrPatternInvalid), then the stored
//     state.
//   - Names are compared byte for byte; the scope's Binding and WorkspaceID never select data:
//     the anchor is Kind plus OwnerID alone.
type Provider interface {
	// Ls lists the anchor's documents whose name starts with NamePrefix (a literal byte prefix;
	// "" lists all), sorted by name in byte order. An anchor that holds nothing answers no
	// entries, never ErrNotFound.
	Ls(ctx context.Context, req *LsRequest) (*LsResponse, error)

	// Read answers one document and its content; a missing document is ErrNotFound.
	Read(ctx context.Context, req *ReadRequest) (*ReadResponse, error)

	// Grep matches Pattern (RE2, compiled with CompilePattern) against every line (GrepLines)
	// of the documents whose name starts with NamePrefix, in name then line order, and answers at
	// most Limit matches; Truncated says whether a further match exists. Limit 0 answers no
	// matches and only whether one exists. The context's deadline is the search budget: a store
	// checks it before each document and at least every 256 lines, and answers
	// ErrPatternTooCostly once it has passed.
	Grep(ctx context.Context, req *GrepRequest) (*GrepResponse, error)

	// Write creates the document or replaces its whole content, storing WrittenAt (StoredTime)
	// and answering the new entry. A create in an anchor already holding MaxDocumentsPerAnchor
	// documents is ErrFull; a replace at the cap succeeds. Version is 1 on create and advances by
	// one on each replace.
	Write(ctx context.Context, req *WriteRequest) (*WriteResponse, error)

	// Edit replaces the single literal occurrence of OldText with NewText (ApplyEdit) under the
	// anchor's lock, stores WrittenAt and advances Version. Missing document: ErrNotFound; no
	// occurrence: ErrEditNotFound; more than one, overlapping included: ErrEditAmbiguous; a
	// result over MaxDocumentBytes: ErrTooLarge. On any error the document is unchanged.
	Edit(ctx context.Context, req *EditRequest) (*EditResponse, error)

	// Delete removes the document; a missing document is ErrNotFound. The freed slot counts
	// toward the cap again at once.
	Delete(ctx context.Context, req *DeleteRequest) (*DeleteResponse, error)
}

// Entry describes one stored document.
type Entry struct {
	// Name is the document name within its anchor, byte-exact (no root).
	Name string
	// SizeBytes is the content's length in bytes.
	SizeBytes int64
	// WrittenAt is the time of the last write or edit as sent by the caller, in UTC with
	// microsecond precision.
	WrittenAt time.Time
	// Version is 1 on create and advances by one on each replace or edit. A document deleted and
	// created again starts at 1.
	Version uint64
	// ID names the document from its creation to its deletion (protocol 1.3): every replace and
	// edit keeps it, and a deleted name created again gets a new one, so ID and Version together
	// say which state of which document a reader saw. A store answers it on every entry; "" only
	// for a document written before the store kept ids, until its next write gives it one.
	ID string
}

// Expect is a conditional mutation's condition (protocol 1.3): the document the caller read,
// for the member doors' expected_public_id and expected_lock_version. A store checks it under
// the anchor's lock before any other check of the stored state, and answers ErrStale, changing
// nothing, when it does not hold.
type Expect struct {
	// Absent expects no document at the name: a create.
	Absent bool
	// ID and Version name the document expected when Absent is false: its Entry.ID and
	// Entry.Version. A document without an ID never matches.
	ID      string
	Version uint64
}

// Check compares e with the entry at the name (nil when there is none) and answers nil when it
// holds, else ErrStale; a nil e always holds. Stores call it under the anchor's lock.
func (e *Expect) Check(cur *Entry) error {
	switch {
	case e == nil:
		return nil
	case e.Absent && cur == nil:
		return nil
	case e.Absent:
		return fmt.Errorf("%w: the name holds a document", ErrStale)
	case cur == nil:
		return fmt.Errorf("%w: no document at the name", ErrStale)
	case cur.ID == "" || cur.ID != e.ID || cur.Version != e.Version:
		return fmt.Errorf("%w: the document is %q at version %d", ErrStale, cur.ID, cur.Version)
	}
	return nil
}

// LsRequest asks for the documents of one anchor.
type LsRequest struct {
	Scope      Scope
	NamePrefix string
}

// LsResponse lists entries sorted by Name in byte order.
type LsResponse struct {
	Entries []Entry
}

// ReadRequest asks for one document.
type ReadRequest struct {
	Scope Scope
	Name  string
}

// ReadResponse carries the document and its whole content.
type ReadResponse struct {
	Entry   Entry
	Content string
}

// GrepRequest asks for the lines of one anchor's documents that match a pattern.
type GrepRequest struct {
	Scope      Scope
	NamePrefix string
	// Pattern is an RE2 expression; compile it with CompilePattern.
	Pattern    string
	IgnoreCase bool
	// Limit is 0..MaxGrepLimit; 0 asks only whether any match exists.
	Limit int
}

// Match is one matching line.
type Match struct {
	Name string
	// LineNumber is 1-based.
	LineNumber int
	// Text is the line without its "\n" and one trailing "\r", at most MaxGrepLineChars
	// characters (ClampLine).
	Text string
	// Clamped says Text was cut at MaxGrepLineChars characters.
	Clamped bool
}

// GrepResponse carries the matches in name, then line order.
type GrepResponse struct {
	Matches []Match
	// Truncated says at least one match beyond Limit exists.
	Truncated bool
}

// WriteRequest creates or wholly replaces a document.
type WriteRequest struct {
	Scope   Scope
	Name    string
	Content string
	// WrittenAt is the kernel's clock, stored as sent (StoredTime).
	WrittenAt time.Time
	// Expect, when set, is the write's condition (protocol 1.3); nil writes unconditionally.
	Expect *Expect
}

// WriteResponse answers the stored entry and whether the write created the document.
type WriteResponse struct {
	Entry   Entry
	Created bool
}

// EditRequest replaces one passage of a document.
type EditRequest struct {
	Scope   Scope
	Name    string
	OldText string
	NewText string
	// WrittenAt is the kernel's clock, stored as sent (StoredTime).
	WrittenAt time.Time
	// Expect, when set, is the edit's condition, checked before the text (protocol 1.3).
	Expect *Expect
}

// EditResponse answers the stored entry after the edit.
type EditResponse struct {
	Entry Entry
}

// DeleteRequest removes a document.
type DeleteRequest struct {
	Scope Scope
	Name  string
	// Expect, when set, is the delete's condition (protocol 1.3): a missing document is then
	// ErrStale, not ErrNotFound.
	Expect *Expect
}

// DeleteResponse is empty; it exists so that fields can be added later.
type DeleteResponse struct{}
