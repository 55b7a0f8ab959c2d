package registry

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/nexuskernel/nexus/sdk/announce"
)

const (
	// ContractPackFile is where the contract pack lives, relative to the module root.
	ContractPackFile = "contracts/nexus/v1/tools.json"
	// ContractPackCanonical is the one tool the contract pack carries: the one whose template
	// client adaptation packs anchor their recuts on.
	ContractPackCanonical = "nexus.graph.delegate_task"
)

// catalogEntry is one tool as the catalog route serves it; field order is the key order.
type catalogEntry struct {
	CanonicalName string                 `json:"canonical_name"`
	Name          string                 `json:"name"`
	EffectProfile announce.EffectProfile `json:"effect_profile"`
	Definition    json.RawMessage        `json:"definition"`
	Template      string                 `json:"template"`
}

type catalogEnvelope struct {
	Tools []catalogEntry `json:"tools"`
}

// CatalogBody returns the exact body of GET /agent_api/v1/tools: compact JSON with <, > and &
// literal, followed by one line feed. The bytes are the caller's own.
func (r *Registry) CatalogBody() []byte { return bytes.Clone(r.catalog) }

// ContractPack returns the exact bytes of the contract pack file: the route's envelope around
// the one ContractPackCanonical entry, indented by two spaces, followed by one line feed.
func (r *Registry) ContractPack() []byte { return bytes.Clone(r.pack) }

func (r *Registry) encodeCatalog() ([]byte, error) {
	env := catalogEnvelope{Tools: make([]catalogEntry, 0, len(r.entries))}
	for _, e := range r.entries {
		ce, err := catalogEntryOf(e)
		if err != nil {
			return nil, err
		}
		env.Tools = append(env.Tools, ce)
	}
	return encodeBody(env)
}

func (r *Registry) encodeContractPack() ([]byte, error) {
	i, ok := r.byCanonical[ContractPackCanonical]
	if !ok {
		return nil, fmt.Errorf("contract pack: %s is not registered", ContractPackCanonical)
	}
	ce, err := catalogEntryOf(r.entries[i])
	if err != nil {
		return nil, err
	}
	body, err := encodeBody(catalogEnvelope{Tools: []catalogEntry{ce}})
	if err != nil {
		return nil, err
	}
	return indentFile(body)
}

func catalogEntryOf(e Entry) (catalogEntry, error) {
	def, err := Definition(e, PlainSpelling)
	if err != nil {
		return catalogEntry{}, fmt.Errorf("%s: %w", e.Wire, err)
	}
	return catalogEntry{
		CanonicalName: e.Canonical,
		Name:          e.Wire,
		EffectProfile: e.Effect,
		Definition:    def,
		Template:      e.Template,
	}, nil
}

// encodeBody writes what json.Encoder.Encode writes with HTML escaping off: compact JSON and
// one line feed. The templates quote <task_result> and must be served literally.
func encodeBody(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// indentFile turns a compact body (with or without its line feed) into the checked-in file
// form: json.Indent with two spaces, then one line feed. Indentation only adds white space
// between tokens, so json.Compact of the file gives the compact bytes back.
func indentFile(body []byte) ([]byte, error) {
	var buf bytes.Buffer
	if err := json.Indent(&buf, bytes.TrimSuffix(body, []byte("\n")), "", "  "); err != nil {
		return nil, err
	}
	buf.WriteByte('\n')
	return buf.Bytes(), nil
}
