package declare

import (
	"github.com/nexuskernel/nexus/core/refusal"
	"github.com/nexuskernel/nexus/sdk/announce"
	"github.com/nexuskernel/nexus/sdk/jsonwire"
)

// The closed key sets of a function tool (docs/agent-tools.md#declaring-tools).
var (
	nestedKeys   = []string{"type", "function", "route", "defer_loading", "strict", "import"}
	functionKeys = []string{"name", "description", "parameters", "strict"}
	flatKeys     = []string{"type", "name", "description", "parameters", "strict", "route", "defer_loading"}
	routeKeys    = []string{"kind", "runner_executor_public_id", "tool_name"}
	importKeys   = []string{"source", "effect_profile", "pin"}
)

// importSourceToolProvider is the one source an entry's "import" key names: the tool providers
// of the workspace (Runner imports carry a route instead).
const importSourceToolProvider = SourceToolProvider

// checkNonAlias is stage P: a plain kernel entry (P1) or a function tool (P2–P4).
func (c *Compiler) checkNonAlias(i int, v jsonwire.Value, sp *spellings) (entry, *refusal.Error) {
	name, isString := callableName(v)
	// P1: a kernel name must carry the catalog's bytes or the set's render, nothing else.
	if isString {
		if t := c.resolve(name); t != nil {
			bare := v.Without("defer_loading")
			if name == t.entry.Wire {
				if jsonwire.EqualValues(bare, t.catalog) {
					return entry{value: v, name: name, tool: t}, nil
				}
				if render, err := sp.plainRender(t); err == nil && jsonwire.EqualValues(bare, render) {
					return entry{value: v, name: name, tool: t}, nil
				}
			}
			return entry{}, entryRefusal(WordKernelToolRedefined, i, "",
				"%s is a kernel tool; declare it with the catalog's definition or through an alias", quote(name))
		}
	}
	// P2
	if t, ok := v.GetString("type"); !ok || t != "function" {
		return entry{}, entryRefusal(WordInvalid, i, ".type", `type must be "function"`)
	}
	// P3
	if r := checkFunctionShape(i, v); r != nil {
		return entry{}, r
	}
	e := entry{value: v, name: name}
	// P4
	if rv, ok := v.Get("route"); ok {
		route, r := c.checkRoute(i, rv)
		if r != nil {
			return entry{}, r
		}
		e.route = route
	}
	// P5
	if iv, ok := v.Get("import"); ok {
		if e.route != nil {
			return entry{}, entryRefusal(WordInvalid, i, ".import", "a routed tool carries no import facts")
		}
		facts, r := checkImportFacts(i, iv)
		if r != nil {
			return entry{}, r
		}
		e.imp = facts
	}
	return e, nil
}

// checkImportFacts is P5: the import facts of an entry frozen from the tool providers.
func checkImportFacts(i int, iv jsonwire.Value) (*ImportFacts, *refusal.Error) {
	if !iv.IsObject() {
		return nil, entryRefusal(WordInvalid, i, ".import", "import must be an object")
	}
	if k, bad := smallestKey(iv, importKeys...); bad {
		return nil, entryRefusal(WordInvalid, i, ".import"+pathKey(k), "%s is not a key of import", quote(k))
	}
	if src, _ := iv.GetString("source"); src != importSourceToolProvider {
		return nil, entryRefusal(WordInvalid, i, ".import.source", `source must be "tool_provider"`)
	}
	facts := &ImportFacts{}
	if pv, ok := iv.Get("effect_profile"); ok {
		p, err := announce.ParseEffectProfile(pv.Encode())
		if err != nil {
			return nil, entryRefusal(WordInvalid, i, ".import.effect_profile", "effect_profile: %v", err)
		}
		facts.EffectProfile = &p
	}
	if pv, ok := iv.Get("pin"); ok {
		pin, isString := pv.AsString()
		if !isString || !announce.IsDefinitionDigest(pin) {
			return nil, entryRefusal(WordInvalid, i, ".import.pin", "pin must be a definition digest (sha256: and 64 hex digits)")
		}
		facts.Pin = pin
	}
	return facts, nil
}

// checkFunctionShape is P3: key sets and value types of the nested or flat form.
func checkFunctionShape(i int, v jsonwire.Value) *refusal.Error {
	fn, nested := v.Get("function")
	allowed := flatKeys
	if nested {
		allowed = nestedKeys
	}
	if k, bad := smallestKey(v, allowed...); bad {
		return entryRefusal(WordInvalid, i, pathKey(k), "%s is not a key of a function tool", quote(k))
	}
	body, prefix := v, ""
	if nested {
		if !fn.IsObject() {
			return entryRefusal(WordInvalid, i, ".function", "function must be an object")
		}
		if k, bad := smallestKey(fn, functionKeys...); bad {
			return entryRefusal(WordInvalid, i, ".function"+pathKey(k), "%s is not a key of function", quote(k))
		}
		body, prefix = fn, ".function"
	}
	name, ok := body.GetString("name")
	if !ok || !validName(name) {
		return entryRefusal(WordInvalid, i, prefix+".name", "the name must be a string of 1 to %d characters without NUL", MaxNameLength)
	}
	if d, ok := body.Get("description"); ok && d.Kind() != jsonwire.StringKind {
		return entryRefusal(WordInvalid, i, prefix+".description", "description must be a string")
	}
	if p, ok := body.Get("parameters"); ok && !p.IsObject() {
		return entryRefusal(WordInvalid, i, prefix+".parameters", "parameters must be an object")
	}
	if s, ok := body.Get("strict"); ok && s.Kind() != jsonwire.BoolKind {
		return entryRefusal(WordInvalid, i, prefix+".strict", "strict must be true or false")
	}
	if nested {
		if s, ok := v.Get("strict"); ok && s.Kind() != jsonwire.BoolKind {
			return entryRefusal(WordInvalid, i, ".strict", "strict must be true or false")
		}
	}
	return nil
}

// checkRoute is P4: the route grammar of docs/agent-tools.md#declaring-tools, in its order.
func (c *Compiler) checkRoute(i int, rv jsonwire.Value) (*Route, *refusal.Error) {
	kind, _ := rv.GetString("kind")
	if !rv.IsObject() || kind != "runner" {
		return nil, entryRefusal(WordInvalidToolRoute, i, ".route", `route must be an object whose kind is "runner"`)
	}
	if k, bad := smallestKey(rv, routeKeys...); bad {
		return nil, entryRefusal(WordInvalidToolRoute, i, ".route", "%s is not a key of a route", quote(k))
	}
	idv, ok := rv.Get("runner_executor_public_id")
	if !ok {
		return nil, entryRefusal(WordRunnerTargetRequired, i, ".route", "a route must name its Runner in runner_executor_public_id")
	}
	id, isString := idv.AsString()
	if !isString || !validUUID(id) {
		return nil, entryRefusal(WordInvalidToolRoute, i, ".route.runner_executor_public_id", "runner_executor_public_id must be a Runner public id")
	}
	tn, ok := rv.GetString("tool_name")
	if !ok || !validName(tn) {
		return nil, entryRefusal(WordInvalidToolRoute, i, ".route.tool_name", "tool_name must name the tool the Runner serves")
	}
	if t := c.resolve(tn); t != nil && !(t.entry.Canonical == CanonicalSkill && tn == t.entry.Wire) {
		return nil, entryRefusal(WordInvalidToolRoute, i, ".route.tool_name", "%s is a kernel tool; a route may name only a Runner's own tools and skill", quote(tn))
	}
	return &Route{RunnerID: id, ToolName: tn}, nil
}
