package declare

import (
	"sort"

	"github.com/nexuskernel/nexus/core/registry"
	"github.com/nexuskernel/nexus/sdk/jsonwire"
)

// aliasSpec is a lawful alias's facts, from which it is always rendered
// (docs/development.md#the-declaration-compiler): never from a previous render's text.
type aliasSpec struct {
	// params are ordered by the kernel position of their maps_to target.
	params []paramSpec
	// omit is in kernel parameter order.
	omit []string
	// description is the alias's own template; nil when absent.
	description *string
}

// paramSpec is one alias parameter.
type paramSpec struct {
	key    string
	mapsTo string
	// invert and description are nil when the authored spec had no non-null value.
	invert      *bool
	description *string
}

func (p paramSpec) inverted() bool { return p.invert != nil && *p.invert }

// renderAlias writes the stored alias entry of docs/agent-tools.md#declaring-tools under sp, its
// own texts spelled with the self macro.
func (sp *spellings) renderAlias(e *entry) (jsonwire.Value, error) {
	fn, err := sp.aliasFunction(e)
	if err != nil {
		return jsonwire.Value{}, err
	}
	a := e.alias
	members := []jsonwire.Field{
		jsonwire.M("type", jsonwire.String("function")),
		jsonwire.M("function", fn),
		jsonwire.M("canonical", jsonwire.String(e.tool.entry.Canonical)),
	}
	if len(a.params) > 0 {
		ps := make([]jsonwire.Field, 0, len(a.params))
		for _, p := range a.params {
			spec := []jsonwire.Field{jsonwire.M("maps_to", jsonwire.String(p.mapsTo))}
			if p.invert != nil {
				spec = append(spec, jsonwire.M("invert", jsonwire.Bool(*p.invert)))
			}
			if p.description != nil {
				spec = append(spec, jsonwire.M("description", jsonwire.String(*p.description)))
			}
			ps = append(ps, jsonwire.M(p.key, jsonwire.Object(spec...)))
		}
		members = append(members, jsonwire.M("params", jsonwire.Object(ps...)))
	}
	if len(a.omit) > 0 {
		items := make([]jsonwire.Value, len(a.omit))
		for i, o := range a.omit {
			items[i] = jsonwire.String(o)
		}
		members = append(members, jsonwire.M("omit", jsonwire.Array(items...)))
	}
	if a.description != nil {
		members = append(members, jsonwire.M("description", jsonwire.String(*a.description)))
	}
	if e.deferLoading != nil {
		members = append(members, jsonwire.M("defer_loading", jsonwire.Bool(*e.deferLoading)))
	}
	return jsonwire.Object(members...), nil
}

// aliasFunction is the alias's rendered function block: {name, description, parameters}.
func (sp *spellings) aliasFunction(e *entry) (jsonwire.Value, error) {
	spell := sp.spell(e.tool, e.name)
	template := e.tool.entry.Template
	if e.alias.description != nil {
		template = *e.alias.description
	}
	schema := aliasSchema(e.tool, e.alias).Encode()
	rendered, err := registry.RenderSchema(schema, spell)
	if err != nil {
		return jsonwire.Value{}, err
	}
	params, err := jsonwire.Decode(rendered)
	if err != nil {
		return jsonwire.Value{}, err
	}
	return jsonwire.Object(
		jsonwire.M("name", jsonwire.String(e.name)),
		jsonwire.M("description", jsonwire.String(registry.Render(template, spell))),
		jsonwire.M("parameters", params),
	), nil
}

// aliasSchema builds the alias's parameter schema from the tool's template
// (docs/agent-tools.md#declaring-tools): omitted parameters dropped, mapped ones renamed in place
// with an inverted default negated and a description replaced or appended, required renamed in
// order, everything else as it stands.
func aliasSchema(t *kernelTool, a *aliasSpec) jsonwire.Value {
	byTarget := make(map[string]paramSpec, len(a.params))
	for _, p := range a.params {
		byTarget[p.mapsTo] = p
	}
	omitted := make(map[string]bool, len(a.omit))
	for _, o := range a.omit {
		omitted[o] = true
	}
	if len(byTarget) == 0 && len(omitted) == 0 {
		return t.schema
	}
	out := make([]jsonwire.Field, 0, t.schema.Len())
	for _, m := range t.schema.Members() {
		switch {
		case m.Key == "properties" && m.Value.IsObject():
			props := make([]jsonwire.Field, 0, m.Value.Len())
			for _, p := range m.Value.Members() {
				if omitted[p.Key] {
					continue
				}
				spec, mapped := byTarget[p.Key]
				if !mapped {
					props = append(props, p)
					continue
				}
				prop := p.Value
				if spec.inverted() {
					if d, ok := prop.Get("default"); ok {
						if b, isBool := d.AsBool(); isBool {
							prop = prop.Set("default", jsonwire.Bool(!b))
						}
					}
				}
				if spec.description != nil {
					prop = prop.Set("description", jsonwire.String(*spec.description))
				}
				props = append(props, jsonwire.M(spec.key, prop))
			}
			out = append(out, jsonwire.M(m.Key, jsonwire.Object(props...)))
		case m.Key == "required" && m.Value.IsArray():
			req := make([]jsonwire.Value, 0, m.Value.Len())
			for _, r := range m.Value.Items() {
				s, ok := r.AsString()
				switch {
				case ok && omitted[s]:
					continue
				case ok && byTarget[s].key != "":
					req = append(req, jsonwire.String(byTarget[s].key))
				default:
					req = append(req, r)
				}
			}
			out = append(out, jsonwire.M(m.Key, jsonwire.Array(req...)))
		default:
			out = append(out, m)
		}
	}
	return jsonwire.Object(out...)
}

// sortParams puts params in the kernel order of their targets and omit in kernel order.
func (a *aliasSpec) sortByKernel(t *kernelTool) {
	sort.SliceStable(a.params, func(i, j int) bool {
		return t.position(a.params[i].mapsTo) < t.position(a.params[j].mapsTo)
	})
	sort.SliceStable(a.omit, func(i, j int) bool { return t.position(a.omit[i]) < t.position(a.omit[j]) })
}
