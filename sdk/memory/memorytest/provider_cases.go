package memorytest

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/nexuskernel/nexus/sdk/memory"
)

func providerCases() []providerCase {
	return []providerCase{
		{"P01", "read_missing", p01ReadMissing},
		{"P02", "write_creates", p02WriteCreates},
		{"P03", "write_replaces", p03WriteReplaces},
		{"P04", "names_byte_exact", p04NamesByteExact},
		{"P05", "anchors_isolated", p05AnchorsIsolated},
		{"P06", "ls_order_and_literal_prefix", p06LsOrder},
		{"P07", "ls_empty_anchor", p07LsEmpty},
		{"P08", "document_cap", p08Cap},
		{"P09", "size_limit", p09SizeLimit},
		{"P10", "content_invalid", p10ContentInvalid},
		{"P11", "edit_literal", p11EditLiteral},
		{"P12", "edit_not_found", p12EditNotFound},
		{"P13", "edit_ambiguous", p13EditAmbiguous},
		{"P14", "edit_overlap", p14EditOverlap},
		{"P15", "edit_missing_document", p15EditMissing},
		{"P16", "edit_too_large", p16EditTooLarge},
		{"P17", "edit_multibyte", p17EditMultibyte},
		{"P18", "delete", p18Delete},
		{"P19", "grep_lines_and_order", p19GrepLines},
		{"P20", "grep_ignore_case", p20GrepIgnoreCase},
		{"P21", "grep_limit", p21GrepLimit},
		{"P22", "grep_clamp", p22GrepClamp},
		{"P23", "grep_prefix", p23GrepPrefix},
		{"P24", "grep_deadline", p24GrepDeadline},
		{"P25", "grep_pattern_invalid", p25GrepPatternInvalid},
		{"P26", "read_only_scope", p26ReadOnly},
		{"P27", "invalid_names_and_scopes", p27Invalid},
		{"P28", "concurrent_creates", p28ConcurrentCreates},
		{"P29", "concurrent_edits", p29ConcurrentEdits},
		{"P30", "empty_content", p30EmptyContent},
		// Further cases of this kit, beyond the list (docs/agent-tools.md#memory-and-skills).
		{"P32", "replace_is_atomic", p32AtomicReplace},
		{"P33", "mixed_concurrent_mutations", p33MixedMutations},
		// Protocol 1.3: document ids and conditional mutations (docs/plugins.md#protocol-13).
		{"P34", "document_ids", p34DocumentIDs},
		{"P35", "conditional_write", p35ConditionalWrite},
		{"P36", "conditional_edit_and_delete", p36ConditionalEditDelete},
	}
}

func p01ReadMissing(t *testing.T, p memory.Provider) {
	_, err := p.Read(t.Context(), &memory.ReadRequest{Scope: Workspace, Name: "missing.md"})
	errIs(t, "read of a name never written", err, memory.ErrNotFound)
	mustWrite(t, p, Workspace, "present.md", "x", T0)
	_, err = p.Read(t.Context(), &memory.ReadRequest{Scope: Workspace, Name: "missing.md"})
	errIs(t, "read of a missing name beside a present one", err, memory.ErrNotFound)
}

func p02WriteCreates(t *testing.T, p memory.Provider) {
	// The time is sent in another zone; the store answers the same instant in UTC.
	sent := T0.In(time.FixedZone("UTC+5:30", 5*3600+1800))
	resp := mustWrite(t, p, Workspace, "notes.md", "hello\nworld\n", sent)
	want := memory.Entry{Name: "notes.md", SizeBytes: 12, WrittenAt: T0, Version: 1}
	if !resp.Created {
		t.Error("first write: Created is false")
	}
	wantEntry(t, "write response", resp.Entry, want)
	got := mustRead(t, p, Workspace, "notes.md")
	if got.Content != "hello\nworld\n" {
		t.Errorf("content %q", got.Content)
	}
	wantEntry(t, "read", got.Entry, want)
	ls := mustLs(t, p, Workspace, "")
	if len(ls) != 1 {
		t.Fatalf("ls: %d entries, want 1", len(ls))
	}
	wantEntry(t, "ls", ls[0], want)
}

func p03WriteReplaces(t *testing.T, p memory.Provider) {
	mustWrite(t, p, Workspace, "plan.md", "first version", T0)
	// A time with nanoseconds is stored cut to the microsecond.
	later := T0.Add(90*time.Minute + 789*time.Nanosecond)
	resp := mustWrite(t, p, Workspace, "plan.md", "second, longer version", later)
	want := memory.Entry{Name: "plan.md", SizeBytes: 22, WrittenAt: T0.Add(90 * time.Minute), Version: 2}
	if resp.Created {
		t.Error("replace: Created is true")
	}
	wantEntry(t, "replace response", resp.Entry, want)
	got := mustRead(t, p, Workspace, "plan.md")
	if got.Content != "second, longer version" {
		t.Errorf("content %q", got.Content)
	}
	wantEntry(t, "read after replace", got.Entry, want)
	third := mustWrite(t, p, Workspace, "plan.md", "", T0.Add(2*time.Hour))
	wantEntry(t, "second replace", third.Entry, memory.Entry{Name: "plan.md", SizeBytes: 0, WrittenAt: T0.Add(2 * time.Hour), Version: 3})
	if n := len(mustLs(t, p, Workspace, "")); n != 1 {
		t.Errorf("replaces made %d documents, want 1", n)
	}
}

func p04NamesByteExact(t *testing.T, p memory.Provider) {
	written := []string{
		"notes.md", "Notes.md", "NOTES.md",
		"todo list.md", " leading space", "trailing space ",
		"日本語/メモ.md", "emoji 🎉.md", "café", "cafe\u0301", // precomposed and decomposed é stay distinct
		"a/b/c/d.txt", "quote\"d", "percent%_under", "\u0080c1-control", "\u2028separator",
		strings.Repeat("n", memory.MaxNameBytes),
	}
	for i, n := range written {
		mustWrite(t, p, Workspace, n, "content of "+itoa(i), T0)
	}
	for i, n := range written {
		if got := mustRead(t, p, Workspace, n); got.Content != "content of "+itoa(i) || got.Entry.Name != n {
			t.Errorf("%q read back as name %q content %q", n, got.Entry.Name, got.Content)
		}
	}
	got := names(mustLs(t, p, Workspace, ""))
	want := sortedCopy(written)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("ls names (-want +got):\n%s", diff)
	}
}

func p05AnchorsIsolated(t *testing.T, p memory.Provider) {
	scopes := []memory.Scope{Workspace, OtherOwner, User, SameOwnerUser, Conversation}
	for i, s := range scopes {
		mustWrite(t, p, s, "shared.md", "anchor "+itoa(i), T0)
	}
	// A binding name never selects data: the same anchor under another root is the same anchor.
	renamed := Workspace
	renamed.Binding = "team"
	if got := mustRead(t, p, renamed, "shared.md"); got.Content != "anchor 0" {
		t.Errorf("workspace anchor under another binding name holds %q", got.Content)
	}
	if _, err := p.Delete(t.Context(), &memory.DeleteRequest{Scope: User, Name: "shared.md"}); err != nil {
		t.Fatalf("delete in user anchor: %v", err)
	}
	for i, s := range scopes {
		if s == User {
			_, err := p.Read(t.Context(), &memory.ReadRequest{Scope: s, Name: "shared.md"})
			errIs(t, "read after delete in its own anchor", err, memory.ErrNotFound)
			continue
		}
		if got := mustRead(t, p, s, "shared.md"); got.Content != "anchor "+itoa(i) || got.Entry.Version != 1 {
			t.Errorf("%s %s: content %q version %d, want %q version 1", s.Kind, s.OwnerID, got.Content, got.Entry.Version, "anchor "+itoa(i))
		}
		if n := len(mustLs(t, p, s, "")); n != 1 {
			t.Errorf("%s %s lists %d documents, want 1", s.Kind, s.OwnerID, n)
		}
	}
}

func p06LsOrder(t *testing.T, p memory.Provider) {
	written := []string{"b", "a", "B", "a/b", "a.b", "ä", "a b", "Z", "a%b", "axb", "a_c", "abc", "no/x", "notes.md", "n", "~"}
	for _, n := range written {
		mustWrite(t, p, Workspace, n, n, T0)
	}
	if diff := cmp.Diff(sortedCopy(written), names(mustLs(t, p, Workspace, ""))); diff != "" {
		t.Errorf("ls order (-want +got):\n%s", diff)
	}
	for _, c := range []struct {
		prefix string
		want   []string
	}{
		{"a%", []string{"a%b"}},
		{"a_", []string{"a_c"}},
		{"a\\", []string{}},
		{"%", []string{}},
		{"_", []string{}},
		{"a", []string{"a", "a b", "a%b", "a.b", "a/b", "a_c", "abc", "axb"}},
		{"no", []string{"no/x", "notes.md"}},
		{"no/", []string{"no/x"}},
		{"A", []string{}},
		{"ä", []string{"ä"}},
		{"notes.md", []string{"notes.md"}},
		{"notes.md.", []string{}},
	} {
		if diff := cmp.Diff(c.want, names(mustLs(t, p, Workspace, c.prefix))); diff != "" {
			t.Errorf("ls prefix %q (-want +got):\n%s", c.prefix, diff)
		}
	}
}

func p07LsEmpty(t *testing.T, p memory.Provider) {
	if got := mustLs(t, p, Workspace, ""); len(got) != 0 {
		t.Errorf("empty anchor lists %v", names(got))
	}
	if got := mustLs(t, p, Conversation, "x"); len(got) != 0 {
		t.Errorf("empty anchor with a prefix lists %v", names(got))
	}
	mustWrite(t, p, Workspace, "only.md", "x", T0)
	if got := mustLs(t, p, User, ""); len(got) != 0 {
		t.Errorf("untouched anchor lists %v after a write elsewhere", names(got))
	}
	if got := mustLs(t, p, Workspace, "other"); len(got) != 0 {
		t.Errorf("prefix matching nothing lists %v", names(got))
	}
}

func p08Cap(t *testing.T, p memory.Provider) {
	fill(t, p, Workspace, memory.MaxDocumentsPerAnchor)
	_, err := p.Write(t.Context(), &memory.WriteRequest{Scope: Workspace, Name: "one-more", Content: "x", WrittenAt: T0})
	errIs(t, "65th create", err, memory.ErrFull)
	if _, err := p.Read(t.Context(), &memory.ReadRequest{Scope: Workspace, Name: "one-more"}); err == nil {
		t.Error("the refused 65th document exists")
	}
	resp := mustWrite(t, p, Workspace, docName(7), "replaced at the cap", T0.Add(time.Second))
	if resp.Created || resp.Entry.Version != 2 {
		t.Errorf("replace at the cap: created %v version %d", resp.Created, resp.Entry.Version)
	}
	mustWrite(t, p, OtherOwner, "elsewhere", "x", T0) // the cap is per anchor
	mustWrite(t, p, SameOwnerUser, "elsewhere", "x", T0)
	if _, err := p.Delete(t.Context(), &memory.DeleteRequest{Scope: Workspace, Name: docName(3)}); err != nil {
		t.Fatalf("delete at the cap: %v", err)
	}
	mustWrite(t, p, Workspace, "one-more", "x", T0)
	_, err = p.Write(t.Context(), &memory.WriteRequest{Scope: Workspace, Name: "two-more", Content: "x", WrittenAt: T0})
	errIs(t, "create after refilling the freed slot", err, memory.ErrFull)
	if n := len(mustLs(t, p, Workspace, "")); n != memory.MaxDocumentsPerAnchor {
		t.Errorf("anchor lists %d documents, want %d", n, memory.MaxDocumentsPerAnchor)
	}
}

func p09SizeLimit(t *testing.T, p memory.Provider) {
	exact := strings.Repeat("é", memory.MaxDocumentBytes/2) // 65,536 bytes of two-byte characters
	resp := mustWrite(t, p, Workspace, "exact", exact, T0)
	if resp.Entry.SizeBytes != memory.MaxDocumentBytes {
		t.Errorf("size %d, want %d", resp.Entry.SizeBytes, memory.MaxDocumentBytes)
	}
	wantDocument(t, p, Workspace, "exact", exact, 1)
	over := strings.Repeat("a", memory.MaxDocumentBytes+1)
	_, err := p.Write(t.Context(), &memory.WriteRequest{Scope: Workspace, Name: "over", Content: over, WrittenAt: T0})
	errIs(t, "65,537-byte create", err, memory.ErrTooLarge)
	_, err = p.Read(t.Context(), &memory.ReadRequest{Scope: Workspace, Name: "over"})
	errIs(t, "read of the refused document", err, memory.ErrNotFound)
	_, err = p.Write(t.Context(), &memory.WriteRequest{Scope: Workspace, Name: "exact", Content: over, WrittenAt: T0})
	errIs(t, "65,537-byte replace", err, memory.ErrTooLarge)
	wantDocument(t, p, Workspace, "exact", exact, 1)
}

func p10ContentInvalid(t *testing.T, p memory.Provider) {
	mustWrite(t, p, Workspace, "kept", "original", T0)
	for _, bad := range []string{"a\x00b", "\x00", "bad \xff byte", "cut \xe6\x97"} {
		_, err := p.Write(t.Context(), &memory.WriteRequest{Scope: Workspace, Name: "new", Content: bad, WrittenAt: T0})
		errIs(t, "create with "+strconvQuote(bad), err, memory.ErrContentInvalid)
		_, err = p.Write(t.Context(), &memory.WriteRequest{Scope: Workspace, Name: "kept", Content: bad, WrittenAt: T0})
		errIs(t, "replace with "+strconvQuote(bad), err, memory.ErrContentInvalid)
		_, err = p.Edit(t.Context(), &memory.EditRequest{Scope: Workspace, Name: "kept", OldText: "original", NewText: bad, WrittenAt: T0})
		errIs(t, "edit to "+strconvQuote(bad), err, memory.ErrContentInvalid)
	}
	_, err := p.Read(t.Context(), &memory.ReadRequest{Scope: Workspace, Name: "new"})
	errIs(t, "read of a refused create", err, memory.ErrNotFound)
	wantDocument(t, p, Workspace, "kept", "original", 1)
}

func p11EditLiteral(t *testing.T, p memory.Provider) {
	mustWrite(t, p, Workspace, "doc", "cost is $5.00 (a+b)* [x] ^end\nnext line\n", T0)
	resp, err := p.Edit(t.Context(), &memory.EditRequest{Scope: Workspace, Name: "doc", OldText: "$5.00 (a+b)* [x] ^end", NewText: "six", WrittenAt: T0.Add(time.Minute)})
	if err != nil {
		t.Fatalf("edit: %v", err)
	}
	want := memory.Entry{Name: "doc", SizeBytes: int64(len("cost is six\nnext line\n")), WrittenAt: T0.Add(time.Minute), Version: 2}
	wantEntry(t, "edit response", resp.Entry, want)
	wantDocument(t, p, Workspace, "doc", "cost is six\nnext line\n", 2)
	wantEntry(t, "read after edit", mustRead(t, p, Workspace, "doc").Entry, want)
	// A pattern-looking text that would match as a regular expression but not literally.
	_, err = p.Edit(t.Context(), &memory.EditRequest{Scope: Workspace, Name: "doc", OldText: "c.st", NewText: "x", WrittenAt: T0})
	errIs(t, "edit with a regex-only match", err, memory.ErrEditNotFound)
	// An empty new text removes the passage.
	if _, err := p.Edit(t.Context(), &memory.EditRequest{Scope: Workspace, Name: "doc", OldText: "next line\n", NewText: "", WrittenAt: T0}); err != nil {
		t.Fatalf("edit to empty: %v", err)
	}
	wantDocument(t, p, Workspace, "doc", "cost is six\n", 3)
}

func p12EditNotFound(t *testing.T, p memory.Provider) {
	mustWrite(t, p, Workspace, "doc", "alpha beta", T0)
	for _, old := range []string{"gamma", "Alpha", "alpha  beta", "alpha beta gamma", "a\x00"} {
		_, err := p.Edit(t.Context(), &memory.EditRequest{Scope: Workspace, Name: "doc", OldText: old, NewText: "x", WrittenAt: T0.Add(time.Hour)})
		errIs(t, "edit of absent "+strconvQuote(old), err, memory.ErrEditNotFound)
	}
	wantDocument(t, p, Workspace, "doc", "alpha beta", 1)
	wantEntry(t, "entry after refused edits", mustRead(t, p, Workspace, "doc").Entry, memory.Entry{Name: "doc", SizeBytes: 10, WrittenAt: T0, Version: 1})
}

func p13EditAmbiguous(t *testing.T, p memory.Provider) {
	mustWrite(t, p, Workspace, "doc", "x = 1\ny = 2\nx = 1\n", T0)
	_, err := p.Edit(t.Context(), &memory.EditRequest{Scope: Workspace, Name: "doc", OldText: "x = 1", NewText: "x = 3", WrittenAt: T0})
	errIs(t, "edit of a twice-present passage", err, memory.ErrEditAmbiguous)
	wantDocument(t, p, Workspace, "doc", "x = 1\ny = 2\nx = 1\n", 1)
	if _, err := p.Edit(t.Context(), &memory.EditRequest{Scope: Workspace, Name: "doc", OldText: "x = 1\ny", NewText: "x = 3\ny", WrittenAt: T0}); err != nil {
		t.Fatalf("edit of a unique longer passage: %v", err)
	}
	wantDocument(t, p, Workspace, "doc", "x = 3\ny = 2\nx = 1\n", 2)
}

func p14EditOverlap(t *testing.T, p memory.Provider) {
	for _, c := range []struct{ content, old string }{
		{"aaa", "aa"},
		{"abab", "ab"},     // twice, apart
		{"xababax", "aba"}, // overlapping at one character
		{"ééé", "éé"},
	} {
		mustWrite(t, p, Workspace, "doc", c.content, T0)
		_, err := p.Edit(t.Context(), &memory.EditRequest{Scope: Workspace, Name: "doc", OldText: c.old, NewText: "-", WrittenAt: T0})
		errIs(t, "edit of "+strconvQuote(c.old)+" in "+strconvQuote(c.content), err, memory.ErrEditAmbiguous)
		if got := mustRead(t, p, Workspace, "doc").Content; got != c.content {
			t.Errorf("refused edit changed %q to %q", c.content, got)
		}
	}
}

func p15EditMissing(t *testing.T, p memory.Provider) {
	_, err := p.Edit(t.Context(), &memory.EditRequest{Scope: Workspace, Name: "missing", OldText: "a", NewText: "b", WrittenAt: T0})
	errIs(t, "edit of a missing document", err, memory.ErrNotFound)
	_, err = p.Read(t.Context(), &memory.ReadRequest{Scope: Workspace, Name: "missing"})
	errIs(t, "read after the refused edit", err, memory.ErrNotFound)
}

func p16EditTooLarge(t *testing.T, p memory.Provider) {
	content := strings.Repeat("a", memory.MaxDocumentBytes-10) + "<marker>"
	mustWrite(t, p, Workspace, "doc", content, T0)
	_, err := p.Edit(t.Context(), &memory.EditRequest{Scope: Workspace, Name: "doc", OldText: "<marker>", NewText: "<a longer marker>", WrittenAt: T0})
	errIs(t, "edit over the size limit", err, memory.ErrTooLarge)
	wantDocument(t, p, Workspace, "doc", content, 1)
	// Growing to exactly the limit is allowed.
	if _, err := p.Edit(t.Context(), &memory.EditRequest{Scope: Workspace, Name: "doc", OldText: "<marker>", NewText: "<marker>xx", WrittenAt: T0}); err != nil {
		t.Fatalf("edit to exactly the limit: %v", err)
	}
	if got := mustRead(t, p, Workspace, "doc"); got.Entry.SizeBytes != memory.MaxDocumentBytes {
		t.Errorf("size %d, want %d", got.Entry.SizeBytes, memory.MaxDocumentBytes)
	}
}

func p17EditMultibyte(t *testing.T, p memory.Provider) {
	mustWrite(t, p, Workspace, "doc", "日本語のテキスト🎉です。ü", T0)
	if _, err := p.Edit(t.Context(), &memory.EditRequest{Scope: Workspace, Name: "doc", OldText: "テキスト🎉", NewText: "文章", WrittenAt: T0}); err != nil {
		t.Fatalf("edit: %v", err)
	}
	wantDocument(t, p, Workspace, "doc", "日本語の文章です。ü", 2)
	if _, err := p.Edit(t.Context(), &memory.EditRequest{Scope: Workspace, Name: "doc", OldText: "ü", NewText: "🎉🎉", WrittenAt: T0}); err != nil {
		t.Fatalf("edit of the last character: %v", err)
	}
	wantDocument(t, p, Workspace, "doc", "日本語の文章です。🎉🎉", 3)
}

func p18Delete(t *testing.T, p memory.Provider) {
	mustWrite(t, p, Workspace, "gone.md", "x", T0)
	mustWrite(t, p, Workspace, "kept.md", "y", T0)
	if _, err := p.Delete(t.Context(), &memory.DeleteRequest{Scope: Workspace, Name: "gone.md"}); err != nil {
		t.Fatalf("delete: %v", err)
	}
	_, err := p.Read(t.Context(), &memory.ReadRequest{Scope: Workspace, Name: "gone.md"})
	errIs(t, "read after delete", err, memory.ErrNotFound)
	if diff := cmp.Diff([]string{"kept.md"}, names(mustLs(t, p, Workspace, ""))); diff != "" {
		t.Errorf("ls after delete (-want +got):\n%s", diff)
	}
	_, err = p.Delete(t.Context(), &memory.DeleteRequest{Scope: Workspace, Name: "gone.md"})
	errIs(t, "second delete", err, memory.ErrNotFound)
	// A document created again starts over at version 1.
	if resp := mustWrite(t, p, Workspace, "gone.md", "again", T0); !resp.Created || resp.Entry.Version != 1 {
		t.Errorf("recreate: created %v version %d, want true 1", resp.Created, resp.Entry.Version)
	}
	// The freed slot counts toward the cap again.
	fill(t, p, Workspace, memory.MaxDocumentsPerAnchor-2)
	_, err = p.Write(t.Context(), &memory.WriteRequest{Scope: Workspace, Name: "over", Content: "x", WrittenAt: T0})
	errIs(t, "create at the cap", err, memory.ErrFull)
	if _, err := p.Delete(t.Context(), &memory.DeleteRequest{Scope: Workspace, Name: "kept.md"}); err != nil {
		t.Fatalf("delete at the cap: %v", err)
	}
	mustWrite(t, p, Workspace, "over", "x", T0)
}

func p19GrepLines(t *testing.T, p memory.Provider) {
	// Written out of order: results are in name order, then line order.
	mustWrite(t, p, Workspace, "b.md", "x\nfoo 1\r\nbar\nfoo 2", T0)
	mustWrite(t, p, Workspace, "a.md", "foo a\n", T0)
	mustWrite(t, p, Workspace, "c.md", "nothing here\n", T0)
	mustWrite(t, p, Workspace, "a/b.md", "\n\nfoo deep\n", T0)
	got := mustGrep(t, p, memory.GrepRequest{Scope: Workspace, Pattern: "foo", Limit: 10})
	want := &memory.GrepResponse{Matches: []memory.Match{
		{Name: "a.md", LineNumber: 1, Text: "foo a"},
		{Name: "a/b.md", LineNumber: 3, Text: "foo deep"},
		{Name: "b.md", LineNumber: 2, Text: "foo 1"},
		{Name: "b.md", LineNumber: 4, Text: "foo 2"},
	}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("grep foo (-want +got):\n%s", diff)
	}
	// A line is matched without its "\r": "1$" matches the CRLF line.
	got = mustGrep(t, p, memory.GrepRequest{Scope: Workspace, Pattern: `^foo \d$`, Limit: 10})
	want = &memory.GrepResponse{Matches: []memory.Match{{Name: "b.md", LineNumber: 2, Text: "foo 1"}, {Name: "b.md", LineNumber: 4, Text: "foo 2"}}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("grep anchored (-want +got):\n%s", diff)
	}
	// Empty lines are lines; a final "\n" starts none.
	got = mustGrep(t, p, memory.GrepRequest{Scope: Workspace, Pattern: `^$`, Limit: 10})
	want = &memory.GrepResponse{Matches: []memory.Match{{Name: "a/b.md", LineNumber: 1, Text: ""}, {Name: "a/b.md", LineNumber: 2, Text: ""}}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("grep empty lines (-want +got):\n%s", diff)
	}
	// Lines never hold their break, so a pattern spanning one matches nothing.
	if got := mustGrep(t, p, memory.GrepRequest{Scope: Workspace, Pattern: "x\nfoo", Limit: 10}); len(got.Matches) != 0 || got.Truncated {
		t.Errorf("grep across a line break: %+v", got)
	}
}

func p20GrepIgnoreCase(t *testing.T, p memory.Provider) {
	mustWrite(t, p, Workspace, "doc", "Retry Budget\nretry budget\nRETRY\nÉCOLE école\n", T0)
	got := mustGrep(t, p, memory.GrepRequest{Scope: Workspace, Pattern: "retry", Limit: 10})
	if diff := cmp.Diff([]memory.Match{{Name: "doc", LineNumber: 2, Text: "retry budget"}}, got.Matches); diff != "" {
		t.Errorf("case-sensitive (-want +got):\n%s", diff)
	}
	got = mustGrep(t, p, memory.GrepRequest{Scope: Workspace, Pattern: "retry", IgnoreCase: true, Limit: 10})
	if diff := cmp.Diff([]int{1, 2, 3}, lineNumbers(got.Matches)); diff != "" {
		t.Errorf("ignore case (-want +got):\n%s", diff)
	}
	got = mustGrep(t, p, memory.GrepRequest{Scope: Workspace, Pattern: "^école", IgnoreCase: true, Limit: 10})
	if diff := cmp.Diff([]int{4}, lineNumbers(got.Matches)); diff != "" {
		t.Errorf("ignore case, non-ASCII (-want +got):\n%s", diff)
	}
}

func lineNumbers(ms []memory.Match) []int {
	out := []int{}
	for _, m := range ms {
		out = append(out, m.LineNumber)
	}
	return out
}

func p21GrepLimit(t *testing.T, p memory.Provider) {
	mustWrite(t, p, Workspace, "a", "hit 1\nmiss\nhit 2\n", T0)
	mustWrite(t, p, Workspace, "b", "hit 3\n", T0)
	mustWrite(t, p, Workspace, "c", "miss\nhit 4\nhit 5", T0)
	all := []memory.Match{
		{Name: "a", LineNumber: 1, Text: "hit 1"}, {Name: "a", LineNumber: 3, Text: "hit 2"},
		{Name: "b", LineNumber: 1, Text: "hit 3"},
		{Name: "c", LineNumber: 2, Text: "hit 4"}, {Name: "c", LineNumber: 3, Text: "hit 5"},
	}
	for _, c := range []struct {
		pattern   string
		limit     int
		want      []memory.Match
		truncated bool
	}{
		{"hit", 1, all[:1], true},
		{"hit", 2, all[:2], true}, // the limit falls at a document's end; the next one still counts
		{"hit", 3, all[:3], true},
		{"hit", 4, all[:4], true},
		{"hit", 5, all, false},
		{"hit", 500, all, false},
		{"hit", 0, nil, true},
		{"hit 5", 0, nil, true},
		{"absent", 0, nil, false},
		{"absent", 3, nil, false},
	} {
		got := mustGrep(t, p, memory.GrepRequest{Scope: Workspace, Pattern: c.pattern, Limit: c.limit})
		if diff := cmp.Diff(c.want, got.Matches, cmpEmptyMatches); diff != "" || got.Truncated != c.truncated {
			t.Errorf("grep %q limit %d: truncated %v want %v; matches (-want +got):\n%s", c.pattern, c.limit, got.Truncated, c.truncated, diff)
		}
	}
}

// cmpEmptyMatches lets a nil and an empty match list compare equal.
var cmpEmptyMatches = cmp.Comparer(func(a, b []memory.Match) bool {
	if len(a) == 0 && len(b) == 0 {
		return true
	}
	return cmp.Equal(a, b)
})

func p22GrepClamp(t *testing.T, p memory.Provider) {
	long := strings.Repeat("é", 600)
	exact := strings.Repeat("x", memory.MaxGrepLineChars)
	mustWrite(t, p, Workspace, "doc", "needle "+long+"\nneedle"+exact[6:]+"\n", T0)
	got := mustGrep(t, p, memory.GrepRequest{Scope: Workspace, Pattern: "needle", Limit: 10})
	want := []memory.Match{
		{Name: "doc", LineNumber: 1, Text: "needle " + strings.Repeat("é", memory.MaxGrepLineChars-7), Clamped: true},
		{Name: "doc", LineNumber: 2, Text: "needle" + exact[6:]},
	}
	if diff := cmp.Diff(want, got.Matches); diff != "" {
		t.Errorf("grep clamp (-want +got):\n%s", diff)
	}
	// A match beyond the 500th character still matches; only the text is cut.
	got = mustGrep(t, p, memory.GrepRequest{Scope: Workspace, Pattern: "é$", Limit: 10})
	if len(got.Matches) != 1 || !got.Matches[0].Clamped {
		t.Errorf("match past the clamp: %+v", got.Matches)
	}
}

func p23GrepPrefix(t *testing.T, p memory.Provider) {
	mustWrite(t, p, Workspace, "notes/a", "topic", T0)
	mustWrite(t, p, Workspace, "notes/b", "topic", T0)
	mustWrite(t, p, Workspace, "notesX", "topic", T0)
	mustWrite(t, p, Workspace, "other", "topic", T0)
	mustWrite(t, p, Workspace, "a%b", "topic", T0)
	for _, c := range []struct {
		prefix string
		want   []string
	}{
		{"notes/", []string{"notes/a", "notes/b"}},
		{"notes", []string{"notes/a", "notes/b", "notesX"}},
		{"a%", []string{"a%b"}},
		{"%", nil},
		{"zzz", nil},
		{"", []string{"a%b", "notes/a", "notes/b", "notesX", "other"}},
	} {
		got := mustGrep(t, p, memory.GrepRequest{Scope: Workspace, NamePrefix: c.prefix, Pattern: "topic", Limit: 10})
		var gotNames []string
		for _, m := range got.Matches {
			gotNames = append(gotNames, m.Name)
		}
		if diff := cmp.Diff(c.want, gotNames); diff != "" {
			t.Errorf("grep prefix %q (-want +got):\n%s", c.prefix, diff)
		}
	}
}

func p24GrepDeadline(t *testing.T, p memory.Provider) {
	mustWrite(t, p, Workspace, "doc", "needle\n", T0)
	ctx, cancel := context.WithDeadline(t.Context(), time.Now().Add(-time.Second))
	defer cancel()
	_, err := p.Grep(ctx, &memory.GrepRequest{Scope: Workspace, Pattern: "needle", Limit: 10})
	errIs(t, "grep past its deadline", err, memory.ErrPatternTooCostly)
	// The store still answers afterwards.
	if got := mustGrep(t, p, memory.GrepRequest{Scope: Workspace, Pattern: "needle", Limit: 10}); len(got.Matches) != 1 {
		t.Errorf("grep after a spent budget: %+v", got)
	}
}

func p25GrepPatternInvalid(t *testing.T, p memory.Provider) {
	mustWrite(t, p, Workspace, "doc", "text\n", T0)
	for _, pattern := range []string{"", "(", "a[", `\1`, "(?<name", "a**", `\p{Nope}`} {
		_, err := p.Grep(t.Context(), &memory.GrepRequest{Scope: Workspace, Pattern: pattern, Limit: 10})
		errIs(t, "grep "+strconvQuote(pattern), err, memory.ErrPatternInvalid)
	}
}

func p26ReadOnly(t *testing.T, p memory.Provider) {
	mustWrite(t, p, Workspace, "doc", "original\n", T0)
	ro := readOnly(Workspace)
	_, err := p.Write(t.Context(), &memory.WriteRequest{Scope: ro, Name: "doc", Content: "changed", WrittenAt: T0})
	errIs(t, "replace through read", err, memory.ErrReadOnly)
	_, err = p.Write(t.Context(), &memory.WriteRequest{Scope: ro, Name: "new", Content: "x", WrittenAt: T0})
	errIs(t, "create through read", err, memory.ErrReadOnly)
	_, err = p.Edit(t.Context(), &memory.EditRequest{Scope: ro, Name: "doc", OldText: "original", NewText: "changed", WrittenAt: T0})
	errIs(t, "edit through read", err, memory.ErrReadOnly)
	_, err = p.Delete(t.Context(), &memory.DeleteRequest{Scope: ro, Name: "doc"})
	errIs(t, "delete through read", err, memory.ErrReadOnly)
	_, err = p.Delete(t.Context(), &memory.DeleteRequest{Scope: ro, Name: "missing"})
	errIs(t, "delete of a missing document through read", err, memory.ErrReadOnly)
	wantDocument(t, p, ro, "doc", "original\n", 1)
	if diff := cmp.Diff([]string{"doc"}, names(mustLs(t, p, ro, ""))); diff != "" {
		t.Errorf("ls through read (-want +got):\n%s", diff)
	}
	if got := mustGrep(t, p, memory.GrepRequest{Scope: ro, Pattern: "orig", Limit: 10}); len(got.Matches) != 1 {
		t.Errorf("grep through read: %+v", got)
	}
}

func p27Invalid(t *testing.T, p memory.Provider) {
	mustWrite(t, p, Workspace, strings.Repeat("n", memory.MaxNameBytes), "255 bytes is a valid name", T0)
	badNames := []string{
		"", "/a", "a/", "a//b", ".", "..", "./a", "a/.", "a/./b", "a/../b",
		"a\x00b", "a\x01b", "a\nb", "a\x1fb", "a\x7fb", `a\b`, "bad\xffutf8",
		strings.Repeat("n", memory.MaxNameBytes+1), strings.Repeat("é", 128),
	}
	for _, name := range badNames {
		q := strconvQuote(name)
		_, err := p.Read(t.Context(), &memory.ReadRequest{Scope: Workspace, Name: name})
		errIs(t, "read "+q, err, memory.ErrNameInvalid)
		_, err = p.Write(t.Context(), &memory.WriteRequest{Scope: Workspace, Name: name, Content: "x", WrittenAt: T0})
		errIs(t, "write "+q, err, memory.ErrNameInvalid)
		_, err = p.Edit(t.Context(), &memory.EditRequest{Scope: Workspace, Name: name, OldText: "x", NewText: "y", WrittenAt: T0})
		errIs(t, "edit "+q, err, memory.ErrNameInvalid)
		_, err = p.Delete(t.Context(), &memory.DeleteRequest{Scope: Workspace, Name: name})
		errIs(t, "delete "+q, err, memory.ErrNameInvalid)
	}
	if n := len(mustLs(t, p, Workspace, "")); n != 1 {
		t.Errorf("refused names left %d documents, want 1", n)
	}
	badScopes := map[string]memory.Scope{}
	for label, mutate := range map[string]func(*memory.Scope){
		"owner not a UUID":     func(s *memory.Scope) { s.OwnerID = "not-a-uuid" },
		"owner uppercase":      func(s *memory.Scope) { s.OwnerID = strings.ToUpper(OwnerWorkspace) },
		"owner empty":          func(s *memory.Scope) { s.OwnerID = "" },
		"owner path traversal": func(s *memory.Scope) { s.OwnerID = "../../../../../../etc/passwd" },
		"owner braced":         func(s *memory.Scope) { s.OwnerID = "{" + OwnerWorkspace[:34] + "}" },
		"kind unknown":         func(s *memory.Scope) { s.Kind = "team" },
		"kind empty":           func(s *memory.Scope) { s.Kind = "" },
		"access unknown":       func(s *memory.Scope) { s.Access = "write" },
		"binding empty":        func(s *memory.Scope) { s.Binding = "" },
		"binding uppercase":    func(s *memory.Scope) { s.Binding = "Workspace" },
		"workspace id invalid": func(s *memory.Scope) { s.WorkspaceID = "default" },
	} {
		s := Workspace
		mutate(&s)
		badScopes[label] = s
	}
	for label, s := range badScopes {
		_, err := p.Ls(t.Context(), &memory.LsRequest{Scope: s})
		errIs(t, "ls with "+label, err, memory.ErrInvalidArgument)
		_, err = p.Read(t.Context(), &memory.ReadRequest{Scope: s, Name: "doc"})
		errIs(t, "read with "+label, err, memory.ErrInvalidArgument)
		_, err = p.Grep(t.Context(), &memory.GrepRequest{Scope: s, Pattern: "x", Limit: 1})
		errIs(t, "grep with "+label, err, memory.ErrInvalidArgument)
		_, err = p.Write(t.Context(), &memory.WriteRequest{Scope: s, Name: "doc", Content: "x", WrittenAt: T0})
		errIs(t, "write with "+label, err, memory.ErrInvalidArgument)
		_, err = p.Edit(t.Context(), &memory.EditRequest{Scope: s, Name: "doc", OldText: "x", NewText: "y", WrittenAt: T0})
		errIs(t, "edit with "+label, err, memory.ErrInvalidArgument)
		_, err = p.Delete(t.Context(), &memory.DeleteRequest{Scope: s, Name: "doc"})
		errIs(t, "delete with "+label, err, memory.ErrInvalidArgument)
	}
	for _, limit := range []int{-1, memory.MaxGrepLimit + 1} {
		_, err := p.Grep(t.Context(), &memory.GrepRequest{Scope: Workspace, Pattern: "x", Limit: limit})
		errIs(t, "grep limit "+itoa(limit), err, memory.ErrInvalidArgument)
	}
	mustWrite(t, p, Workspace, "doc", "x", T0)
	_, err := p.Edit(t.Context(), &memory.EditRequest{Scope: Workspace, Name: "doc", OldText: "", NewText: "y", WrittenAt: T0})
	errIs(t, "edit with an empty old text", err, memory.ErrInvalidArgument)
	wantDocument(t, p, Workspace, "doc", "x", 1)
}

func p28ConcurrentCreates(t *testing.T, p memory.Provider) {
	const writers = 100
	errs := make([]error, writers)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range writers {
		wg.Go(func() {
			<-start
			_, errs[i] = p.Write(t.Context(), &memory.WriteRequest{Scope: Workspace, Name: "c-" + itoa(i), Content: "x", WrittenAt: T0})
		})
	}
	close(start)
	wg.Wait()
	ok, full := 0, 0
	for i, err := range errs {
		switch {
		case err == nil:
			ok++
		case errorsIs(err, memory.ErrFull):
			full++
		default:
			t.Errorf("create %d: %v", i, err)
		}
	}
	if ok != memory.MaxDocumentsPerAnchor || full != writers-memory.MaxDocumentsPerAnchor {
		t.Errorf("%d creates succeeded and %d were full, want %d and %d", ok, full, memory.MaxDocumentsPerAnchor, writers-memory.MaxDocumentsPerAnchor)
	}
	if n := len(mustLs(t, p, Workspace, "")); n != memory.MaxDocumentsPerAnchor {
		t.Errorf("anchor lists %d documents, want %d", n, memory.MaxDocumentsPerAnchor)
	}
}

func p29ConcurrentEdits(t *testing.T, p memory.Provider) {
	const slots = 20
	var before, after strings.Builder
	for i := range slots {
		before.WriteString("slot " + itoa(i) + " = empty;\n")
		after.WriteString("slot " + itoa(i) + " = filled by " + itoa(i) + ";\n")
	}
	mustWrite(t, p, Workspace, "doc", before.String(), T0)
	errs := make([]error, slots)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range slots {
		wg.Go(func() {
			<-start
			_, errs[i] = p.Edit(t.Context(), &memory.EditRequest{
				Scope: Workspace, Name: "doc",
				OldText: "slot " + itoa(i) + " = empty;", NewText: "slot " + itoa(i) + " = filled by " + itoa(i) + ";",
				WrittenAt: T0,
			})
		})
	}
	close(start)
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("edit of slot %d: %v", i, err)
		}
	}
	wantDocument(t, p, Workspace, "doc", after.String(), slots+1)
}

func p30EmptyContent(t *testing.T, p memory.Provider) {
	resp := mustWrite(t, p, Workspace, "empty", "", T0)
	wantEntry(t, "empty write", resp.Entry, memory.Entry{Name: "empty", SizeBytes: 0, WrittenAt: T0, Version: 1})
	wantDocument(t, p, Workspace, "empty", "", 1)
	if got := mustLs(t, p, Workspace, ""); len(got) != 1 || got[0].SizeBytes != 0 {
		t.Errorf("ls of an empty document: %+v", got)
	}
	for _, pattern := range []string{"^$", ".*", "", "^", "$"} {
		if pattern == "" {
			continue // an empty pattern is refused (P25)
		}
		got := mustGrep(t, p, memory.GrepRequest{Scope: Workspace, Pattern: pattern, Limit: 10})
		if len(got.Matches) != 0 || got.Truncated {
			t.Errorf("grep %q matched empty content: %+v", pattern, got)
		}
		got = mustGrep(t, p, memory.GrepRequest{Scope: Workspace, Pattern: pattern, Limit: 0})
		if got.Truncated {
			t.Errorf("grep %q limit 0 reports a match in empty content", pattern)
		}
	}
}

// p32AtomicReplace races readers against a writer that alternates two whole contents: every
// read must see one of them entirely, with a size that agrees.
func p32AtomicReplace(t *testing.T, p memory.Provider) {
	a := strings.Repeat("a", 40000)
	b := strings.Repeat("b", 20000) + "\n" + strings.Repeat("b", 5000)
	mustWrite(t, p, Workspace, "doc", a, T0)
	const rounds = 40
	var wg sync.WaitGroup
	stop := make(chan struct{})
	var bad sync.Once
	for range 2 {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				got, err := p.Read(t.Context(), &memory.ReadRequest{Scope: Workspace, Name: "doc"})
				if err != nil || got == nil {
					bad.Do(func() { t.Errorf("read during replace: %v", err) })
					return
				}
				if (got.Content != a && got.Content != b) || got.Entry.SizeBytes != int64(len(got.Content)) {
					bad.Do(func() {
						t.Errorf("read during replace saw a torn document: %d bytes, size %d", len(got.Content), got.Entry.SizeBytes)
					})
					return
				}
				ls := mustLsNoFatal(p, t.Context())
				if len(ls) != 1 {
					bad.Do(func() { t.Errorf("ls during replace saw %d documents", len(ls)) })
					return
				}
			}
		})
	}
	for i := range rounds {
		content := a
		if i%2 == 0 {
			content = b
		}
		if _, err := p.Write(t.Context(), &memory.WriteRequest{Scope: Workspace, Name: "doc", Content: content, WrittenAt: T0}); err != nil {
			t.Errorf("replace %d: %v", i, err)
		}
	}
	close(stop)
	wg.Wait()
	wantDocument(t, p, Workspace, "doc", a, rounds+1)
}

func mustLsNoFatal(p memory.Provider, ctx context.Context) []memory.Entry {
	resp, err := p.Ls(ctx, &memory.LsRequest{Scope: Workspace})
	if err != nil || resp == nil {
		return nil
	}
	return resp.Entries
}

// p33MixedMutations races writes, edits and deletes on distinct documents of one anchor, and
// creates in a second anchor: each document ends exactly as its own goroutine left it.
func p33MixedMutations(t *testing.T, p memory.Provider) {
	const n = 12
	for i := range n {
		mustWrite(t, p, Workspace, "m-"+itoa(i), "v0", T0)
	}
	var wg sync.WaitGroup
	errs := make(chan error, 4*n)
	for i := range n {
		wg.Go(func() {
			name := "m-" + itoa(i)
			for step := 1; step <= 3; step++ {
				if _, err := p.Edit(t.Context(), &memory.EditRequest{Scope: Workspace, Name: name, OldText: "v" + itoa(step-1), NewText: "v" + itoa(step), WrittenAt: T0}); err != nil {
					errs <- err
					return
				}
			}
			if i%3 == 0 {
				if _, err := p.Delete(t.Context(), &memory.DeleteRequest{Scope: Workspace, Name: name}); err != nil {
					errs <- err
				}
			}
		})
		wg.Go(func() {
			if _, err := p.Write(t.Context(), &memory.WriteRequest{Scope: OtherOwner, Name: "o-" + itoa(i), Content: "other", WrittenAt: T0}); err != nil {
				errs <- err
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Errorf("concurrent mutation: %v", err)
	}
	var want []string
	for i := range n {
		name := "m-" + itoa(i)
		if i%3 == 0 {
			_, err := p.Read(t.Context(), &memory.ReadRequest{Scope: Workspace, Name: name})
			errIs(t, "read of a deleted "+name, err, memory.ErrNotFound)
			continue
		}
		want = append(want, name)
		wantDocument(t, p, Workspace, name, "v3", 4)
	}
	if diff := cmp.Diff(sortedCopy(want), names(mustLs(t, p, Workspace, ""))); diff != "" {
		t.Errorf("ls after mixed mutations (-want +got):\n%s", diff)
	}
	if got := len(mustLs(t, p, OtherOwner, "")); got != n {
		t.Errorf("other anchor holds %d documents, want %d", got, n)
	}
}

// persistence is P31: documents, versions and times survive a close and reopen.
func persistence(t *testing.T, p memory.Provider, r Reopener) {
	mustWrite(t, p, Workspace, "kept.md", "line one\n", T0)
	if _, err := p.Edit(t.Context(), &memory.EditRequest{Scope: Workspace, Name: "kept.md", OldText: "one", NewText: "two", WrittenAt: T0.Add(time.Minute)}); err != nil {
		t.Fatalf("edit: %v", err)
	}
	mustWrite(t, p, User, "日本語 name", "ユーザー", T0.Add(2*time.Minute))
	mustWrite(t, p, Workspace, "deleted.md", "x", T0)
	if _, err := p.Delete(t.Context(), &memory.DeleteRequest{Scope: Workspace, Name: "deleted.md"}); err != nil {
		t.Fatalf("delete: %v", err)
	}
	before := map[memory.Scope][]memory.Entry{Workspace: mustLs(t, p, Workspace, ""), User: mustLs(t, p, User, "")}

	q, err := r.Reopen(t.Context())
	if err != nil {
		t.Fatalf("reopen: %v", err)
	}
	for s, entries := range before {
		if diff := cmp.Diff(entries, mustLs(t, q, s, "")); diff != "" {
			t.Errorf("%s entries after reopen (-before +after):\n%s", s.Kind, diff)
		}
	}
	got := mustRead(t, q, Workspace, "kept.md")
	wantEntry(t, "kept.md after reopen", got.Entry, memory.Entry{Name: "kept.md", SizeBytes: 9, WrittenAt: T0.Add(time.Minute), Version: 2})
	if got.Content != "line two\n" {
		t.Errorf("kept.md after reopen holds %q", got.Content)
	}
	if got := mustRead(t, q, User, "日本語 name"); got.Content != "ユーザー" || !got.Entry.WrittenAt.Equal(T0.Add(2*time.Minute)) {
		t.Errorf("user document after reopen: %+v", got)
	}
	_, err = q.Read(t.Context(), &memory.ReadRequest{Scope: Workspace, Name: "deleted.md"})
	errIs(t, "deleted document after reopen", err, memory.ErrNotFound)
	// The reopened store keeps working, versions continuing.
	if resp := mustWrite(t, q, Workspace, "kept.md", "after", T0); resp.Created || resp.Entry.Version != 3 {
		t.Errorf("write after reopen: created %v version %d, want false 3", resp.Created, resp.Entry.Version)
	}
}
