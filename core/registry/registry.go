package registry

import (
	"bytes"
	"embed"
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/nexuskernel/nexus/sdk/announce"
)

// Each tool's texts live in tools/<wire>.txt (the description template; its one trailing line
// feed is trimmed on load) and tools/<wire>.schema.json (the parameter schema template, read as
// literal JSON so its key order is the file's).
//
//go:embed tools
var toolFiles embed.FS

// Registry is the immutable kernel tool catalog.
type Registry struct {
	entries     []Entry
	byCanonical map[string]int
	// aliasIndex maps each wire name to its canonical name.
	aliasIndex map[string]string
	catalog    []byte
	pack       []byte
}

// New builds the registry from the name table and the embedded texts. It panics only when the
// embedded files break the registry's rules, which this package's tests rule out for any build.
func New() *Registry {
	r, err := build()
	if err != nil {
		panic("registry: " + err.Error())
	}
	return r
}

func build() (*Registry, error) {
	names := announce.KernelNames()
	if len(names) != len(effects) {
		return nil, fmt.Errorf("name table has %d rows, effect table %d", len(names), len(effects))
	}
	r := &Registry{
		byCanonical: make(map[string]int, len(names)),
		aliasIndex:  make(map[string]string, len(names)),
	}
	for i, k := range names {
		if effects[i].canonical != k.Canonical {
			return nil, fmt.Errorf("row %d: effect table names %s, name table %s", i+1, effects[i].canonical, k.Canonical)
		}
		e, err := loadEntry(k, effects[i].effect)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", k.Wire, err)
		}
		if _, dup := r.byCanonical[e.Canonical]; dup {
			return nil, fmt.Errorf("%s: canonical name registered twice", e.Canonical)
		}
		if _, dup := r.aliasIndex[e.Wire]; dup {
			return nil, fmt.Errorf("%s: wire name registered twice", e.Wire)
		}
		r.byCanonical[e.Canonical] = len(r.entries)
		r.aliasIndex[e.Wire] = e.Canonical
		r.entries = append(r.entries, e)
	}
	var err error
	if r.catalog, err = r.encodeCatalog(); err != nil {
		return nil, err
	}
	if r.pack, err = r.encodeContractPack(); err != nil {
		return nil, err
	}
	return r, nil
}

func loadEntry(k announce.KernelName, effect EffectName) (Entry, error) {
	profile, ok := effect.Profile()
	if !ok {
		return Entry{}, fmt.Errorf("unknown effect constant %q", effect)
	}
	tmpl, err := toolFiles.ReadFile("tools/" + k.Wire + ".txt")
	if err != nil {
		return Entry{}, err
	}
	template := strings.TrimSuffix(string(tmpl), "\n")
	if err := checkTemplate(template); err != nil {
		return Entry{}, fmt.Errorf("description template %w", err)
	}
	raw, err := toolFiles.ReadFile("tools/" + k.Wire + ".schema.json")
	if err != nil {
		return Entry{}, err
	}
	var schema bytes.Buffer
	if err := json.Compact(&schema, raw); err != nil {
		return Entry{}, fmt.Errorf("schema template: %w", err)
	}
	if err := checkSchemaTexts(schema.Bytes()); err != nil {
		return Entry{}, fmt.Errorf("schema template: %w", err)
	}
	return Entry{
		Position:   k.Position,
		Canonical:  k.Canonical,
		Wire:       k.Wire,
		Class:      k.Class,
		EffectName: effect,
		Effect:     profile,
		Template:   template,
		Schema:     schema.Bytes(),
	}, nil
}

// checkSchemaTexts holds a schema to the macro rules: top-level property descriptions obey
// the text rules, and no other string in the schema, key or value, holds {{ or }}, since
// nothing else is rendered.
func checkSchemaTexts(schema []byte) error {
	spans, err := propertyDescriptions(schema)
	if err != nil {
		return err
	}
	rest := make([]byte, 0, len(schema))
	last := 0
	for _, s := range spans {
		var text string
		if err := json.Unmarshal(schema[s.start:s.end], &text); err != nil {
			return err
		}
		if err := checkText(text); err != nil {
			return fmt.Errorf("property description %w", err)
		}
		rest = append(rest, schema[last:s.start]...)
		rest = append(rest, `""`...)
		last = s.end
	}
	rest = append(rest, schema[last:]...)
	dec := json.NewDecoder(bytes.NewReader(rest))
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		if s, ok := tok.(string); ok && (strings.Contains(s, "{{") || strings.Contains(s, "}}")) {
			return fmt.Errorf("%q: {{ or }} outside a top-level property description", s)
		}
	}
}

// Entries returns the twenty entries in catalog order. The slice and its bytes are the
// caller's own.
func (r *Registry) Entries() []Entry {
	out := make([]Entry, len(r.entries))
	for i, e := range r.entries {
		out[i] = e.clone()
	}
	return out
}

// Canonicals returns the canonical names in catalog order.
func (r *Registry) Canonicals() []string {
	out := make([]string, len(r.entries))
	for i, e := range r.entries {
		out[i] = e.Canonical
	}
	return out
}

// Resolve is the one resolution function: a canonical name first, then the alias index from
// wire names. Matching is exact and case-sensitive; nothing is trimmed or folded.
func (r *Registry) Resolve(name string) (Entry, bool) {
	if i, ok := r.byCanonical[name]; ok {
		return r.entries[i].clone(), true
	}
	if canonical, ok := r.aliasIndex[name]; ok {
		return r.entries[r.byCanonical[canonical]].clone(), true
	}
	return Entry{}, false
}
