package registry

import (
	"encoding/json"
	"testing"
)

// member is one key of a JSON object with its raw value, in document order.
type member struct {
	key string
	raw json.RawMessage
}

// members lists the members of a JSON object in document order, which a map would lose.
func members(t *testing.T, raw []byte) []member {
	t.Helper()
	spans, err := objectSpans(raw, 0, len(raw))
	if err != nil {
		t.Fatalf("members of %s: %v", raw, err)
	}
	out := make([]member, len(spans))
	for i, s := range spans {
		out[i] = member{key: s.key, raw: json.RawMessage(raw[s.start:s.end])}
	}
	return out
}

func keysOf(ms []member) []string {
	keys := make([]string, len(ms))
	for i, m := range ms {
		keys[i] = m.key
	}
	return keys
}

func get(ms []member, key string) (json.RawMessage, bool) {
	for _, m := range ms {
		if m.key == key {
			return m.raw, true
		}
	}
	return nil, false
}

// servedEntries splits the catalog body into its entries' raw bytes.
func servedEntries(t *testing.T, body []byte) []json.RawMessage {
	t.Helper()
	var env struct {
		Tools []json.RawMessage `json:"tools"`
	}
	if err := json.Unmarshal(body, &env); err != nil {
		t.Fatalf("decode catalog: %v", err)
	}
	return env.Tools
}

// propertyDescriptionTexts returns each top-level property description of a schema, decoded,
// keyed by property name.
func propertyDescriptionTexts(t *testing.T, schema []byte) map[string]string {
	t.Helper()
	out := map[string]string{}
	top := members(t, schema)
	props, ok := get(top, "properties")
	if !ok {
		return out
	}
	for _, p := range members(t, props) {
		d, ok := get(members(t, p.raw), "description")
		if !ok {
			continue
		}
		var s string
		if err := json.Unmarshal(d, &s); err != nil {
			t.Fatalf("description of %s: %v", p.key, err)
		}
		out[p.key] = s
	}
	return out
}
