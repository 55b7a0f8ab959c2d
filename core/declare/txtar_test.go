package declare

import (
	"bytes"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/tools/txtar"

	"github.com/nexuskernel/nexus/core/declare/declaretest"
)

// goldenArchive is one txtar golden file: input sections, and want/… sections the test
// compares (or rewrites under -update).
type goldenArchive struct {
	path string
	ar   *txtar.Archive
	got  map[string][]byte
}

// eachArchive runs one parallel subtest per testdata/<dir>/*.txtar.
func eachArchive(t *testing.T, dir string, run func(t *testing.T, g *goldenArchive)) {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join("testdata", dir, "*.txtar"))
	if err != nil || len(paths) == 0 {
		t.Fatalf("no golden files in testdata/%s: %v", dir, err)
	}
	sort.Strings(paths)
	for _, p := range paths {
		id := strings.TrimSuffix(filepath.Base(p), ".txtar")
		t.Run(id, func(t *testing.T) {
			t.Parallel()
			ar, err := txtar.ParseFile(p)
			if err != nil {
				t.Fatal(err)
			}
			g := &goldenArchive{path: p, ar: ar, got: map[string][]byte{}}
			run(t, g)
			g.finish(t)
		})
	}
}

// section returns an input section's content without its final line feed.
func (g *goldenArchive) section(name string) ([]byte, bool) {
	for _, f := range g.ar.Files {
		if f.Name == name {
			return bytes.TrimSuffix(f.Data, []byte("\n")), true
		}
	}
	return nil, false
}

// want records what the code produced for a want/<name> section.
func (g *goldenArchive) want(name string, got []byte) { g.got["want/"+name] = got }

// finish compares every want/… section with what the test produced: the sections must be the
// same set, with the same bytes. Under -update the archive's want sections are rewritten.
func (g *goldenArchive) finish(t *testing.T) {
	t.Helper()
	if *update {
		var files []txtar.File
		for _, f := range g.ar.Files {
			if !strings.HasPrefix(f.Name, "want/") {
				files = append(files, f)
			}
		}
		names := make([]string, 0, len(g.got))
		for n := range g.got {
			names = append(names, n)
		}
		sort.Strings(names)
		for _, n := range names {
			files = append(files, txtar.File{Name: n, Data: append(append([]byte(nil), g.got[n]...), '\n')})
		}
		g.ar.Files = files
		if err := os.WriteFile(g.path, txtar.Format(g.ar), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	wantNames := map[string]bool{}
	for _, f := range g.ar.Files {
		if !strings.HasPrefix(f.Name, "want/") {
			continue
		}
		wantNames[f.Name] = true
		got, ok := g.got[f.Name]
		if !ok {
			t.Errorf("%s: expected %s, the code produced none (run go test -update to accept)", g.path, f.Name)
			continue
		}
		want := bytes.TrimSuffix(f.Data, []byte("\n"))
		if !bytes.Equal(got, want) {
			t.Errorf("%s: %s differs (run go test -update to accept):\n%s", g.path, f.Name, cmp.Diff(pretty(want), pretty(got)))
		}
	}
	for n := range g.got {
		if !wantNames[n] {
			t.Errorf("%s: the code produced %s, which the file does not expect:\n%s", g.path, n, clip(string(g.got[n])))
		}
	}
}

// refusalJSON is the golden form of a refusal: the word, then the unprefixed path and the
// acceptance facts when set.
func refusalJSON(r declaretest.Refused) []byte {
	var b bytes.Buffer
	b.WriteString(`{"word":`)
	b.Write(mustMarshal(r.Word))
	for _, kv := range [][2]string{
		{"path", r.Path},
		{"callable", r.Callable},
		{"runner_executor_public_id", r.RunnerID},
		{"tool_name", r.ToolName},
	} {
		if kv[1] != "" {
			b.WriteString(`,"` + kv[0] + `":`)
			b.Write(mustMarshal(kv[1]))
		}
	}
	b.WriteByte('}')
	return b.Bytes()
}
