package declare

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nexuskernel/nexus/sdk/jsonwire"
)

// knownWords are the words Compile may answer with.
var knownWords = map[string]bool{
	WordInvalid: true, WordContentTooLarge: true, WordDuplicateToolName: true, WordKernelToolRedefined: true,
	WordAliasCanonicalUnknown: true, WordAliasNameReserved: true, WordAliasParamUnknown: true,
	WordAliasInvertNeedsBoolean: true, WordAliasParamDescriptionRequired: true, WordInvalidToolRoute: true,
	WordRunnerTargetRequired: true,
}

// FuzzCompile: Compile never panics; a refusal carries a known word and a tool_definitions
// path and leaves the input as it was; a lawful set is sorted with unique callables,
// re-compiles to the same bytes, validates, and measures what it encodes to.
func FuzzCompile(f *testing.F) {
	seeds, _ := filepath.Glob("testdata/golden/C*.in.json")
	for _, p := range seeds {
		if raw := readFile(f, p); len(raw) < 64<<10 {
			f.Add(raw)
		}
	}
	f.Add([]byte(`[{"name":"W","canonical":"wait","description":"{{W}} {{wait}} {{delegate_task}}","defer_loading":false}]`))
	c := fixture(f)
	f.Fuzz(func(t *testing.T, raw []byte) {
		before := bytes.Clone(raw)
		set, err := c.Compile(raw)
		if !bytes.Equal(raw, before) {
			t.Fatal("Compile modified its input")
		}
		if err != nil {
			r := refusalOf(t, err)
			if !knownWords[r.Word] || !strings.HasPrefix(r.Path, FieldToolDefinitions) {
				t.Fatalf("refusal %s at %q", r.Word, r.Path)
			}
			return
		}
		stored := set.Bytes()
		if set.EncodedSize() != len(stored) {
			t.Fatalf("EncodedSize %d, len %d", set.EncodedSize(), len(stored))
		}
		names := set.Callables()
		for i := 1; i < len(names); i++ {
			if names[i-1] >= names[i] {
				t.Fatalf("callables not sorted and unique: %q", names)
			}
		}
		again, err := c.Compile(stored)
		if err != nil {
			t.Fatalf("stored set refused: %v\n%s", err, stored)
		}
		if !bytes.Equal(again.Bytes(), stored) {
			t.Fatalf("re-compiling changed the set:\n%s\n%s", stored, again.Bytes())
		}
		if err := c.Validate(stored); err != nil {
			t.Fatalf("stored set does not validate: %v", err)
		}
	})
}

// FuzzResolveCall: resolving never panics and never modifies the input; a call not made
// under an alias keeps its bytes; under an alias the result is an object whose keys are the
// passed-through keys and the mapped targets, with an inverted boolean negated.
func FuzzResolveCall(f *testing.F) {
	c := fixture(f)
	set, err := c.Compile(readFile(f, "testdata/resolve/set.json"))
	if err != nil {
		f.Fatal(err)
	}
	for _, name := range append(set.Callables(), "nope") {
		f.Add(name, []byte(`{"prompt":"p","wait":true,"run_in_background":false,"skill":"s","name":"n","lifetime":"turn"}`))
	}
	f.Add("Agent", []byte(`{"run_in_background":true,"run_in_background":"x"}`))
	f.Fuzz(func(t *testing.T, name string, input []byte) {
		before := bytes.Clone(input)
		res, err := set.ResolveCall(name, input)
		if !bytes.Equal(input, before) {
			t.Fatal("ResolveCall modified its input")
		}
		e, declared := set.Lookup(name)
		in, derr := jsonwire.Decode(input)
		if declared && e.Alias && (derr != nil || !in.IsObject()) {
			if err == nil {
				t.Fatal("a non-object input resolved under an alias")
			}
			return
		}
		if err != nil {
			t.Fatalf("resolve %q: %v", name, err)
		}
		if declared != res.Declared {
			t.Fatalf("Declared %v for %q", res.Declared, name)
		}
		if !declared || !e.Alias {
			if !bytes.Equal(res.Input, input) || res.Alias != "" && e.Route == nil {
				t.Fatalf("non-alias call changed: %+v", res)
			}
			return
		}
		out, derr := jsonwire.Decode(res.Input)
		if derr != nil || !out.IsObject() || out.HasDuplicateKeys() {
			t.Fatalf("mapped input %s", res.Input)
		}
		if res.Alias != name || res.Canonical != e.Canonical {
			t.Fatalf("alias %q canonical %q", res.Alias, res.Canonical)
		}
		var facts struct {
			Params map[string]struct {
				MapsTo string `json:"maps_to"`
				Invert *bool  `json:"invert"`
			} `json:"params"`
			Omit []string `json:"omit"`
		}
		if err := json.Unmarshal(e.Value.Encode(), &facts); err != nil {
			t.Fatal(err)
		}
		last := map[string]jsonwire.Value{}
		for _, m := range in.Members() {
			last[m.Key] = m.Value
		}
		allowed := map[string]bool{}
		for k := range last {
			allowed[k] = true
		}
		for _, o := range facts.Omit {
			delete(allowed, o)
		}
		for k, p := range facts.Params {
			delete(allowed, k)
			if v, ok := last[k]; ok {
				allowed[p.MapsTo] = true
				got, _ := out.Get(p.MapsTo)
				want := v
				if b, isBool := v.AsBool(); isBool && p.Invert != nil && *p.Invert {
					want = jsonwire.Bool(!b)
				}
				if !jsonwire.EqualValues(got, want) {
					t.Fatalf("%s -> %s: got %s want %s", k, p.MapsTo, got.Encode(), want.Encode())
				}
			}
		}
		for _, m := range out.Members() {
			if !allowed[m.Key] {
				t.Fatalf("mapped input holds %q", m.Key)
			}
		}
	})
}

// FuzzCompileAlias builds an alias from fuzzed parts beside a plain kernel entry and a routed
// tool, so that the fuzzer explores the alias checks and rendering rather than JSON syntax.
// Invariants are FuzzCompile's: a refusal has a known word; a lawful set re-compiles to itself.
func FuzzCompileAlias(f *testing.F) {
	f.Add("Agent", "nexus.graph.delegate_task", "run_in_background", "wait", uint8(1), "lifetime", "Use {{Agent}} or {{wait}}.", "d", "wait")
	f.Add("skill", "skill", "skill", "name", uint8(0), "", "", "", "skill")
	f.Add("W", "wait", "t", "task", uint8(2), "timeout_ms", "", "", "ask")
	c := fixture(f)
	f.Fuzz(func(t *testing.T, name, canonical, key, mapsTo string, invert uint8, omit, description, paramDescription, plain string) {
		spec := map[string]any{"maps_to": mapsTo}
		switch invert % 3 {
		case 1:
			spec["invert"] = true
		case 2:
			spec["invert"] = false
		}
		if paramDescription != "" {
			spec["description"] = paramDescription
		}
		alias := map[string]any{"name": name, "canonical": canonical, "params": map[string]any{key: spec}}
		if omit != "" {
			alias["omit"] = []string{omit}
		}
		if description != "" {
			alias["description"] = description
		}
		list := []any{alias, map[string]any{"type": "function", "name": "remote", "description": "{{" + plain + "}}",
			"route": map[string]any{"kind": "runner", "runner_executor_public_id": runner51, "tool_name": "read"}}}
		if e := c.resolve(plain); e != nil {
			list = append(list, json.RawMessage(e.catalog.Encode()))
		}
		raw, err := json.Marshal(list)
		if err != nil {
			return
		}
		set, err := c.Compile(raw)
		if err != nil {
			if r := refusalOf(t, err); !knownWords[r.Word] {
				t.Fatalf("%v", err)
			}
			return
		}
		stored := set.Bytes()
		again, err := c.Compile(stored)
		if err != nil || !bytes.Equal(again.Bytes(), stored) {
			t.Fatalf("stored set does not re-compile to itself: %v\n%s", err, stored)
		}
	})
}
