package declare

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/nexuskernel/nexus/core/registry"
)

// realCompiler is the compiler over the kernel's own twenty tools.
func realCompiler(t testing.TB) (*Compiler, *registry.Registry) {
	t.Helper()
	reg := registry.New()
	c, err := New(reg)
	if err != nil {
		t.Fatal(err)
	}
	return c, reg
}

// kernelSetWithAliases is the whole catalog declared plainly plus three aliases.
func kernelSetWithAliases(t testing.TB, reg *registry.Registry) []byte {
	t.Helper()
	var defs []json.RawMessage
	for _, e := range reg.Entries() {
		d, err := registry.Definition(e, registry.PlainSpelling)
		if err != nil {
			t.Fatal(err)
		}
		defs = append(defs, d)
	}
	defs = append(defs,
		json.RawMessage(`{"type":"function","function":{"name":"Agent"},"canonical":"nexus.graph.delegate_task","params":{"run_in_background":{"maps_to":"wait","invert":true,"description":"true (the default): the job runs in the background. false: this turn waits for it."}}}`),
		json.RawMessage(`{"name":"AskUserQuestion","canonical":"nexus.human.ask"}`),
		json.RawMessage(`{"name":"Skill","canonical":"nexus.skill.load","params":{"skill":{"maps_to":"name","description":"The skill name to load."}},"defer_loading":true}`),
	)
	raw, err := json.Marshal(defs)
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

// TestRealCatalogDeclaresAsItself: with no alias, every plain kernel entry is stored as the
// catalog's exact definition bytes (docs/development.md#the-declaration-compiler).
func TestRealCatalogDeclaresAsItself(t *testing.T) {
	t.Parallel()
	c, reg := realCompiler(t)
	var served struct {
		Tools []struct {
			Name       string          `json:"name"`
			Definition json.RawMessage `json:"definition"`
		} `json:"tools"`
	}
	if err := json.Unmarshal(reg.CatalogBody(), &served); err != nil {
		t.Fatal(err)
	}
	var list []json.RawMessage
	for _, tool := range served.Tools {
		list = append(list, tool.Definition)
	}
	raw, _ := json.Marshal(list)
	set, err := c.Compile(raw)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range set.Entries() {
		var want json.RawMessage
		for _, tool := range served.Tools {
			if tool.Name == e.Callable {
				want = tool.Definition
			}
		}
		if got := e.Value.Encode(); !bytes.Equal(got, want) {
			t.Errorf("%s stored as\n%s\nwant the catalog's\n%s", e.Callable, got, want)
		}
	}
}

// TestIdempotence: a stored declaration (the full kernel set plus aliases, the real catalog)
// re-declares to the same bytes, validates, and renders to itself
// (docs/development.md#the-declaration-compiler).
func TestIdempotence(t *testing.T) {
	t.Parallel()
	c, reg := realCompiler(t)
	set, err := c.Compile(kernelSetWithAliases(t, reg))
	if err != nil {
		t.Fatal(err)
	}
	stored := set.Bytes()
	if !strings.Contains(string(stored), "several Agent calls") {
		t.Fatalf("the Agent alias was not rendered with its own name:\n%s", clip(string(stored)))
	}
	for i := 0; i < 3; i++ {
		again, err := c.Compile(stored)
		if err != nil {
			t.Fatalf("round %d: the stored set is refused: %v", i, err)
		}
		if !bytes.Equal(again.Bytes(), stored) {
			t.Fatalf("round %d: re-declaring changed the bytes:\n%s", i, cmp.Diff(pretty(stored), pretty(again.Bytes())))
		}
		if err := c.Validate(stored); err != nil {
			t.Fatalf("round %d: the stored set does not validate: %v", i, err)
		}
		stored = again.Bytes()
	}
	// Authored order does not matter: the spellings depend on the set, not its order.
	var entries []json.RawMessage
	if err := json.Unmarshal(kernelSetWithAliases(t, reg), &entries); err != nil {
		t.Fatal(err)
	}
	for i, j := 0, len(entries)-1; i < j; i, j = i+1, j-1 {
		entries[i], entries[j] = entries[j], entries[i]
	}
	reversed, _ := json.Marshal(entries)
	set2, err := c.Compile(reversed)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(set2.Bytes(), set.Bytes()) {
		t.Fatal("compiling the same entries in another order stored other bytes")
	}
}

// TestEmptyDeclarations: absent, null and [] all compile to the empty set, stored as [].
func TestEmptyDeclarations(t *testing.T) {
	t.Parallel()
	c := fixture(t)
	for _, raw := range []string{"", "  ", "null", "[]", " [ ] "} {
		set, err := c.Compile([]byte(raw))
		if err != nil {
			t.Fatalf("%q: %v", raw, err)
		}
		if string(set.Bytes()) != "[]" || set.Len() != 0 {
			t.Fatalf("%q stored as %s", raw, set.Bytes())
		}
	}
	var nilSet *Set
	if string(nilSet.Bytes()) != "[]" || nilSet.Len() != 0 || len(nilSet.Callables()) != 0 {
		t.Fatal("a nil set is not the empty set")
	}
	if _, err := c.Compile([]byte("{not json")); refusalOf(t, err).Path != "tool_definitions" {
		t.Fatal("malformed JSON is not refused at tool_definitions")
	}
}

// TestStoredFormKeepsAuthoredFunctionTools: function tools keep the author's key order and
// bytes (compacted), and text other than kernel texts is never rendered.
func TestStoredFormKeepsAuthoredFunctionTools(t *testing.T) {
	t.Parallel()
	c := fixture(t)
	in := `[ {"parameters": {"type":"object"}, "name":"z", "type":"function", "description":"Use {{wait}} & <b>\u2028 é"} ]`
	set, err := c.Compile([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	want := "[{\"parameters\":{\"type\":\"object\"},\"name\":\"z\",\"type\":\"function\",\"description\":\"Use {{wait}} & <b>\u2028 é\"}]"
	if got := string(set.Bytes()); got != want {
		t.Fatalf("stored %s\nwant   %s", got, want)
	}
}

// TestAliasDescriptionMacros: an alias's own description renders macros of live tools and
// leaves other {{…}} text as written.
func TestAliasDescriptionMacros(t *testing.T) {
	t.Parallel()
	c := fixture(t)
	set, err := c.Compile([]byte(`[{"name":"W","canonical":"wait","description":"Use {{W}} or {{wait}} after {{delegate_task}}; {{send}} and {{ nope }} stay."}]`))
	if err != nil {
		t.Fatal(err)
	}
	e, _ := set.Lookup("W")
	fn, _ := e.Value.Get("function")
	got, _ := fn.GetString("description")
	// send is a kernel tool of the real catalog but not of this registry: not a macro here.
	want := "Use {{W}} or W after delegate_task; {{send}} and {{ nope }} stay."
	if got != want {
		t.Fatalf("description %q, want %q", got, want)
	}
	fact, _ := e.Value.GetString("description")
	if !strings.HasPrefix(fact, "Use {{W}} or {{wait}}") {
		t.Fatalf("the description fact lost its macros: %q", fact)
	}
}

// TestCompileNumbersKeepTheirText: numbers are stored as written, and compared by value where
// the rules compare (a kernel entry with 1.0 for 1 is still the catalog's).
func TestCompileNumbersKeepTheirText(t *testing.T) {
	t.Parallel()
	c := fixture(t)
	set, err := c.Compile([]byte(`[{"type":"function","name":"n","parameters":{"maximum":1.50e2,"minimum":-0}}]`))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(set.Bytes()), `"maximum":1.50e2,"minimum":-0`) {
		t.Fatalf("number text changed: %s", set.Bytes())
	}
	wait := strings.Replace(string(declareD(t, "wait")), `"minimum":1`, `"minimum":1.0e0`, 1)
	set, err = c.Compile([]byte("[" + wait + "]"))
	if err != nil {
		t.Fatalf("1.0e0 for 1 is refused: %v", err)
	}
	if !bytes.Equal(set.Bytes(), []byte("["+string(declareD(t, "wait"))+"]")) {
		t.Fatalf("the plain entry is not stored as the catalog's bytes: %s", set.Bytes())
	}
}

func declareD(t testing.TB, x string) []byte {
	t.Helper()
	c := fixture(t)
	return c.resolve(x).catalog.Encode()
}

// TestKernelKeyOrderNormalised: a plain kernel entry written in another key order is stored
// in the catalog's key order (docs/development.md#the-declaration-compiler).
func TestKernelKeyOrderNormalised(t *testing.T) {
	t.Parallel()
	c := fixture(t)
	d := declareD(t, "ask")
	var v map[string]any
	if err := json.Unmarshal(d, &v); err != nil {
		t.Fatal(err)
	}
	sorted, _ := json.Marshal(v) // map keys sorted: another order than the catalog's
	set, err := c.Compile([]byte("[" + string(sorted) + "]"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(set.Bytes(), []byte("["+string(d)+"]")) {
		t.Fatalf("stored %s, want %s", set.Bytes(), d)
	}
}

// TestCompileValue is Compile over a decoded value.
func TestCompileValue(t *testing.T) {
	t.Parallel()
	c := fixture(t)
	set, err := c.CompileValue(mustDecode(t, `[{"type":"function","name":"a"}]`))
	if err != nil || set.Len() != 1 {
		t.Fatalf("CompileValue: %v, %d entries", err, set.Len())
	}
	if set, err := c.CompileValue(mustDecode(t, "null")); err != nil || set.Len() != 0 {
		t.Fatalf("CompileValue(null): %v", err)
	}
	if _, err := c.CompileValue(mustDecode(t, `{}`)); refusalOf(t, err).Word != WordInvalid {
		t.Fatal("an object is not refused")
	}
}

// TestNewRefusesInconsistentRegistry: a registry whose entries do not resolve to themselves.
func TestNewRefusesInconsistentRegistry(t *testing.T) {
	t.Parallel()
	if _, err := New(brokenRegistry{}); err == nil {
		t.Fatal("New accepted a registry that does not resolve its own entries")
	}
}

type brokenRegistry struct{}

func (brokenRegistry) Entries() []registry.Entry {
	return []registry.Entry{{Canonical: "nexus.graph.wait", Wire: "wait", Schema: json.RawMessage(`{}`)}}
}
func (brokenRegistry) Resolve(string) (registry.Entry, bool) { return registry.Entry{}, false }
