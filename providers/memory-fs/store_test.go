package memoryfs_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	memoryfs "github.com/nexuskernel/nexus/providers/memory-fs"
	"github.com/nexuskernel/nexus/sdk/memory"
	"github.com/nexuskernel/nexus/sdk/memory/memorytest"
)

var ws = memorytest.Workspace

func openAt(t *testing.T, root string) *memoryfs.Store {
	t.Helper()
	s, err := memoryfs.Open(t.Context(), memoryfs.Config{Root: root})
	if err != nil {
		t.Fatalf("open %s: %v", root, err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func docPath(root string, scope memory.Scope, name string) string {
	sum := sha256.Sum256([]byte(name))
	return filepath.Join(root, "anchors", string(scope.Kind), scope.OwnerID, hex.EncodeToString(sum[:])+".doc")
}

func write(t *testing.T, s memory.Provider, scope memory.Scope, name, content string, at time.Time) {
	t.Helper()
	if _, err := s.Write(t.Context(), &memory.WriteRequest{Scope: scope, Name: name, Content: content, WrittenAt: at}); err != nil {
		t.Fatalf("write %q: %v", name, err)
	}
}

// TestLayout pins the files on disk: FORMAT, ROOT_ID, the anchor directories, one file per document
// named by the hash of its name, the header line byte for byte, and private modes.
func TestLayout(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	s := openAt(t, root)
	at := time.Date(2025, 11, 30, 10, 2, 41, 123456000, time.UTC)
	content := strings.Repeat("x", 87) + "\n"
	write(t, s, ws, "notes/todo.md", "v1", at)
	write(t, s, ws, "notes/todo.md", "v2", at)
	write(t, s, ws, "notes/todo.md", content, at)
	write(t, s, memorytest.User, `quote" <&> ü`, "", at)

	if got, _ := os.ReadFile(filepath.Join(root, "FORMAT")); string(got) != "nexus-memory-fs 1\n" {
		t.Errorf("FORMAT holds %q", got)
	}
	got, err := os.ReadFile(docPath(root, ws, "notes/todo.md"))
	if err != nil {
		t.Fatal(err)
	}
	idOf := func(scope memory.Scope, name string) string {
		r, err := s.Read(t.Context(), &memory.ReadRequest{Scope: scope, Name: name})
		if err != nil {
			t.Fatal(err)
		}
		return r.Entry.ID
	}
	want := `{"format":1,"name":"notes/todo.md","size_bytes":88,"version":3,"written_at":"2025-11-30T10:02:41.123456Z","id":"` + idOf(ws, "notes/todo.md") + `"}` + "\n" + content
	if diff := cmp.Diff(want, string(got)); diff != "" {
		t.Errorf("document file (-want +got):\n%s", diff)
	}
	got, _ = os.ReadFile(docPath(root, memorytest.User, `quote" <&> ü`))
	if want := `{"format":1,"name":"quote\" <&> ü","size_bytes":0,"version":1,"written_at":"2025-11-30T10:02:41.123456Z","id":"` + idOf(memorytest.User, `quote" <&> ü`) + `"}` + "\n"; string(got) != want {
		t.Errorf("document file %q, want %q", got, want)
	}
	// Every directory is 0700, every file 0600, and nothing but documents and the lock remain.
	var files []string
	err = filepath.Walk(root, func(path string, info os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		wantMode := os.FileMode(0o600)
		if info.IsDir() {
			wantMode = 0o700 | os.ModeDir
		} else {
			files = append(files, rel)
		}
		if rel != "." && info.Mode() != wantMode {
			t.Errorf("%s has mode %v, want %v", rel, info.Mode(), wantMode)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	wsDir := filepath.Join("anchors", "workspace", ws.OwnerID)
	userDir := filepath.Join("anchors", "user", memorytest.OwnerUser)
	rel := func(p string) string { r, _ := filepath.Rel(root, p); return r }
	wantFiles := []string{
		"FORMAT", "ROOT_ID",
		filepath.Join(userDir, ".lock"), rel(docPath(root, memorytest.User, `quote" <&> ü`)),
		filepath.Join(wsDir, ".lock"), rel(docPath(root, ws, "notes/todo.md")),
	}
	if diff := cmp.Diff(wantFiles, files); diff != "" {
		t.Errorf("files under the root (-want +got):\n%s", diff)
	}
	for _, kind := range []string{"conversation", "workspace", "user"} {
		if info, err := os.Stat(filepath.Join(root, "anchors", kind)); err != nil || !info.IsDir() {
			t.Errorf("anchors/%s: %v", kind, err)
		}
	}
}

// TestOpenRefusals: Open needs a root and refuses one written in another format.
func TestOpenRefusals(t *testing.T) {
	t.Parallel()
	if _, err := memoryfs.Open(t.Context(), memoryfs.Config{}); !errors.Is(err, memoryfs.ErrConfigInvalid) {
		t.Errorf("empty root: %v", err)
	}
	root := t.TempDir()
	if err := os.WriteFile(filepath.Join(root, "FORMAT"), []byte("nexus-memory-fs 2\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := memoryfs.Open(t.Context(), memoryfs.Config{Root: root}); !errors.Is(err, memoryfs.ErrConfigInvalid) {
		t.Errorf("unknown format: %v", err)
	}
	// A root that cannot be created is a filesystem failure, retried by a plugin host.
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := memoryfs.Open(t.Context(), memoryfs.Config{Root: filepath.Join(file, "root")}); !errors.Is(err, memory.ErrUnavailable) {
		t.Errorf("root under a file: %v", err)
	}
	// Opening an existing root again keeps its documents.
	root = t.TempDir()
	write(t, openAt(t, root), ws, "kept", "x", memorytest.T0)
	if got, err := openAt(t, root).Read(t.Context(), &memory.ReadRequest{Scope: ws, Name: "kept"}); err != nil || got.Content != "x" {
		t.Errorf("reopened root: %+v, %v", got, err)
	}
}

// TestStaleTemporaryFiles: leftovers of a crashed writer are invisible to every call, do not
// count toward the cap, and are removed at Open once older than an hour.
func TestStaleTemporaryFiles(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	s := openAt(t, root)
	write(t, s, ws, "doc", "x", memorytest.T0)
	dir := filepath.Dir(docPath(root, ws, "doc"))
	old, fresh := filepath.Join(dir, ".tmp-123"), filepath.Join(dir, ".tmp-456")
	// A process that died writing the root's marker leaves its temporary file in the root.
	oldMarker := filepath.Join(root, ".tmp-789")
	for _, p := range []string{old, fresh, oldMarker} {
		if err := os.WriteFile(p, []byte("half a document"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	stale := time.Now().Add(-2 * time.Hour)
	for _, p := range []string{old, oldMarker} {
		if err := os.Chtimes(p, stale, stale); err != nil {
			t.Fatal(err)
		}
	}
	ls, err := s.Ls(t.Context(), &memory.LsRequest{Scope: ws})
	if err != nil || len(ls.Entries) != 1 {
		t.Errorf("ls with temporary files: %+v, %v", ls, err)
	}
	for i := 1; i < memory.MaxDocumentsPerAnchor; i++ {
		write(t, s, ws, "fill-"+string(rune('a'+i%26))+string(rune('a'+i/26)), "x", memorytest.T0)
	}
	openAt(t, root)
	for _, p := range []string{old, oldMarker} {
		if _, err := os.Stat(p); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("stale temporary file %s survived Open: %v", p, err)
		}
	}
	if _, err := os.Stat(fresh); err != nil {
		t.Errorf("fresh temporary file removed: %v", err)
	}
}

// TestCorruptFiles: a damaged document is reported as unavailable, never served or skipped.
func TestCorruptFiles(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	s := openAt(t, root)
	write(t, s, ws, "a", "alpha\n", memorytest.T0)
	write(t, s, ws, "b", "beta\n", memorytest.T0)
	pathA, pathB := docPath(root, ws, "a"), docPath(root, ws, "b")
	data, _ := os.ReadFile(pathA)
	for name, damage := range map[string]func() error{
		"truncated body": func() error { return os.WriteFile(pathA, data[:len(data)-2], 0o600) },
		"longer body":    func() error { return os.WriteFile(pathA, append(append([]byte{}, data...), 'x'), 0o600) },
		"no header":      func() error { return os.WriteFile(pathA, []byte("alpha"), 0o600) },
		"bad header":     func() error { return os.WriteFile(pathA, []byte("{not json}\nalpha\n"), 0o600) },
		"other format": func() error {
			return os.WriteFile(pathA, []byte(strings.Replace(string(data), `"format":1`, `"format":2`, 1)), 0o600)
		},
		"bad time": func() error {
			return os.WriteFile(pathA, []byte(strings.Replace(string(data), "2030-", "year-", 1)), 0o600)
		},
		"version zero": func() error {
			return os.WriteFile(pathA, []byte(strings.Replace(string(data), `"version":1`, `"version":0`, 1)), 0o600)
		},
		"file of another":    func() error { b, _ := os.ReadFile(pathB); return os.WriteFile(pathA, b, 0o600) },
		"oversized":          func() error { return os.WriteFile(pathA, make([]byte, 80000), 0o600) },
		"header only no end": func() error { return os.WriteFile(pathA, []byte(strings.Repeat("{", 5000)), 0o600) },
	} {
		if err := damage(); err != nil {
			t.Fatal(err)
		}
		_, err := s.Read(t.Context(), &memory.ReadRequest{Scope: ws, Name: "a"})
		if !errors.Is(err, memory.ErrUnavailable) {
			t.Errorf("%s: read: %v", name, err)
		}
		_, err = s.Grep(t.Context(), &memory.GrepRequest{Scope: ws, Pattern: "a", Limit: 10})
		if !errors.Is(err, memory.ErrUnavailable) {
			t.Errorf("%s: grep: %v", name, err)
		}
		_, err = s.Edit(t.Context(), &memory.EditRequest{Scope: ws, Name: "a", OldText: "alpha", NewText: "x", WrittenAt: memorytest.T0})
		if !errors.Is(err, memory.ErrUnavailable) {
			t.Errorf("%s: edit: %v", name, err)
		}
		if err := os.WriteFile(pathA, data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	// A header-level fault is seen by ls too.
	if err := os.WriteFile(pathA, []byte("{}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Ls(t.Context(), &memory.LsRequest{Scope: ws}); !errors.Is(err, memory.ErrUnavailable) {
		t.Errorf("ls over a corrupt header: %v", err)
	}
	// Files that are not documents are ignored.
	dir := filepath.Dir(pathA)
	if err := os.WriteFile(pathA, data, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"README", "x.doc", strings.Repeat("g", 64) + ".doc", strings.Repeat("A", 64) + ".doc"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte("{}\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if ls, err := s.Ls(t.Context(), &memory.LsRequest{Scope: ws}); err != nil || len(ls.Entries) != 2 {
		t.Errorf("ls beside foreign files: %+v, %v", ls, err)
	}
}

// TestClosed: a closed store answers ErrUnavailable.
func TestClosed(t *testing.T) {
	t.Parallel()
	s := openAt(t, t.TempDir())
	write(t, s, ws, "doc", "x", memorytest.T0)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	_, errLs := s.Ls(ctx, &memory.LsRequest{Scope: ws})
	_, errRead := s.Read(ctx, &memory.ReadRequest{Scope: ws, Name: "doc"})
	_, errGrep := s.Grep(ctx, &memory.GrepRequest{Scope: ws, Pattern: "x", Limit: 1})
	_, errWrite := s.Write(ctx, &memory.WriteRequest{Scope: ws, Name: "doc", Content: "y", WrittenAt: memorytest.T0})
	_, errEdit := s.Edit(ctx, &memory.EditRequest{Scope: ws, Name: "doc", OldText: "x", NewText: "y", WrittenAt: memorytest.T0})
	_, errDelete := s.Delete(ctx, &memory.DeleteRequest{Scope: ws, Name: "doc"})
	for i, err := range []error{errLs, errRead, errGrep, errWrite, errEdit, errDelete} {
		if !errors.Is(err, memory.ErrUnavailable) {
			t.Errorf("call %d after Close: %v", i, err)
		}
	}
}

// TestFileLockIsHonoured: a mutation waits for the anchor's flock, whoever holds it, and gives
// up with its context; reads never wait.
func TestFileLockIsHonoured(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	s := openAt(t, root)
	write(t, s, ws, "doc", "before", memorytest.T0)
	lockPath := filepath.Join(filepath.Dir(docPath(root, ws, "doc")), ".lock")
	f, err := os.OpenFile(lockPath, os.O_RDWR, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
	defer cancel()
	_, err = s.Write(ctx, &memory.WriteRequest{Scope: ws, Name: "doc", Content: "during", WrittenAt: memorytest.T0})
	if !errors.Is(err, memory.ErrUnavailable) || !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("write while another holds the lock: %v", err)
	}
	_, err = s.Delete(ctx, &memory.DeleteRequest{Scope: ws, Name: "doc"})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("delete while another holds the lock: %v", err)
	}
	if got, err := s.Read(t.Context(), &memory.ReadRequest{Scope: ws, Name: "doc"}); err != nil || got.Content != "before" {
		t.Errorf("read while the lock is held: %+v, %v", got, err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := s.Edit(t.Context(), &memory.EditRequest{Scope: ws, Name: "doc", OldText: "before", NewText: "after", WrittenAt: memorytest.T0})
		done <- err
	}()
	select {
	case err := <-done:
		t.Fatalf("edit finished while the lock was held: %v", err)
	case <-time.After(50 * time.Millisecond):
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_UN); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatalf("edit after the lock was released: %v", err)
	}
	if got, _ := s.Read(t.Context(), &memory.ReadRequest{Scope: ws, Name: "doc"}); got.Content != "after" || got.Entry.Version != 2 {
		t.Errorf("after the edit: %+v", got)
	}
}

// TestWithoutFsync: the test-only setting keeps the same behaviour.
func TestWithoutFsync(t *testing.T) {
	t.Parallel()
	off := false
	factory := func(t *testing.T) memory.Provider {
		s, err := memoryfs.Open(t.Context(), memoryfs.Config{Root: t.TempDir(), Fsync: &off})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	memorytest.RunProvider(t, factory)
}

// TestMissingAnchor: edit and delete in an anchor never written answer not found without
// creating its directory.
func TestMissingAnchor(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	s := openAt(t, root)
	_, err := s.Edit(t.Context(), &memory.EditRequest{Scope: ws, Name: "doc", OldText: "a", NewText: "b", WrittenAt: memorytest.T0})
	if !errors.Is(err, memory.ErrNotFound) {
		t.Errorf("edit: %v", err)
	}
	_, err = s.Delete(t.Context(), &memory.DeleteRequest{Scope: ws, Name: "doc"})
	if !errors.Is(err, memory.ErrNotFound) {
		t.Errorf("delete: %v", err)
	}
	if _, err := os.Stat(filepath.Join(root, "anchors", "workspace", ws.OwnerID)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("anchor directory created: %v", err)
	}
}

// TestLegacyDocumentGetsAnID: a document written before ids were kept (a header without "id")
// reads with no id, refuses every condition, and its next write gives it one.
func TestLegacyDocumentGetsAnID(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	s := openAt(t, root)
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	write(t, s, ws, "old.md", "v1", at)
	legacy := `{"format":1,"name":"old.md","size_bytes":2,"version":1,"written_at":"2026-01-02T03:04:05.000000Z"}` + "\nv1"
	if err := os.WriteFile(docPath(root, ws, "old.md"), []byte(legacy), 0o600); err != nil {
		t.Fatal(err)
	}
	r, err := s.Read(t.Context(), &memory.ReadRequest{Scope: ws, Name: "old.md"})
	if err != nil || r.Entry.ID != "" || r.Content != "v1" {
		t.Fatalf("a legacy document reads %+v, %v", r, err)
	}
	_, err = s.Delete(t.Context(), &memory.DeleteRequest{Scope: ws, Name: "old.md", Expect: &memory.Expect{Version: 1}})
	if !errors.Is(err, memory.ErrStale) {
		t.Fatalf("a condition on a legacy document: %v", err)
	}
	edited, err := s.Edit(t.Context(), &memory.EditRequest{Scope: ws, Name: "old.md", OldText: "v1", NewText: "v2", WrittenAt: at})
	if err != nil || edited.Entry.ID == "" || edited.Entry.Version != 2 {
		t.Fatalf("the next edit: %+v %v", edited, err)
	}
	if r, err := s.Read(t.Context(), &memory.ReadRequest{Scope: ws, Name: "old.md"}); err != nil || r.Entry.ID != edited.Entry.ID {
		t.Fatalf("after the edit: %+v %v", r, err)
	}
}
