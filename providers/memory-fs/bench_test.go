package memoryfs_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	memoryfs "github.com/nexuskernel/nexus/providers/memory-fs"
	"github.com/nexuskernel/nexus/sdk/memory"
	"github.com/nexuskernel/nexus/sdk/memory/memorytest"
)

// B10 measures memory-fs against the filesystem primitives it is built on, side by side in one
// run over one tree: a read against os.ReadFile of the same file, a durable write against a bare
// write+fsync+rename, and a literal grep over every document against GNU grep -r. Goals: at most
// 1.5x, 1.2x and 1.0x.
const (
	// benchDocsDefault is the tree size of `make bench`: the 100k documents B10 names.
	benchDocsDefault = 100_000
	// benchDocsEnv overrides the tree size, for a quicker look.
	benchDocsEnv = "NEXUS_BENCH_MEMFS_DOCS"
	// needle is the literal B10 greps for; one document in needleEvery holds it once.
	needle      = "needle-7f3a"
	needleEvery = 100
)

// benchTree is a store root filled with documents spread over as many workspace anchors as the
// cap needs.
type benchTree struct {
	root    string
	docs    int
	anchors []memory.Scope
	names   []string // document name by index within its anchor
	content []string // content by document index
}

func (bt *benchTree) scopeOf(i int) memory.Scope { return bt.anchors[i/memory.MaxDocumentsPerAnchor] }
func (bt *benchTree) nameOf(i int) string        { return bt.names[i%memory.MaxDocumentsPerAnchor] }

// benchContent is about 1 KiB of ordinary notes, with the needle in one document in a hundred.
func benchContent(i int) string {
	var b strings.Builder
	for line := range 20 {
		fmt.Fprintf(&b, "- note %d.%d: the retry budget stays at %d until review\n", i, line, line%7)
	}
	if i%needleEvery == 0 {
		fmt.Fprintf(&b, "found %s in document %d\n", needle, i)
	}
	return b.String()
}

func anchorOwner(k int) string { return fmt.Sprintf("%08x-0000-4000-8000-%012x", k, k) }

// buildTree writes docs documents through memory-fs itself (fsync off to build quickly; the
// layout is the same) under root.
func buildTree(tb testing.TB, root string, docs int) *benchTree {
	tb.Helper()
	off := false
	s, err := memoryfs.Open(context.Background(), memoryfs.Config{Root: root, Fsync: &off})
	if err != nil {
		tb.Fatal(err)
	}
	defer s.Close()
	bt := &benchTree{root: root, docs: docs}
	for j := range memory.MaxDocumentsPerAnchor {
		bt.names = append(bt.names, fmt.Sprintf("notes/doc-%02d.md", j))
	}
	for k := 0; k*memory.MaxDocumentsPerAnchor < docs; k++ {
		bt.anchors = append(bt.anchors, memory.Scope{Binding: "workspace", Kind: memory.ScopeWorkspace, OwnerID: anchorOwner(k), Access: memory.AccessReadWrite})
	}
	bt.content = make([]string, docs)
	for i := range docs {
		bt.content[i] = benchContent(i)
		if _, err := s.Write(context.Background(), &memory.WriteRequest{Scope: bt.scopeOf(i), Name: bt.nameOf(i), Content: bt.content[i], WrittenAt: memorytest.T0}); err != nil {
			tb.Fatal(err)
		}
	}
	return bt
}

var (
	sharedTree     *benchTree
	sharedTreeErr  error
	sharedTreeOnce sync.Once
	sharedTreeDir  string
)

// tree builds the benchmark tree once per process; TestMain removes it.
func tree(b *testing.B) *benchTree {
	sharedTreeOnce.Do(func() {
		docs := benchDocsDefault
		if v := os.Getenv(benchDocsEnv); v != "" {
			if docs, sharedTreeErr = strconv.Atoi(v); sharedTreeErr != nil {
				return
			}
		}
		sharedTreeDir, sharedTreeErr = os.MkdirTemp("", "memoryfs-b10-")
		if sharedTreeErr != nil {
			return
		}
		b.Logf("building a tree of %d documents", docs)
		sharedTree = buildTree(b, sharedTreeDir, docs)
	})
	if sharedTreeErr != nil {
		b.Fatal(sharedTreeErr)
	}
	return sharedTree
}

func removeBenchTree() {
	if sharedTreeDir != "" {
		_ = os.RemoveAll(sharedTreeDir)
	}
}

func openDurable(tb testing.TB, root string) *memoryfs.Store {
	tb.Helper()
	s, err := memoryfs.Open(context.Background(), memoryfs.Config{Root: root})
	if err != nil {
		tb.Fatal(err)
	}
	return s
}

// spread visits documents in a scattered order, so reads are not served from one hot file.
func spread(i, n int) int { return int((uint64(i) * 7919) % uint64(n)) }

// sideBySide runs each operation once per iteration, rotating which goes first, so that both
// sides of a comparison see the same machine load even when it drifts during the run. It reports
// each side's mean time and the ratio of the first (memory-fs) to each baseline.
func sideBySide(b *testing.B, names []string, ops ...func(i int)) {
	spent := make([]time.Duration, len(ops))
	n := 0
	for ; b.Loop(); n++ {
		for k := range ops {
			j := (n + k) % len(ops)
			start := time.Now()
			ops[j](n)
			spent[j] += time.Since(start)
		}
	}
	for j, name := range names {
		b.ReportMetric(float64(spent[j].Nanoseconds())/float64(n), name+"-ns/op")
		if j > 0 {
			b.ReportMetric(float64(spent[0])/float64(spent[j]), "ratio-vs-"+name)
		}
	}
}

func BenchmarkB10Read(b *testing.B) {
	bt := tree(b)
	s := openDurable(b, bt.root)
	defer s.Close()
	ctx := context.Background()
	paths := make([]string, bt.docs)
	for d := range paths {
		paths[d] = docPath(bt.root, bt.scopeOf(d), bt.nameOf(d))
	}
	// The two sides read different documents of the same tree, so neither finds the other's
	// file freshly in a cache line.
	sideBySide(b, []string{"memoryfs", "os.ReadFile"},
		func(i int) {
			d := spread(2*i, bt.docs)
			if _, err := s.Read(ctx, &memory.ReadRequest{Scope: bt.scopeOf(d), Name: bt.nameOf(d)}); err != nil {
				b.Fatal(err)
			}
		},
		func(i int) {
			if _, err := os.ReadFile(paths[spread(2*i+1, bt.docs)]); err != nil {
				b.Fatal(err)
			}
		})
}

func BenchmarkB10DurableWrite(b *testing.B) {
	bt := tree(b)
	s := openDurable(b, bt.root)
	defer s.Close()
	ctx := context.Background()
	// Each side replaces a document with the bytes it already holds, which keeps the tree as
	// built for the other cases; the baselines write memory-fs's own file bytes.
	files := map[int][]byte{}
	fileOf := func(d int) (string, []byte) {
		path := docPath(bt.root, bt.scopeOf(d), bt.nameOf(d))
		if data, ok := files[d]; ok {
			return path, data
		}
		data, err := os.ReadFile(path)
		if err != nil {
			b.Fatal(err)
		}
		files[d] = data
		return path, data
	}
	for i := range 3 * 4096 {
		fileOf(spread(i, bt.docs))
	}
	bare := func(dirSync bool, side int) func(i int) {
		return func(i int) {
			path, data := fileOf(spread(3*i+side, bt.docs))
			if err := bareDurableWrite(filepath.Dir(path), path, data, dirSync); err != nil {
				b.Fatal(err)
			}
		}
	}
	sideBySide(b, []string{"memoryfs", "write+fsync+rename", "write+fsync+rename+fsync-dir"},
		func(i int) {
			d := spread(3*i, bt.docs)
			if _, err := s.Write(ctx, &memory.WriteRequest{Scope: bt.scopeOf(d), Name: bt.nameOf(d), Content: bt.content[d], WrittenAt: memorytest.T0}); err != nil {
				b.Fatal(err)
			}
		},
		bare(false, 1), bare(true, 2))
}

// bareDurableWrite is the baseline: temporary file, write, fsync, close, rename, and optionally
// an fsync of the directory.
func bareDurableWrite(dir, path string, data []byte, dirSync bool) error {
	f, err := os.CreateTemp(dir, ".tmp-*")
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		return err
	}
	if err := f.Sync(); err != nil {
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := os.Rename(f.Name(), path); err != nil {
		return err
	}
	if !dirSync {
		return nil
	}
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

func BenchmarkB10Grep(b *testing.B) {
	bt := tree(b)
	s := openDurable(b, bt.root)
	defer s.Close()
	if _, err := exec.LookPath("grep"); err != nil {
		b.Fatalf("GNU grep is needed for the B10 baseline: %v", err)
	}
	want := (bt.docs + needleEvery - 1) / needleEvery
	sideBySide(b, []string{"memoryfs", "grep-r"},
		func(int) {
			if got := grepTree(b, s, bt); got != want {
				b.Fatalf("memoryfs found %d matches, want %d", got, want)
			}
		},
		func(int) {
			if got := gnuGrep(b, bt.root); got != want {
				b.Fatalf("grep -r found %d matches, want %d", got, want)
			}
		})
}

// grepTree greps every anchor of the tree for the needle and counts the matches.
func grepTree(tb testing.TB, s *memoryfs.Store, bt *benchTree) int {
	n := 0
	for _, scope := range bt.anchors {
		resp, err := s.Grep(context.Background(), &memory.GrepRequest{Scope: scope, Pattern: needle, Limit: memory.MaxGrepLimit})
		if err != nil {
			tb.Fatal(err)
		}
		n += len(resp.Matches)
	}
	return n
}

// gnuGrep runs grep -r for the needle as a fixed string with line numbers, as a person would,
// and counts the matching lines it prints.
func gnuGrep(tb testing.TB, root string) int {
	out, err := exec.Command("grep", "-r", "-n", "-F", needle, filepath.Join(root, "anchors")).Output()
	if err != nil {
		tb.Fatalf("grep -r: %v", err)
	}
	return bytes.Count(out, []byte("\n"))
}

// TestB10Shape runs each B10 operation once over a small tree, so the benchmark's code stays
// correct between `make bench` runs: both sides of each pair find the same documents and the
// same matches.
func TestB10Shape(t *testing.T) {
	t.Parallel()
	docs := 3*memory.MaxDocumentsPerAnchor + 10
	bt := buildTree(t, t.TempDir(), docs)
	s := openAt(t, bt.root)
	for _, d := range []int{0, 1, docs - 1} {
		got, err := s.Read(t.Context(), &memory.ReadRequest{Scope: bt.scopeOf(d), Name: bt.nameOf(d)})
		if err != nil || got.Content != bt.content[d] {
			t.Fatalf("read %d: %v", d, err)
		}
		raw, err := os.ReadFile(docPath(bt.root, bt.scopeOf(d), bt.nameOf(d)))
		if err != nil || !bytes.HasSuffix(raw, []byte(bt.content[d])) {
			t.Fatalf("os.ReadFile %d: %v", d, err)
		}
		if _, err := s.Write(t.Context(), &memory.WriteRequest{Scope: bt.scopeOf(d), Name: bt.nameOf(d), Content: bt.content[d], WrittenAt: memorytest.T0}); err != nil {
			t.Fatalf("write %d: %v", d, err)
		}
		path := docPath(bt.root, bt.scopeOf(d), bt.nameOf(d))
		if err := bareDurableWrite(filepath.Dir(path), path, raw, true); err != nil {
			t.Fatalf("baseline write %d: %v", d, err)
		}
	}
	want := (docs + needleEvery - 1) / needleEvery
	if got := grepTree(t, s, bt); got != want {
		t.Errorf("memoryfs grep found %d, want %d", got, want)
	}
	if _, err := exec.LookPath("grep"); err != nil {
		t.Logf("no grep on this machine; the GNU baseline is checked under make bench only")
		return
	}
	if got := gnuGrep(t, bt.root); got != want {
		t.Errorf("grep -r found %d, want %d", got, want)
	}
}
