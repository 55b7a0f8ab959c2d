package projection

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/tools/txtar"

	"github.com/nexuskernel/nexus/core/declare"
	"github.com/nexuskernel/nexus/core/declare/declaretest"
	"github.com/nexuskernel/nexus/sdk/announce"
	"github.com/nexuskernel/nexus/sdk/jsonwire"
)

// update rewrites the golden files from the current code: go test ./core/projection -update.
var update = flag.Bool("update", false, "rewrite golden files")

func fixture(t testing.TB) *declare.Compiler {
	t.Helper()
	c, err := declare.New(declaretest.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// repeatMacro lets a golden input hold a long string without a long file:
// "$REPEAT(d,1024)" is 1,024 d characters.
var repeatMacro = regexp.MustCompile(`\$REPEAT\(([^,]),(\d+)\)`)

func expand(raw []byte) []byte {
	return repeatMacro.ReplaceAllFunc(raw, func(m []byte) []byte {
		sub := repeatMacro.FindSubmatch(m)
		n, _ := strconv.Atoi(string(sub[2]))
		return bytes.Repeat(sub[1], n)
	})
}

type archive struct {
	path string
	ar   *txtar.Archive
	got  map[string][]byte
}

func (a *archive) section(t *testing.T, name string) []byte {
	t.Helper()
	for _, f := range a.ar.Files {
		if f.Name == name {
			return expand(bytes.TrimSuffix(f.Data, []byte("\n")))
		}
	}
	return nil
}

// TestGolden runs every projection (P) and skills block (K) example of the declaration rules
// from testdata/golden, one subtest per file. A P file gives an authored set and a frozen skill
// catalog and expects the offered tools in the neutral form (the provider wire shapes are the
// adapters' in core/model); a K
// file freezes a set with Runners and kernel skill rows and expects the block or none.
func TestGolden(t *testing.T) {
	t.Parallel()
	c := fixture(t)
	paths, _ := filepath.Glob("testdata/golden/*.txtar")
	if len(paths) == 0 {
		t.Fatal("no golden files")
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
			a := &archive{path: p, ar: ar, got: map[string][]byte{}}
			set, err := c.Compile(a.section(t, "set"))
			if err != nil {
				t.Fatal(err)
			}
			stored := string(set.Bytes())
			if strings.HasPrefix(id, "P") {
				runProjection(t, a, set)
			} else {
				runSkillsBlock(t, c, a, set)
			}
			if string(set.Bytes()) != stored {
				t.Fatal("projecting changed the stored set")
			}
			a.finish(t)
		})
	}
}

func runProjection(t *testing.T, a *archive, set *declare.Set) {
	var catalog declare.SkillCatalog
	if err := json.Unmarshal(a.section(t, "skill_catalog"), &catalog); err != nil {
		t.Fatal(err)
	}
	p := Project(set, catalog)
	a.got["want/offered"] = jsonwire.Array(p.Tools...).Encode()
}

func runSkillsBlock(t *testing.T, c *declare.Compiler, a *archive, set *declare.Set) {
	in := declare.Acceptance{Explicit: set}
	if raw := a.section(t, "runners"); raw != nil {
		var rs []struct {
			PublicID     string                `json:"public_id"`
			DisplayName  string                `json:"display_name"`
			Eligible     bool                  `json:"eligible"`
			Announcement announce.Announcement `json:"announcement"`
		}
		if err := json.Unmarshal(raw, &rs); err != nil {
			t.Fatal(err)
		}
		for _, r := range rs {
			in.Runners = append(in.Runners, declare.Runner(r))
		}
	}
	var rows []struct {
		Source      declare.SkillSource `json:"source"`
		Name        string              `json:"name"`
		Description string              `json:"description"`
	}
	if err := json.Unmarshal(a.section(t, "kernel_skills"), &rows); err != nil {
		t.Fatal(err)
	}
	for _, r := range rows {
		in.KernelSkills = append(in.KernelSkills, declare.KernelSkill(r))
	}
	frozen, err := c.Accept(in)
	if err != nil {
		t.Fatal(err)
	}
	p := Project(frozen.ToolDefinitions, frozen.SkillCatalog)
	block, ok := SkillsBlock(frozen.ToolDefinitions, p, frozen.SkillCatalog)
	if !ok {
		a.got["want/no_block"] = []byte{}
		return
	}
	if len(block) > MaxSkillsBlockBytes {
		t.Fatalf("block of %d bytes", len(block))
	}
	a.got["want/block"] = []byte(block)
	again, _ := SkillsBlock(frozen.ToolDefinitions, Project(frozen.ToolDefinitions, frozen.SkillCatalog), frozen.SkillCatalog)
	if again != block {
		t.Fatal("the same inputs gave another block")
	}
}

func (a *archive) finish(t *testing.T) {
	t.Helper()
	if *update {
		var files []txtar.File
		for _, f := range a.ar.Files {
			if !strings.HasPrefix(f.Name, "want/") {
				files = append(files, f)
			}
		}
		var names []string
		for n := range a.got {
			names = append(names, n)
		}
		sort.Strings(names)
		for _, n := range names {
			files = append(files, txtar.File{Name: n, Data: append(append([]byte(nil), a.got[n]...), '\n')})
		}
		a.ar.Files = files
		if err := os.WriteFile(a.path, txtar.Format(a.ar), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	seen := map[string]bool{}
	for _, f := range a.ar.Files {
		if !strings.HasPrefix(f.Name, "want/") {
			continue
		}
		seen[f.Name] = true
		got, ok := a.got[f.Name]
		want := bytes.TrimSuffix(f.Data, []byte("\n"))
		if !ok {
			t.Errorf("%s: expected %s, got none (go test -update accepts)", a.path, f.Name)
		} else if !bytes.Equal(got, want) {
			t.Errorf("%s: %s differs (go test -update accepts):\n%s", a.path, f.Name, cmp.Diff(string(want), string(got)))
		}
	}
	for n := range a.got {
		if !seen[n] {
			t.Errorf("%s: produced %s, which the file does not expect", a.path, n)
		}
	}
}
