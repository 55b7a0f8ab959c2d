package memorytest

import (
	"regexp"
	"testing"

	"github.com/nexuskernel/nexus/sdk/memory"
)

// idShape is the canonical lowercase UUID the member doors accept as expected_public_id.
var idShape = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)

// p34DocumentIDs: a create gives the document an id of the UUID shape that every read, listing,
// replace and edit answers unchanged; a deleted name created again gets another.
func p34DocumentIDs(t *testing.T, p memory.Provider) {
	created := mustWrite(t, p, Workspace, "plan.md", "one two", T0)
	id := created.Entry.ID
	if !idShape.MatchString(id) {
		t.Fatalf("create answered id %q, want a lowercase UUID", id)
	}
	other := mustWrite(t, p, Workspace, "other.md", "x", T0)
	if other.Entry.ID == id {
		t.Fatalf("two documents share id %s", id)
	}
	same := func(what, got string) {
		t.Helper()
		if got != id {
			t.Errorf("%s: id %q, want %q", what, got, id)
		}
	}
	same("read", mustRead(t, p, Workspace, "plan.md").Entry.ID)
	same("replace", mustWrite(t, p, Workspace, "plan.md", "one two three", T0).Entry.ID)
	edited, err := p.Edit(t.Context(), &memory.EditRequest{Scope: Workspace, Name: "plan.md", OldText: "two", NewText: "2", WrittenAt: T0})
	if err != nil {
		t.Fatal(err)
	}
	same("edit", edited.Entry.ID)
	for _, e := range mustLs(t, p, Workspace, "plan") {
		same("ls", e.ID)
	}
	if _, err := p.Delete(t.Context(), &memory.DeleteRequest{Scope: Workspace, Name: "plan.md"}); err != nil {
		t.Fatal(err)
	}
	again := mustWrite(t, p, Workspace, "plan.md", "one two", T0)
	if again.Entry.ID == id || !idShape.MatchString(again.Entry.ID) || again.Entry.Version != 1 {
		t.Errorf("created again: id %q version %d, want a new id at version 1 (the old one was %s)", again.Entry.ID, again.Entry.Version, id)
	}
}

// p35ConditionalWrite: a write's Expect is checked under the lock before anything else of the
// stored state: Absent creates only where nothing is; ID and Version replace only that state of
// that document; every other expectation is ErrStale and changes nothing.
func p35ConditionalWrite(t *testing.T, p memory.Provider) {
	write := func(name, content string, e *memory.Expect) (*memory.WriteResponse, error) {
		return p.Write(t.Context(), &memory.WriteRequest{Scope: Workspace, Name: name, Content: content, WrittenAt: T0, Expect: e})
	}
	created, err := write("a.md", "first", &memory.Expect{Absent: true})
	if err != nil || !created.Created || created.Entry.Version != 1 {
		t.Fatalf("create expecting nothing: %+v %v", created, err)
	}
	id := created.Entry.ID
	_, err = write("a.md", "again", &memory.Expect{Absent: true})
	errIs(t, "create over a document", err, memory.ErrStale)
	for _, e := range []memory.Expect{{ID: id, Version: 2}, {ID: memory.NewID(), Version: 1}, {ID: "", Version: 1}} {
		_, err = write("a.md", "stale", &e)
		errIs(t, "replace expecting "+e.ID, err, memory.ErrStale)
	}
	_, err = write("missing.md", "x", &memory.Expect{ID: id, Version: 1})
	errIs(t, "replace of a missing document", err, memory.ErrStale)
	wantDocument(t, p, Workspace, "a.md", "first", 1)
	if n := len(mustLs(t, p, Workspace, "")); n != 1 {
		t.Fatalf("stale writes made %d documents, want 1", n)
	}
	replaced, err := write("a.md", "second", &memory.Expect{ID: id, Version: 1})
	if err != nil || replaced.Created || replaced.Entry.Version != 2 || replaced.Entry.ID != id {
		t.Fatalf("replace expecting version 1: %+v %v", replaced, err)
	}
	// Deleted and created again, the name holds another document: the old pair is stale.
	if _, err := p.Delete(t.Context(), &memory.DeleteRequest{Scope: Workspace, Name: "a.md"}); err != nil {
		t.Fatal(err)
	}
	again, err := write("a.md", "third", &memory.Expect{Absent: true})
	if err != nil {
		t.Fatal(err)
	}
	_, err = write("a.md", "stale", &memory.Expect{ID: id, Version: 1})
	errIs(t, "replace expecting the deleted document", err, memory.ErrStale)
	wantDocument(t, p, Workspace, "a.md", "third", again.Entry.Version)
}

// p36ConditionalEditDelete: an edit checks its Expect before its text, and a delete answers
// ErrStale, not ErrNotFound, for a missing document it expected.
func p36ConditionalEditDelete(t *testing.T, p memory.Provider) {
	created := mustWrite(t, p, Workspace, "a.md", "alpha beta", T0)
	cur := memory.Expect{ID: created.Entry.ID, Version: 1}
	stale := memory.Expect{ID: created.Entry.ID, Version: 2}
	_, err := p.Edit(t.Context(), &memory.EditRequest{Scope: Workspace, Name: "a.md", OldText: "absent", NewText: "x", WrittenAt: T0, Expect: &stale})
	errIs(t, "stale edit whose text is absent", err, memory.ErrStale)
	_, err = p.Edit(t.Context(), &memory.EditRequest{Scope: Workspace, Name: "a.md", OldText: "alpha", NewText: "x", WrittenAt: T0, Expect: &memory.Expect{Absent: true}})
	errIs(t, "edit expecting nothing", err, memory.ErrStale)
	_, err = p.Edit(t.Context(), &memory.EditRequest{Scope: Workspace, Name: "missing.md", OldText: "alpha", NewText: "x", WrittenAt: T0, Expect: &cur})
	errIs(t, "edit of a missing document", err, memory.ErrStale)
	_, err = p.Delete(t.Context(), &memory.DeleteRequest{Scope: Workspace, Name: "a.md", Expect: &stale})
	errIs(t, "stale delete", err, memory.ErrStale)
	wantDocument(t, p, Workspace, "a.md", "alpha beta", 1)

	edited, err := p.Edit(t.Context(), &memory.EditRequest{Scope: Workspace, Name: "a.md", OldText: "alpha", NewText: "gamma", WrittenAt: T0, Expect: &cur})
	if err != nil || edited.Entry.Version != 2 || edited.Entry.ID != cur.ID {
		t.Fatalf("edit expecting version 1: %+v %v", edited, err)
	}
	_, err = p.Delete(t.Context(), &memory.DeleteRequest{Scope: Workspace, Name: "a.md", Expect: &cur})
	errIs(t, "delete expecting the edited-away version", err, memory.ErrStale)
	if _, err := p.Delete(t.Context(), &memory.DeleteRequest{Scope: Workspace, Name: "a.md", Expect: &memory.Expect{ID: cur.ID, Version: 2}}); err != nil {
		t.Fatalf("delete expecting version 2: %v", err)
	}
	_, err = p.Delete(t.Context(), &memory.DeleteRequest{Scope: Workspace, Name: "a.md", Expect: &memory.Expect{ID: cur.ID, Version: 2}})
	errIs(t, "delete of a deleted document", err, memory.ErrStale)
	if n := len(mustLs(t, p, Workspace, "")); n != 0 {
		t.Fatalf("%d documents after the delete", n)
	}
}
