package registry

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// strictTools are the tools whose schemas carry additionalProperties: false
// (docs/agent-tools.md#the-twenty-kernel-tools); the others ignore unknown keys.
var strictTools = map[string]bool{
	"delegate_task": true, "ask": true, "spawn": true, "send": true, "status": true,
	"cancel": true, "session_read": true, "session_search": true, "runners_list": true,
	"models_list": true,
}

// Keyword orders of the catalog's schemas (docs/api.md#health-and-the-catalog); each schema uses a
// subsequence.
var (
	schemaKeyOrder   = []string{"type", "properties", "required", "additionalProperties"}
	propertyKeyOrder = []string{"type", "enum", "items", "minimum", "maximum", "default", "description"}
)

// isSubsequence reports whether keys appear in order within order, each at most once.
func isSubsequence(keys, order []string) bool {
	i := 0
	for _, k := range keys {
		for i < len(order) && order[i] != k {
			i++
		}
		if i == len(order) {
			return false
		}
		i++
	}
	return true
}

func decodeInstance(t *testing.T, raw []byte) any {
	t.Helper()
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		t.Fatalf("decode %s: %v", raw, err)
	}
	return v
}

func TestSchemas(t *testing.T) {
	t.Parallel()
	for _, e := range New().Entries() {
		t.Run(e.Wire, func(t *testing.T) {
			t.Parallel()
			params, err := e.PlainParameters()
			if err != nil {
				t.Fatal(err)
			}

			c := jsonschema.NewCompiler()
			c.DefaultDraft(jsonschema.Draft2020)
			url := "mem:///" + e.Wire + ".schema.json"
			if err := c.AddResource(url, decodeInstance(t, params)); err != nil {
				t.Fatal(err)
			}
			sch, err := c.Compile(url)
			if err != nil {
				t.Fatalf("does not compile as draft 2020-12: %v", err)
			}

			top := members(t, params)
			if !isSubsequence(keysOf(top), schemaKeyOrder) {
				t.Errorf("schema keys %q are not in the order %q", keysOf(top), schemaKeyOrder)
			}
			if typ, _ := get(top, "type"); string(typ) != `"object"` {
				t.Errorf("top-level type = %s, want \"object\"", typ)
			}

			rawProps, ok := get(top, "properties")
			if !ok {
				t.Fatal("no properties")
			}
			props := members(t, rawProps)
			names := map[string]bool{}
			for _, p := range props {
				names[p.key] = true
				ps := members(t, p.raw)
				if !isSubsequence(keysOf(ps), propertyKeyOrder) {
					t.Errorf("property %s keys %q are not in the order %q", p.key, keysOf(ps), propertyKeyOrder)
				}
				if _, ok := get(ps, "description"); !ok {
					t.Errorf("property %s has no description", p.key)
				}
				if def, ok := get(ps, "default"); ok {
					psch, err := c.Compile(url + "#/properties/" + p.key)
					if err != nil {
						t.Fatalf("property %s: %v", p.key, err)
					}
					if err := psch.Validate(decodeInstance(t, def)); err != nil {
						t.Errorf("property %s: default %s does not validate: %v", p.key, def, err)
					}
				}
			}

			var required []string
			if raw, ok := get(top, "required"); ok {
				if err := json.Unmarshal(raw, &required); err != nil {
					t.Fatalf("required: %v", err)
				}
				if len(required) == 0 {
					t.Error("required is present but empty")
				}
			}
			for _, r := range required {
				if !names[r] {
					t.Errorf("required %q is not a property", r)
				}
			}

			ap, hasAP := get(top, "additionalProperties")
			if strictTools[e.Wire] {
				if !hasAP || string(ap) != "false" {
					t.Errorf("additionalProperties = %s, want false", ap)
				}
			} else if hasAP {
				t.Errorf("additionalProperties = %s, want it absent", ap)
			}

			// The compiled schema enforces what it says: required keys, and the closed key set
			// where it is closed (checked on tools without required keys, so nothing else fails).
			if len(required) > 0 {
				if err := sch.Validate(map[string]any{}); err == nil {
					t.Error("{} validates although properties are required")
				}
			} else {
				err := sch.Validate(map[string]any{"zz_not_a_parameter": true})
				if refused := err != nil; refused != strictTools[e.Wire] {
					t.Errorf("an unknown key refused = %v, want %v", refused, strictTools[e.Wire])
				}
			}
		})
	}
}

func TestIsSubsequence(t *testing.T) {
	t.Parallel()
	order := []string{"a", "b", "c"}
	for _, tt := range []struct {
		keys []string
		want bool
	}{
		{nil, true}, {[]string{"a", "c"}, true}, {[]string{"a", "b", "c"}, true},
		{[]string{"c", "a"}, false}, {[]string{"a", "a"}, false}, {[]string{"d"}, false},
	} {
		if got := isSubsequence(tt.keys, order); got != tt.want {
			t.Errorf("isSubsequence(%q) = %v", tt.keys, got)
		}
	}
}
