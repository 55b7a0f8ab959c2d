package declare

import (
	"sort"

	"github.com/nexuskernel/nexus/core/refusal"
	"github.com/nexuskernel/nexus/sdk/jsonwire"
)

var (
	aliasKeys     = []string{"type", "name", "function", "canonical", "params", "omit", "description", "defer_loading"}
	paramSpecKeys = []string{"maps_to", "invert", "description"}
)

// checkAlias is stage A (docs/agent-tools.md#declaration-refusals), rows A1 to A14 in order. Within
// A8 to A13 the params keys are examined in bytewise order, one row at a time across all keys.
func (c *Compiler) checkAlias(i int, v jsonwire.Value, sp *spellings) (entry, *refusal.Error) {
	// A1: the closed key set and the shapes of type and function.
	if k, bad := smallestKey(v, aliasKeys...); bad {
		return entry{}, entryRefusal(WordInvalid, i, pathKey(k), "%s is not a key of an alias", quote(k))
	}
	if t, ok := v.Get("type"); ok {
		if s, _ := t.AsString(); s != "function" {
			return entry{}, entryRefusal(WordInvalid, i, ".type", `type must be "function"`)
		}
	}
	fn, hasFunction := v.Get("function")
	if hasFunction && !fn.IsObject() {
		return entry{}, entryRefusal(WordInvalid, i, ".function", "function must be an object")
	}
	if hasFunction && v.Has("name") {
		return entry{}, entryRefusal(WordInvalid, i, ".name", "an alias names itself in function.name or in name, not both")
	}
	// A2: the alias name.
	namePath, nameValue := ".name", jsonwire.Value{}
	if hasFunction {
		namePath = ".function.name"
		nameValue, _ = fn.Get("name")
	} else {
		nameValue, _ = v.Get("name")
	}
	name, ok := nameValue.AsString()
	if !ok || !validName(name) {
		return entry{}, entryRefusal(WordInvalid, i, namePath, "an alias needs a name of 1 to %d characters without NUL", MaxNameLength)
	}
	// A3: the tool it spells.
	canonical, _ := v.GetString("canonical")
	t := c.resolve(canonical)
	if t == nil {
		return entry{}, entryRefusal(WordAliasCanonicalUnknown, i, ".canonical", "canonical names no kernel tool")
	}
	// A4: a kernel spelling as the alias name only as the tool's own wire name.
	if c.resolve(name) != nil && name != t.entry.Wire {
		return entry{}, entryRefusal(WordAliasNameReserved, i, namePath,
			"%s is a kernel name; an alias of %s may use only the name %s", quote(name), t.entry.Canonical, t.entry.Wire)
	}
	a := &aliasSpec{}
	// A5
	if d, ok := v.Get("description"); ok && !d.IsNull() {
		s, isString := d.AsString()
		if !isString || s == "" {
			return entry{}, entryRefusal(WordInvalid, i, ".description", "description must be a non-empty string")
		}
		a.description = &s
	}
	// A6 and A7
	if r := checkOmit(i, v, t, a); r != nil {
		return entry{}, r
	}
	// A8 to A13
	if r := checkParams(i, v, t, a); r != nil {
		return entry{}, r
	}
	a.sortByKernel(t)
	e := entry{value: v, name: name, tool: t, alias: a}
	// A14: a function block beyond the compact {"name"} must be exactly the render.
	if hasFunction && fn.Len() > 1 { // A2 put the name there; anything more is a render
		want, err := sp.aliasFunction(&e)
		if err != nil || !jsonwire.EqualValues(fn, want) {
			return entry{}, entryRefusal(WordKernelToolRedefined, i, ".function",
				"an alias's function block is either {\"name\"} or exactly its render")
		}
	}
	return e, nil
}

// checkOmit is A6 (the shape) and A7 (every name a parameter of the tool).
func checkOmit(i int, v jsonwire.Value, t *kernelTool, a *aliasSpec) *refusal.Error {
	ov, ok := v.Get("omit")
	if !ok || ov.IsNull() {
		return nil
	}
	if !ov.IsArray() {
		return entryRefusal(WordInvalid, i, ".omit", "omit must be an array of parameter names")
	}
	seen := map[string]bool{}
	for _, it := range ov.Items() {
		s, isString := it.AsString()
		if !isString || seen[s] {
			return entryRefusal(WordInvalid, i, ".omit", "omit must be an array of distinct parameter names")
		}
		seen[s] = true
		a.omit = append(a.omit, s)
	}
	for j, s := range a.omit {
		if !t.hasParam(s) {
			return entryRefusal(WordAliasParamUnknown, i, indexPath(".omit", j), "%s has no parameter %s", t.entry.Wire, quote(s))
		}
	}
	return nil
}

// checkParams is A8 to A13, each row across all keys in bytewise order before the next row.
func checkParams(i int, v jsonwire.Value, t *kernelTool, a *aliasSpec) *refusal.Error {
	pv, ok := v.Get("params")
	if !ok || pv.IsNull() {
		return nil
	}
	if !pv.IsObject() {
		return entryRefusal(WordInvalid, i, ".params", "params must be an object")
	}
	members := append([]jsonwire.Field(nil), pv.Members()...)
	sort.SliceStable(members, func(x, y int) bool { return members[x].Key < members[y].Key })
	at := func(key, rest string) string { return ".params" + pathKey(key) + rest }

	// A8: shapes.
	specs := make([]paramSpec, len(members))
	for n, m := range members {
		if !validName(m.Key) {
			return entryRefusal(WordInvalid, i, at(m.Key, ""), "an alias parameter needs a name of 1 to %d characters without NUL", MaxNameLength)
		}
		if !m.Value.IsObject() {
			return entryRefusal(WordInvalid, i, at(m.Key, ""), "an alias parameter spec must be an object")
		}
		if k, bad := smallestKey(m.Value, paramSpecKeys...); bad {
			return entryRefusal(WordInvalid, i, at(m.Key, pathKey(k)), "%s is not a key of an alias parameter", quote(k))
		}
		spec := paramSpec{key: m.Key}
		if iv, ok := m.Value.Get("invert"); ok && !iv.IsNull() {
			b, isBool := iv.AsBool()
			if !isBool {
				return entryRefusal(WordInvalid, i, at(m.Key, ".invert"), "invert must be true or false")
			}
			spec.invert = &b
		}
		if dv, ok := m.Value.Get("description"); ok && !dv.IsNull() {
			s, isString := dv.AsString()
			if !isString || s == "" {
				return entryRefusal(WordInvalid, i, at(m.Key, ".description"), "description must be a non-empty string")
			}
			spec.description = &s
		}
		spec.mapsTo, _ = m.Value.GetString("maps_to")
		specs[n] = spec
	}
	// A9: every target is a parameter of the tool.
	for n, m := range members {
		target, isString := m.Value.GetString("maps_to")
		if !isString || !t.hasParam(target) {
			return entryRefusal(WordAliasParamUnknown, i, at(m.Key, ".maps_to"), "maps_to must name a parameter of %s", t.entry.Wire)
		}
		specs[n].mapsTo = target
	}
	// A10: one spec per target, and no target also omitted.
	omitted := map[string]bool{}
	for _, o := range a.omit {
		omitted[o] = true
	}
	targets := map[string]bool{}
	for _, s := range specs {
		if omitted[s.mapsTo] {
			return entryRefusal(WordAliasParamUnknown, i, at(s.key, ".maps_to"), "%s is both mapped and omitted", s.mapsTo)
		}
		if targets[s.mapsTo] {
			return entryRefusal(WordAliasParamUnknown, i, at(s.key, ".maps_to"), "another alias parameter already maps to %s", s.mapsTo)
		}
		targets[s.mapsTo] = true
	}
	// A11: no alias parameter shadows a parameter the alias still exposes.
	for _, s := range specs {
		if t.hasParam(s.key) && !targets[s.key] && !omitted[s.key] {
			return entryRefusal(WordAliasParamUnknown, i, at(s.key, ""), "%s is a parameter %s still exposes", s.key, t.entry.Wire)
		}
	}
	// A12: only a boolean can be inverted.
	for _, s := range specs {
		if !s.inverted() {
			continue
		}
		if typ, _ := t.props[s.mapsTo].GetString("type"); typ != "boolean" {
			return entryRefusal(WordAliasInvertNeedsBoolean, i, at(s.key, ".invert"), "%s is not a boolean parameter", s.mapsTo)
		}
	}
	// A13: an inverted parameter says what it means in its own words.
	for _, s := range specs {
		if s.inverted() && s.description == nil {
			return entryRefusal(WordAliasParamDescriptionRequired, i, at(s.key, ""), "an inverted parameter needs its own description")
		}
	}
	a.params = specs
	return nil
}

func indexPath(prefix string, j int) string { return prefix + "[" + itoa(j) + "]" }
