package projection

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nexuskernel/nexus/core/declare"
	"github.com/nexuskernel/nexus/sdk/announce"
	"github.com/nexuskernel/nexus/sdk/jsonwire"
)

// TestProjectProviderImport: a tool-provider import reaches the provider without its import
// facts (effect profile, pin) or defer_loading: the model reads name, description and parameters.
func TestProjectProviderImport(t *testing.T) {
	t.Parallel()
	c := fixture(t)
	d := "Read a text file."
	frozen, err := c.Accept(declare.Acceptance{
		Imports: &declare.Imports{ToolProviderTools: []string{"fs_*"}},
		Providers: []declare.Provider{{PublicID: "01900000-0000-7000-8000-000000000061", Announcement: announce.Announcement{Tools: []announce.Tool{
			{Name: "fs_read", Description: &d, InputSchema: json.RawMessage(`{"type":"object"}`), EffectProfile: announce.Announced(announce.EffectReadOnly)}}}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(frozen.ToolDefinitions.Bytes()), `"import":{"source":"tool_provider","effect_profile":{"kind":"read_only"`) {
		t.Fatalf("frozen %s", frozen.ToolDefinitions.Bytes())
	}
	p := Project(frozen.ToolDefinitions, nil)
	want := `[{"type":"function","function":{"name":"fs_read","description":"Read a text file.","parameters":{"type":"object"},"strict":false}}]`
	if got := string(jsonwire.Array(p.Tools...).Encode()); got != want {
		t.Fatalf("got  %s\nwant %s", got, want)
	}
}

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
	if got := string(jsonwire.Array(p.Tools...).Encode()); got != want {
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
			fn := tool
			if nested, ok := tool.Get("function"); ok {
				fn = nested
			}
			if !fn.Has("strict") || !fn.Has("name") {
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

func TestProjectForNativeDeferral(t *testing.T) {
	t.Parallel()
	c := fixture(t)
	compile := func(src string) *declare.Set {
		s, err := c.Compile([]byte(src))
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	deferred := `[{"type":"function","function":{"name":"build_logs","parameters":{"type":"object"}},"defer_loading":true},
{"type":"function","function":{"name":"read_file"}}]`
	native := Target{NativeSearch: "bm25"}
	p := ProjectFor(compile(deferred), nil, native)
	if p.ToolSearch != "bm25" || len(p.Tools) != 2 {
		t.Fatalf("native, no pair: %+v", p)
	}
	if got := string(p.Tools[0].Encode()); got != `{"type":"function","function":{"name":"build_logs","parameters":{"type":"object"},"strict":false},"defer_loading":true}` {
		t.Errorf("deferred entry %s", got)
	}
	if got := string(p.Tools[1].Encode()); strings.Contains(got, "defer_loading") {
		t.Errorf("eager entry flagged: %s", got)
	}
	if k := ProjectFor(compile(deferred), nil, Target{}); k.ToolSearch != "" || strings.Contains(string(k.Tools[0].Encode()), "defer_loading") {
		t.Errorf("kernel mode: %+v", k)
	}
	pair := `[{"type":"function","function":{"name":"tool_search","description":"Search this turn's deferred tools and skills; run a match with tool_call.","parameters":{"type":"object","properties":{"query":{"type":"string"},"limit":{"type":"integer","minimum":1,"maximum":20}},"required":["query"]}}},{"type":"function","function":{"name":"tool_call","description":"Run one tool found with tool_search, by its exact name.","parameters":{"type":"object","properties":{"name":{"type":"string"},"input":{"type":"object"}},"required":["name","input"]}}},{"type":"function","function":{"name":"build_logs"},"defer_loading":true}]`
	if p := ProjectFor(compile(pair), nil, native); p.ToolSearch != "" || len(p.Tools) != 2 {
		t.Errorf("the declared pair wins: %+v", p)
	}
	if p := ProjectFor(compile(`[{"type":"function","function":{"name":"read_file"}}]`), nil, native); p.ToolSearch != "" {
		t.Errorf("nothing deferred: %+v", p)
	}
}
