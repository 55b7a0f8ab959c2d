package registry

import (
	"encoding/json"

	"github.com/nexuskernel/nexus/sdk/announce"
)

// Entry is one kernel tool as the registry holds it.
type Entry struct {
	// Position is the 1-based place in catalog order.
	Position  int
	Canonical string
	// Wire is stored in sdk/announce's table, never computed from Canonical.
	Wire       string
	Class      announce.Class
	EffectName EffectName
	Effect     announce.EffectProfile
	// Template is the description with its tool-name macros unrendered.
	Template string
	// Schema is the parameter schema template, compact, in the catalog's key order,
	// with macros in top-level property descriptions unrendered.
	Schema json.RawMessage
}

// PlainDescription is the template with every macro spelled as the kernel's wire name.
func (e Entry) PlainDescription() string { return Render(e.Template, PlainSpelling) }

// PlainParameters is the schema with every macro spelled as the kernel's wire name.
func (e Entry) PlainParameters() (json.RawMessage, error) {
	return RenderSchema(e.Schema, PlainSpelling)
}

// definition is the function tool a model is offered; field order is the wire's key order.
type definition struct {
	Type     string   `json:"type"`
	Function function `json:"function"`
}

type function struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Parameters  json.RawMessage `json:"parameters"`
}

// Definition renders e as {"type":"function","function":{"name","description","parameters"}}
// under spell: the name is spell(e.Wire) and both texts are rendered with spell. With
// PlainSpelling it is the catalog's definition, byte for byte.
func Definition(e Entry, spell func(wire string) string) (json.RawMessage, error) {
	params, err := RenderSchema(e.Schema, spell)
	if err != nil {
		return nil, err
	}
	return encodeCompact(definition{
		Type: "function",
		Function: function{
			Name:        spell(e.Wire),
			Description: Render(e.Template, spell),
			Parameters:  params,
		},
	})
}

// clone gives the caller bytes of its own, so no caller can change a registry.
func (e Entry) clone() Entry {
	e.Schema = append(json.RawMessage(nil), e.Schema...)
	return e
}
