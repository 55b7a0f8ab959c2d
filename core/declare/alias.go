package declare

import (
	"sort"

	"github.com/nexuskernel/nexus/core/declare/jsonv"
	"github.com/nexuskernel/nexus/core/registry"
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
func (sp *spellings) renderAlias(e *entry) (jsonv.Value, error) {
	fn, err := sp.aliasFunction(e)
	if err != nil {
		return jsonv.Value{}, err
	}
	a := e.alias
	members := []jsonv.Member{
		jsonv.M("type", jsonv.String("function")),
		jsonv.M("function", fn),
		jsonv.M("canonical", jsonv.String(e.tool.entry.Canonical)),
	}
	if len(a.params) > 0 {
		ps := make([]jsonv.Member, 0, len(a.params))
		for _, p := range a.params {
			spec := []jsonv.Member{jsonv.M("maps_to", jsonv.String(p.mapsTo))}
			if p.invert != nil {
				spec = append(spec, jsonv.M("invert", jsonv.Bool(*p.invert)))
			}
			if p.description != nil {
				spec = append(spec, jsonv.M("description", jsonv.String(*p.description)))
			}
			ps = append(ps, jsonv.M(p.key, jsonv.Object(spec...)))
		}
		members = append(members, jsonv.M("params", jsonv.Object(ps...)))
	}
	if len(a.omit) > 0 {
		items := make([]jsonv.Value, len(a.omit))
		for i, o := range a.omit {
			items[i] = jsonv.String(o)
		}
		members = append(members, jsonv.M("omit", jsonv.Array(items...)))
	}
	if a.description != nil {
		members = append(members, jsonv.M("description", jsonv.String(*a.description)))
	}
	if e.deferLoading != nil {
		members = append(members, jsonv.M("defer_loading", jsonv.Bool(*e.deferLoading)))
	}
	return jsonv.Object(members...), nil
}

// aliasFunction is the alias's rendered function block: {name, description, parameters}.
func (sp *spellings) aliasFunction(e *entry) (jsonv.Value, error) {
	spell := sp.spell(e.tool, e.name)
	template := e.tool.entry.Template
	if e.alias.description != nil {
		template = *e.alias.description
	}
	schema := aliasSchema(e.tool, e.alias).Encode()
	rendered, err := registry.RenderSchema(schema, spell)
	if err != nil {
		return jsonv.Value{}, err
	}
	params, err := jsonv.Decode(rendered)
	if err != nil {
		return jsonv.Value{}, err
	}
	return jsonv.Object(
		jsonv.M("name", jsonv.String(e.name)),
		jsonv.M("description", jsonv.String(registry.Render(template, spell))),
		jsonv.M("parameters", params),
	), nil
}

// aliasSchema builds the alias's parameter schema from the tool's template
// (docs/agent-tools.md#declaring-tools): omitted parameters dropped, mapped ones renamed in place
// with an inverted default negated and a description replaced or appended, required renamed in
// order, everything else as it stands.
func aliasSchema(t *kernelTool, a *aliasSpec) jsonv.Value {
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
	out := make([]jsonv.Member, 0, t.schema.Len())
	for _, m := range t.schema.Members() {
		switch {
		case m.Key == "properties" && m.Value.IsObject():
			props := make([]jsonv.Member, 0, m.Value.Len())
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
							prop = prop.Set("default", jsonv.Bool(!b))
						}
					}
				}
				if spec.description != nil {
					prop = prop.Set("description", jsonv.String(*spec.description))
				}
				props = append(props, jsonv.M(spec.key, prop))
			}
			out = append(out, jsonv.M(m.Key, jsonv.Object(props...)))
		case m.Key == "required" && m.Value.IsArray():
			req := make([]jsonv.Value, 0, m.Value.Len())
			for _, r := range m.Value.Items() {
				s, ok := r.AsString()
				switch {
				case ok && omitted[s]:
					continue
				case ok && byTarget[s].key != "":
					req = append(req, jsonv.String(byTarget[s].key))
				default:
					req = append(req, r)
				}
			}
			out = append(out, jsonv.M(m.Key, jsonv.Array(req...)))
		default:
			out = append(out, m)
		}
	}
	return jsonv.Object(out...)
}

// sortParams puts params in the kernel order of their targets and omit in kernel order.
func (a *aliasSpec) sortByKernel(t *kernelTool) {
	sort.SliceStable(a.params, func(i, j int) bool {
		return t.position(a.params[i].mapsTo) < t.position(a.params[j].mapsTo)
	})
	sort.SliceStable(a.omit, func(i, j int) bool { return t.position(a.omit[i]) < t.position(a.omit[j]) })
}
