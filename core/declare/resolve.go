package declare

import (
	"encoding/json"
	"fmt"

	"github.com/nexuskernel/nexus/sdk/jsonwire"
)

// Resolution is what a model's call becomes on its task row (docs/agent-tools.md#declaring-tools).
type Resolution struct {
	// Declared is false when the called name is no callable of the set; the call then fails
	// with unknown_tool elsewhere, and ToolName and Input are the call's own.
	Declared bool
	// ToolName is the row's tool_name: the kernel wire name for an alias, the served name for
	// a routed tool, else the called name.
	ToolName string
	// Canonical is the kernel tool the call runs, "" when it is not a kernel tool.
	Canonical string
	// Input is the row's tool_input: mapped through the alias, else the caller's bytes.
	Input json.RawMessage
	// Alias is the row's tool_alias: the alias the model called (an identity alias names
	// itself), or a routed callable that differs from its served name; "" otherwise.
	Alias string
	// Route is the routed tool's target.
	Route *Route
	// Import is a tool-provider import's frozen facts (effect profile, pin); nil otherwise.
	Import *ImportFacts
}

// ResolveCall resolves a call of name with input (a JSON object) against the frozen set. Only
// an alias changes the input; every other call keeps its bytes. The caller's input is never
// modified. A non-object input is an error: the pairing law fails such a call earlier.
func (s *Set) ResolveCall(name string, input json.RawMessage) (Resolution, error) {
	e := s.find(name)
	if e == nil {
		return Resolution{ToolName: name, Input: input}, nil
	}
	res := Resolution{Declared: true, ToolName: name, Input: input}
	switch {
	case e.alias != nil:
		v, err := jsonwire.Decode(input)
		if err != nil || !v.IsObject() {
			return Resolution{}, fmt.Errorf("declare: the arguments of %s are not a JSON object", name)
		}
		res.ToolName = e.tool.entry.Wire
		res.Canonical = e.tool.entry.Canonical
		res.Alias = e.name
		res.Input = mapInput(e.alias, v).Encode()
	case e.tool != nil:
		res.Canonical = e.tool.entry.Canonical
	case e.route != nil:
		r := *e.route
		res.Route = &r
		res.ToolName = r.ToolName
		if e.name != r.ToolName {
			res.Alias = e.name
		}
	case e.imp != nil:
		f := *e.imp
		res.Import = &f
	}
	return res, nil
}

// mapInput maps a call's input through its alias (docs/agent-tools.md#declaring-tools): alias and
// omitted keys removed, each alias
// parameter present written under its target (a boolean negated when inverted), everything else
// passed through. A key the input repeats keeps its last value, as the kernel's own argument
// decoding does.
func mapInput(a *aliasSpec, in jsonwire.Value) jsonwire.Value {
	specOf := func(key string) (paramSpec, bool) {
		for _, p := range a.params {
			if p.key == key {
				return p, true
			}
		}
		return paramSpec{}, false
	}
	omitted := func(key string) bool {
		for _, o := range a.omit {
			if o == key {
				return true
			}
		}
		return false
	}
	var out []jsonwire.Field
	at := map[string]int{}
	put := func(key string, v jsonwire.Value) {
		if i, ok := at[key]; ok {
			out[i].Value = v
			return
		}
		at[key] = len(out)
		out = append(out, jsonwire.M(key, v))
	}
	given := map[string]jsonwire.Value{}
	for _, m := range in.Members() {
		if _, isAlias := specOf(m.Key); isAlias {
			given[m.Key] = m.Value
			continue
		}
		if omitted(m.Key) {
			continue
		}
		put(m.Key, m.Value)
	}
	for _, p := range a.params {
		v, ok := given[p.key]
		if !ok {
			continue // absent stays absent: the kernel's default applies
		}
		if b, isBool := v.AsBool(); isBool && p.inverted() {
			v = jsonwire.Bool(!b)
		}
		put(p.mapsTo, v)
	}
	return jsonwire.Object(out...)
}
