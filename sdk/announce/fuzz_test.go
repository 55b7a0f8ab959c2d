package announce

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// FuzzValidateAnnouncement feeds arbitrary bodies to the announcement door's parser. It never
// panics; a refusal is well-formed (a known word, a status, its head the first listed
// failure); an accepted announcement passes Validate, and its stored form parses back to
// itself.
func FuzzValidateAnnouncement(f *testing.F) {
	for _, s := range []string{
		specAnnDoc,
		`{"tools":[]}`,
		`{}`,
		`[]`,
		body(tool("delegate_task"), tool("a"), tool("a")),
		body(tool("a", `"timeout_ms":5`, `"description":"d"`, `"input_schema":{"type":"object"}`)),
		body(`{"name":"a","effect_profile":{"kind":"pure","destructive":true}}`),
		`{"tools":[],"documents":[{"name":"a-b","description":"x"},{"name":"a-b","description":"y"}],"environment":{"os":"\u0000"}}`,
		`{"tools":[{"name":"memory_read","effect_profile":` + profileW + `}],"extra":1}`,
	} {
		f.Add([]byte(s))
	}
	words := map[string]int{
		CodeReservedNamespace: 422, CodeInvalidAnnouncement: 422, CodeValidationFailed: 422,
		CodeParameterInvalid: 400, CodeParameterMissing: 400, CodeContentTooLarge: 413,
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		a, r := ParseAnnouncement(in)
		if r != nil {
			if want, ok := words[r.Code]; !ok || want != status(r) {
				t.Fatalf("refusal word %q status %d", r.Code, status(r))
			}
			if status(r) != 422 && len(r.Errors) != 0 {
				t.Fatalf("a %d refusal lists errors: %+v", status(r), r.Errors)
			}
			if status(r) == 422 && (len(r.Errors) == 0 || r.Errors[0].Code != r.Code || r.Errors[0].Path != pathOf(r) || r.Errors[0].Name != nameOf(r)) {
				t.Fatalf("refusal head %+v does not lead its list %+v", r, r.Errors)
			}
			for _, p := range r.Errors {
				if _, ok := words[p.Code]; !ok {
					t.Fatalf("listed word %q", p.Code)
				}
			}
			return
		}
		if vr := Validate(a); vr != nil {
			t.Fatalf("Validate refuses a parsed announcement: %+v", vr)
		}
		_ = ValidatePlugin(PluginKindToolProvider, a)
		_ = ValidatePlugin(PluginKindMemory, a)

		var stored bytes.Buffer
		enc := json.NewEncoder(&stored)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(a); err != nil {
			t.Fatalf("encode: %v", err)
		}
		again, r := ParseAnnouncement(stored.Bytes())
		if r != nil {
			t.Fatalf("the stored form %s is refused: %+v", stored.Bytes(), r)
		}
		if diff := cmp.Diff(a, again); diff != "" {
			t.Fatalf("stored form does not parse back (-first +again):\n%s", diff)
		}
		if diff := cmp.Diff(a, a.Normalize()); diff != "" {
			t.Fatalf("Normalize is not idempotent (-parsed +normalized):\n%s", diff)
		}
	})
}
