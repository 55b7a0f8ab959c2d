package memorytest

import (
	"errors"
	"fmt"
	"sort"
	"strconv"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/nexuskernel/nexus/sdk/memory"
)

func mustWrite(t *testing.T, p memory.Provider, s memory.Scope, name, content string, at time.Time) *memory.WriteResponse {
	t.Helper()
	resp, err := p.Write(t.Context(), &memory.WriteRequest{Scope: s, Name: name, Content: content, WrittenAt: at})
	if err != nil {
		t.Fatalf("write %s %q: %v", s.Kind, name, err)
	}
	if resp == nil {
		t.Fatalf("write %s %q: nil response", s.Kind, name)
	}
	return resp
}

func mustRead(t *testing.T, p memory.Provider, s memory.Scope, name string) *memory.ReadResponse {
	t.Helper()
	resp, err := p.Read(t.Context(), &memory.ReadRequest{Scope: s, Name: name})
	if err != nil {
		t.Fatalf("read %s %q: %v", s.Kind, name, err)
	}
	if resp == nil {
		t.Fatalf("read %s %q: nil response", s.Kind, name)
	}
	return resp
}

func mustLs(t *testing.T, p memory.Provider, s memory.Scope, prefix string) []memory.Entry {
	t.Helper()
	resp, err := p.Ls(t.Context(), &memory.LsRequest{Scope: s, NamePrefix: prefix})
	if err != nil {
		t.Fatalf("ls %s %q: %v", s.Kind, prefix, err)
	}
	if resp == nil {
		t.Fatalf("ls %s %q: nil response", s.Kind, prefix)
	}
	return resp.Entries
}

func mustGrep(t *testing.T, p memory.Provider, req memory.GrepRequest) *memory.GrepResponse {
	t.Helper()
	resp, err := p.Grep(t.Context(), &req)
	if err != nil {
		t.Fatalf("grep %q: %v", req.Pattern, err)
	}
	if resp == nil {
		t.Fatalf("grep %q: nil response", req.Pattern)
	}
	return resp
}

func names(entries []memory.Entry) []string {
	out := []string{}
	for _, e := range entries {
		out = append(out, e.Name)
	}
	return out
}

// wantEntry checks every field of an entry, and that its time is in UTC.
func wantEntry(t *testing.T, what string, got, want memory.Entry) {
	t.Helper()
	// The id is random: P34 checks it.
	if diff := cmp.Diff(want, got, cmpopts.IgnoreFields(memory.Entry{}, "ID")); diff != "" {
		t.Errorf("%s: entry (-want +got):\n%s", what, diff)
	}
	if got.WrittenAt.Location() != time.UTC {
		t.Errorf("%s: WrittenAt in %v, want UTC", what, got.WrittenAt.Location())
	}
}

// wantDocument checks that a document holds exactly content at version.
func wantDocument(t *testing.T, p memory.Provider, s memory.Scope, name, content string, version uint64) {
	t.Helper()
	got := mustRead(t, p, s, name)
	if got.Content != content {
		t.Errorf("%q holds %q, want %q", name, clip(got.Content), clip(content))
	}
	if got.Entry.Version != version || got.Entry.SizeBytes != int64(len(content)) {
		t.Errorf("%q: version %d size %d, want version %d size %d", name, got.Entry.Version, got.Entry.SizeBytes, version, len(content))
	}
}

func clip(s string) string {
	if len(s) > 80 {
		return s[:80] + "…"
	}
	return s
}

// fill creates n documents doc-00 … in s.
func fill(t *testing.T, p memory.Provider, s memory.Scope, n int) {
	t.Helper()
	for i := range n {
		mustWrite(t, p, s, docName(i), "x", T0)
	}
}

func docName(i int) string { return fmt.Sprintf("doc-%03d", i) }

func itoa(i int) string { return strconv.Itoa(i) }

func strconvQuote(s string) string { return strconv.Quote(s) }

func errorsIs(err, target error) bool { return errors.Is(err, target) }

func sortedCopy(s []string) []string {
	out := append([]string{}, s...)
	sort.Strings(out)
	return out
}
