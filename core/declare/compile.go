package declare

import (
	"bytes"
	"fmt"
	"sort"

	"github.com/nexuskernel/nexus/core/refusal"
	"github.com/nexuskernel/nexus/sdk/jsonwire"
)

// Compile checks an authored tool list (the raw JSON of tool_definitions or a model step's tools)
// and returns its stored form: rendered with the set's spellings and sorted by callable
// (docs/development.md#the-declaration-compiler). Absent, empty and null raw JSON compile to the
// empty set. A refused list returns the refusal rooted at the declaration (see the package
// documentation) of the first failing check in the order of
// docs/agent-tools.md#declaration-refusals; anything else is an internal fault.
func (c *Compiler) Compile(raw []byte) (*Set, error) {
	values, r := decodeList(raw)
	if r != nil {
		return nil, r
	}
	return c.compileValues(values)
}

// CompileValue is Compile over a decoded value; null is the empty set.
func (c *Compiler) CompileValue(v jsonwire.Value) (*Set, error) {
	if v.IsNull() {
		return &Set{}, nil
	}
	if !v.IsArray() {
		return nil, listNotArray()
	}
	return c.compileValues(v.Items())
}

// Validate runs the checks of docs/agent-tools.md#declaration-refusals without rendering: nil when
// the list is lawful.
func (c *Compiler) Validate(raw []byte) error {
	values, r := decodeList(raw)
	if r != nil {
		return r
	}
	if _, r := c.validate(values); r != nil {
		return r
	}
	return nil
}

func (c *Compiler) compileValues(values []jsonwire.Value) (*Set, error) {
	entries, r := c.validate(values)
	if r != nil {
		return nil, r
	}
	set, err := c.finish(entries)
	if err != nil {
		return nil, err
	}
	// Stage B: rendering expands compact aliases, so the stored form is bounded again.
	if n := set.EncodedSize(); n > MaxDeclarationBytes {
		return nil, refuse(WordContentTooLarge, FieldToolDefinitions, "",
			"the stored declaration is %d bytes; the bound is %d", n, MaxDeclarationBytes)
	}
	return set, nil
}

// finish renders a lawful set over its own spellings and sorts it by callable.
func (c *Compiler) finish(entries []entry) (*Set, error) {
	sp := c.entrySpellings(entries)
	out := make([]entry, len(entries))
	for i := range entries {
		e := entries[i]
		var err error
		switch {
		case e.alias != nil:
			e.value, err = sp.renderAlias(&e)
		case e.tool != nil:
			e.value, err = sp.plainRender(e.tool)
			if err == nil && e.deferLoading != nil {
				e.value = e.value.Set("defer_loading", jsonwire.Bool(*e.deferLoading))
			}
		}
		if err != nil {
			return nil, fmt.Errorf("declare: render %s: %w", e.name, err)
		}
		out[i] = e
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].name < out[j].name })
	return &Set{entries: out}, nil
}

func listNotArray() *refusal.Error {
	return refuse(WordInvalid, FieldToolDefinitions, "", "the declaration must be an array of tool entries or null")
}

// decodeList is check L1: absent, null or an array.
func decodeList(raw []byte) ([]jsonwire.Value, *refusal.Error) {
	trimmed := bytes.TrimSpace(raw)
	if len(trimmed) == 0 || string(trimmed) == "null" {
		return nil, nil
	}
	v, err := jsonwire.Decode(trimmed)
	if err != nil || !v.IsArray() {
		return nil, listNotArray()
	}
	return v.Items(), nil
}

// validate runs stages L2, L3, D and E over an authored list and returns its entries parsed.
func (c *Compiler) validate(values []jsonwire.Value) ([]entry, *refusal.Error) {
	// L2: objects only, and no object anywhere inside one repeats a key.
	for i, v := range values {
		if !v.IsObject() {
			return nil, entryRefusal(WordInvalid, i, "", "each entry must be an object, not a %s", v.Kind())
		}
		if v.HasDuplicateKeys() {
			return nil, entryRefusal(WordInvalid, i, "", "an object inside the entry repeats a key")
		}
	}
	// L3: the authored list's bound.
	if n := jsonwire.Array(values...).EncodedSize(); n > MaxDeclarationBytes {
		return nil, refuse(WordContentTooLarge, FieldToolDefinitions, "",
			"the declaration is %d bytes; the bound is %d", n, MaxDeclarationBytes)
	}
	// D: callable names are unique across every kind of entry.
	seen := make(map[string]int, len(values))
	for i, v := range values {
		name, ok := callableName(v)
		if !ok {
			continue
		}
		if first, dup := seen[name]; dup {
			return nil, entryRefusal(WordDuplicateToolName, i, "", "%s is already the name of entry %d", quote(name), first)
		}
		seen[name] = i
	}
	// E: each entry in authored order, against the spellings of the whole list.
	sp := c.authoredSpellings(values)
	entries := make([]entry, len(values))
	for i, v := range values {
		e, r := c.checkEntry(i, v, sp)
		if r != nil {
			return nil, r
		}
		entries[i] = e
	}
	return entries, nil
}

func (c *Compiler) checkEntry(i int, v jsonwire.Value, sp *spellings) (entry, *refusal.Error) {
	// E1: defer_loading is a boolean when present.
	var deferLoading *bool
	if d, ok := v.Get("defer_loading"); ok {
		b, isBool := d.AsBool()
		if !isBool {
			return entry{}, entryRefusal(WordInvalid, i, ".defer_loading", "defer_loading must be true or false")
		}
		deferLoading = &b
	}
	// E2: aliases by their key, everything else as a plain kernel entry or a function tool.
	var e entry
	var r *refusal.Error
	if v.Has("canonical") {
		e, r = c.checkAlias(i, v, sp)
	} else {
		e, r = c.checkNonAlias(i, v, sp)
	}
	if r != nil {
		return entry{}, r
	}
	e.deferLoading = deferLoading
	return e, nil
}
