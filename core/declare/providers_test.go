package declare

import (
	"strings"
	"testing"

	"github.com/nexuskernel/nexus/sdk/announce"
)

// TestImportWords is the table of every word an import is refused with, each at acceptance and,
// in a reporting acceptance, reported instead with the same word and path while the rest is
// frozen.
func TestImportWords(t *testing.T) {
	t.Parallel()
	c := fixture(t)
	desc := "Read a text file."
	other := "Read a text file, then mail it elsewhere."
	schema := []byte(`{"type":"object","properties":{"path":{"type":"string"}}}`)
	tool := func(name string, d *string) announce.Tool {
		return announce.Tool{Name: name, Description: d, InputSchema: schema, EffectProfile: announce.Announced(announce.EffectReadOnly)}
	}
	pool := []Provider{
		{PublicID: "01900000-0000-7000-8000-000000000061", Announcement: announce.Announcement{Tools: []announce.Tool{
			tool("fs_read", &desc), tool("fs_list", &desc), tool("memory_read", &desc), {Name: "fs_admin"}}}},
		{PublicID: "01900000-0000-7000-8000-000000000062", Announcement: announce.Announcement{Tools: []announce.Tool{
			tool("fs_read", &desc), tool("fs_stat", &desc)}}},
		{PublicID: "01900000-0000-7000-8000-000000000063", Announcement: announce.Announcement{Tools: []announce.Tool{
			tool("fs_stat", &other)}}},
	}
	for _, tc := range []struct {
		name, word, path string
		selectors        []string
		explicit         string
	}{
		{"an exact name nobody serves", WordToolNotServed, "tool_provider_tools[0]", []string{"fs_delete"}, ""},
		{"an exact name served without a schema", WordToolNotServed, "tool_provider_tools[0]", []string{"fs_admin"}, ""},
		{"a pattern that matches nothing", WordImportPatternUnmatched, "tool_provider_tools[0]", []string{"git_*"}, ""},
		{"a kernel spelling", WordReservedToolName, "tool_provider_tools[0]", []string{"memory_read"}, ""},
		{"two selectors of one name", WordDuplicateToolName, "tool_provider_tools[1]", []string{"fs_read", "fs_r*"}, ""},
		{"a pool that disagrees", WordPoolDefinitionConflict, "", []string{"fs_stat"}, ""},
		{"a bare name served without a schema", WordToolNotServed, "", nil, `[{"type":"function","name":"fs_admin"}]`},
		{"a bare name the pool disagrees on", WordPoolDefinitionConflict, "", nil, `[{"type":"function","name":"fs_stat"}]`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			in := Acceptance{Imports: &Imports{ToolProviderTools: append(tc.selectors, "fs_list")}, Providers: pool}
			if tc.explicit != "" {
				set, err := c.Compile([]byte(tc.explicit))
				if err != nil {
					t.Fatal(err)
				}
				in.Explicit = set
			}
			_, err := c.Accept(in)
			r := refusalOf(t, err)
			if r.Word != tc.word || r.Path != tc.path {
				t.Fatalf("refused %s at %q, want %s at %q", r.Word, r.Path, tc.word, tc.path)
			}
			in.Report = true
			f, err := c.Accept(in)
			if err != nil {
				t.Fatalf("a reporting acceptance refused: %v", err)
			}
			if len(f.Problems) != 1 || f.Problems[0].Code != tc.word || f.Problems[0].Path != tc.path {
				t.Fatalf("reported %+v, want one %s at %q", f.Problems, tc.word, tc.path)
			}
			if _, ok := f.ToolDefinitions.Lookup("fs_list"); !ok {
				t.Error("the lawful import was not frozen beside the reported one")
			}
		})
	}
}

// TestNotServedSaysWhen: a refusal of a tool no provider serves says when a plugin serves a
// workspace created after it loaded.
func TestNotServedSaysWhen(t *testing.T) {
	t.Parallel()
	_, err := fixture(t).Accept(Acceptance{Imports: &Imports{ToolProviderTools: []string{"fs_read"}}})
	r, ok := declaration(err)
	if !ok || r.Code != WordToolNotServed || !strings.Contains(r.Message, "plugin's next start") {
		t.Fatalf("refusal %v", err)
	}
}

// TestImportFactsGrammar: the import key of a frozen entry compiles only in its own shape, and a
// call resolves with its facts.
func TestImportFactsGrammar(t *testing.T) {
	t.Parallel()
	c := fixture(t)
	pin := "sha256:" + strings.Repeat("ab", 32)
	good := `[{"type":"function","function":{"name":"fs_read","description":"d","parameters":{"type":"object"}},"import":{"source":"tool_provider","effect_profile":{"kind":"read_only","destructive":false,"effect_scope":"closed","idempotency":"intrinsic","reconciliation":"none"},"pin":"` + pin + `"}}]`
	set, err := c.Compile([]byte(good))
	if err != nil {
		t.Fatal(err)
	}
	res, err := set.ResolveCall("fs_read", []byte(`{}`))
	if err != nil || res.Import == nil || res.Import.Pin != pin || res.Import.EffectProfile == nil || res.Import.EffectProfile.Kind != announce.KindReadOnly {
		t.Fatalf("resolution %+v, %v", res, err)
	}
	for _, tc := range []struct{ name, entry, path string }{
		{"not an object", `{"type":"function","function":{"name":"x"},"import":1}`, "tool_definitions[0].import"},
		{"an unknown key", `{"type":"function","function":{"name":"x"},"import":{"source":"tool_provider","zz":1}}`, "tool_definitions[0].import.zz"},
		{"another source", `{"type":"function","function":{"name":"x"},"import":{"source":"runner"}}`, "tool_definitions[0].import.source"},
		{"a bad profile", `{"type":"function","function":{"name":"x"},"import":{"source":"tool_provider","effect_profile":{"kind":"x"}}}`, "tool_definitions[0].import.effect_profile"},
		{"a bad pin", `{"type":"function","function":{"name":"x"},"import":{"source":"tool_provider","pin":"md5:1"}}`, "tool_definitions[0].import.pin"},
		{"with a route", `{"type":"function","function":{"name":"x"},"route":{"kind":"runner","runner_executor_public_id":"01900000-0000-7000-8000-000000000051","tool_name":"x"},"import":{"source":"tool_provider"}}`, "tool_definitions[0].import"},
		{"on a flat entry", `{"type":"function","name":"x","import":{"source":"tool_provider"}}`, "tool_definitions[0].import"},
	} {
		_, err := c.Compile([]byte("[" + tc.entry + "]"))
		if r := refusalOf(t, err); r.Word != WordInvalid || r.Path != tc.path {
			t.Errorf("%s: refused %s at %q, want invalid at %q", tc.name, r.Word, r.Path, tc.path)
		}
	}
}

// TestImportSelectorGrammar: tool_provider_tools and runner_tool_names take exact names and one
// trailing "*"; kernel_tools keeps refusing wildcards; eager_tool_names takes exact names.
func TestImportSelectorGrammar(t *testing.T) {
	t.Parallel()
	c := fixture(t)
	for _, tc := range []struct {
		name string
		src  ImportSources
		path string
	}{
		{"a star inside", ImportSources{ToolProviderTools: []byte(`["fs_*_x"]`)}, "tool_provider_tools[0]"},
		{"a question mark", ImportSources{ToolProviderTools: []byte(`["fs_?"]`)}, "tool_provider_tools[0]"},
		{"a repeat", ImportSources{ToolProviderTools: []byte(`["fs_*","fs_*"]`)}, "tool_provider_tools[1]"},
		{"not a list", ImportSources{ToolProviderTools: []byte(`"fs_*"`)}, "tool_provider_tools"},
		{"a runner pattern inside", ImportSources{RunnerToolNames: []byte(`["*x*"]`)}, "runner_tool_names[0]"},
		{"a kernel wildcard", ImportSources{KernelTools: []byte(`["nexus.memory.*"]`)}, "kernel_tools[0]"},
		{"an eager non-string", ImportSources{EagerToolNames: []byte(`[1]`)}, "eager_tool_names[0]"},
	} {
		_, err := c.ParseImports(tc.src)
		if r := refusalOf(t, err); r.Word != WordInvalid || r.Path != tc.path {
			t.Errorf("%s: refused %s at %q, want invalid at %q", tc.name, r.Word, r.Path, tc.path)
		}
	}
	im, err := c.ParseImports(ImportSources{ToolProviderTools: []byte(`["fs_*","search","*"]`), RunnerToolNames: []byte(`["re*"]`),
		EagerToolNames: []byte(`["fs_read"]`)})
	if err != nil || len(im.ToolProviderTools) != 3 || len(im.RunnerToolNames) != 1 || len(im.EagerToolNames) != 1 {
		t.Fatalf("%+v, %v", im, err)
	}
	if !DeclaresTools(nil, Imports{ToolProviderTools: []string{"fs_*"}}) {
		t.Error("a tool-provider import declares tools")
	}
}
