package projection

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nexuskernel/nexus/core/declare"
	"github.com/nexuskernel/nexus/core/declare/jsonv"
	"github.com/nexuskernel/nexus/sdk/announce"
)

// TestProjectImportedEntry: an imported Runner tool reaches the provider without its route or
// defer_loading, and ProjectEntry projects a deferred entry for tool_search all the same.
func TestProjectImportedEntry(t *testing.T) {
	t.Parallel()
	c := fixture(t)
	d := "Read a file."
	frozen, err := c.Accept(declare.Acceptance{
		Imports:   &declare.Imports{RunnerExecutorPublicIDs: []string{"01900000-0000-7000-8000-000000000051"}},
		Selection: "01900000-0000-7000-8000-000000000051",
		Runners: []declare.Runner{{PublicID: "01900000-0000-7000-8000-000000000051", Eligible: true,
			Announcement: announce.Announcement{Tools: []announce.Tool{{Name: "read", Description: &d, InputSchema: json.RawMessage(`{"type":"object"}`)}}}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	p := Project(frozen.ToolDefinitions, nil)
	want := `[{"type":"function","function":{"name":"read","description":"Read a file.","parameters":{"type":"object"},"strict":false}}]`
	if got := string(jsonv.Array(p.Tools...).Encode()); got != want {
		t.Fatalf("got  %s\nwant %s", got, want)
	}
	e, _ := frozen.ToolDefinitions.Lookup("read")
	if got := string(ProjectEntry(e).Encode()); got != want[1:len(want)-1] {
		t.Fatalf("ProjectEntry %s", got)
	}
}

// FuzzProject: for any lawful set, projection never panics, offers entries in set order
// without facts, routes or defer_loading and always with a strict somewhere, and the skills
// block stays within its bound and lists only offered callables.
func FuzzProject(f *testing.F) {
	seeds, _ := filepath.Glob("../declare/testdata/golden/C*.in.json")
	for _, p := range seeds {
		if raw, err := os.ReadFile(p); err == nil && len(raw) < 64<<10 {
			f.Add(raw, "skill")
		}
	}
	f.Add([]byte(`[{"type":"function","function":{"name":"skill"},"canonical":"nexus.skill.load","defer_loading":true}]`), "skill")
	c := fixture(f)
	f.Fuzz(func(t *testing.T, raw []byte, callable string) {
		set, err := c.Compile(raw)
		if err != nil {
			return
		}
		catalog := declare.SkillCatalog{{Callable: callable, Name: "build", Description: "How\n to build.", Source: declare.SourceWorkspace}}
		before := string(set.Bytes())
		p := Project(set, catalog)
		if string(set.Bytes()) != before {
			t.Fatal("projection changed the set")
		}
		for i, tool := range p.Tools {
			for _, k := range []string{"canonical", "params", "omit", "description", "route", "defer_loading"} {
				if _, nested := tool.Get("function"); nested && tool.Has(k) {
					t.Fatalf("offered %s carries %s", p.Callables[i], k)
				}
			}
			if _, nested := tool.Get("function"); !nested && (tool.Has("route") || tool.Has("defer_loading")) {
				t.Fatalf("offered %s carries a route or defer_loading", p.Callables[i])
			}
			fn, _, hasStrict := functionParts(tool)
			if !hasStrict || !fn.Has("name") {
				t.Fatalf("offered %s has no strict", p.Callables[i])
			}
			if i > 0 && p.Callables[i-1] >= p.Callables[i] {
				t.Fatal("offered tools are out of order")
			}
		}
		if block, ok := SkillsBlock(set, p, catalog); ok {
			if len(block) > MaxSkillsBlockBytes || !strings.Contains(block, "- "+callable+" / build: How to build.") {
				t.Fatalf("block %q", block)
			}
		}
	})
}
