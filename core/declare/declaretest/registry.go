package declaretest

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"fmt"

	"github.com/nexuskernel/nexus/core/registry"
	"github.com/nexuskernel/nexus/sdk/announce"
)

// registryJSON is the fixture registry exactly as the declaration rules list it.
//
//go:embed registry.json
var registryJSON []byte

// Registry is the fixture registry. It resolves names as the kernel registry does: a canonical
// name first, then a wire name, exact and case-sensitive.
type Registry struct {
	entries []registry.Entry
}

// NewRegistry decodes the fixture. It panics on a broken fixture file, which no test could
// use anyway.
func NewRegistry() *Registry {
	var rows []struct {
		Canonical  string          `json:"canonical"`
		Wire       string          `json:"wire"`
		Template   string          `json:"template"`
		Parameters json.RawMessage `json:"parameters"`
	}
	if err := json.Unmarshal(registryJSON, &rows); err != nil {
		panic(fmt.Sprintf("declaretest: fixture registry: %v", err))
	}
	r := &Registry{}
	for i, row := range rows {
		var schema bytes.Buffer
		if err := json.Compact(&schema, row.Parameters); err != nil {
			panic(fmt.Sprintf("declaretest: schema of %s: %v", row.Canonical, err))
		}
		class, _ := announce.ClassOf(row.Canonical)
		r.entries = append(r.entries, registry.Entry{
			Position:  i + 1,
			Canonical: row.Canonical,
			Wire:      row.Wire,
			Class:     class,
			Template:  row.Template,
			Schema:    schema.Bytes(),
		})
	}
	return r
}

// Entries returns the fixture's entries in order; the slice and its bytes are the caller's.
func (r *Registry) Entries() []registry.Entry {
	out := make([]registry.Entry, len(r.entries))
	for i, e := range r.entries {
		e.Schema = append(json.RawMessage(nil), e.Schema...)
		out[i] = e
	}
	return out
}

// Resolve finds an entry by canonical name, then by wire name.
func (r *Registry) Resolve(name string) (registry.Entry, bool) {
	for _, e := range r.entries {
		if e.Canonical == name {
			return e, true
		}
	}
	for _, e := range r.entries {
		if e.Wire == name {
			return e, true
		}
	}
	return registry.Entry{}, false
}

// Definition returns D(x): the plain definition of fixture tool x, as the catalog would serve
// it.
func (r *Registry) Definition(x string) json.RawMessage {
	e, ok := r.Resolve(x)
	if !ok {
		panic("declaretest: no fixture tool " + x)
	}
	def, err := registry.Definition(e, registry.PlainSpelling)
	if err != nil {
		panic(err)
	}
	return def
}
