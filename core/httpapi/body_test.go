package httpapi

import (
	"encoding/json"
	"testing"

	"github.com/nexuskernel/nexus/core/refusal"
)

func TestDecodeBody(t *testing.T) {
	t.Parallel()
	type item struct {
		Name string `json:"name"`
	}
	type embedded struct {
		Extra json.RawMessage `json:"extra"`
	}
	type in struct {
		Workspace *struct {
			Handle string `json:"handle"`
			Items  []item `json:"items"`
		} `json:"workspace"`
		Raw    json.RawMessage   `json:"raw"`
		Labels map[string]string `json:"labels"`
		embedded
	}
	cases := []struct {
		body         string
		present      bool
		code, path   string
		message      string
		wordIncluded bool
	}{
		{body: "", present: false},
		{body: "  \n", present: false},
		{body: `{}`, present: true},
		{body: `{"workspace":{"handle":"x","items":[{"name":"a"}]}}`, present: true},
		// Values judged elsewhere carry any keys.
		{body: `{"raw":{"Anything":1},"labels":{"K":"v"},"extra":{"x":[1]}}`, present: true},
		{body: `[]`, present: true, code: "parameter_invalid", message: "The request body must be a JSON object."},
		{body: `"x"`, present: true, code: "parameter_invalid", message: "The request body must be a JSON object."},
		{body: `null`, present: true, code: "parameter_invalid", message: "The request body must be a JSON object."},
		{body: `{"a":1`, present: true, code: "parameter_invalid", message: "The request body is not valid JSON: it breaks off or goes wrong at byte 6."},
		{body: `{} {}`, present: true, code: "parameter_invalid", message: "The request body is not valid JSON: it breaks off or goes wrong at byte 3."},
		{body: `{}x`, present: true, code: "parameter_invalid", message: "The request body is not valid JSON: it breaks off or goes wrong at byte 2."},
		{body: `nul`, present: true, code: "parameter_invalid", message: "The request body is not valid JSON: it breaks off or goes wrong at byte 0."},
		{body: `{"workspace":{"handle":5}}`, present: true, code: "validation_failed", path: "workspace.handle"},
		// Unknown keys, at every level, in document order, matched exactly.
		{body: `{"workspaces":{}}`, present: true, code: "validation_failed", path: "workspaces",
			message: "workspaces is not a field of this request (the fields here: workspace, raw, labels, extra)."},
		{body: `{"Workspace":{}}`, present: true, code: "validation_failed", path: "Workspace"},
		{body: `{"workspace":{"Handle":"x"}}`, present: true, code: "validation_failed", path: "workspace.Handle",
			message: "workspace.Handle is not a field of this request (the fields here: handle, items)."},
		{body: `{"workspace":{"items":[{"name":"a"},{"nmae":"b"}]}}`, present: true, code: "validation_failed", path: "workspace.items[1].nmae"},
		{body: `{"raw":1,"z":2,"y":3}`, present: true, code: "validation_failed", path: "z"},
		{body: `{"EXTRA":1}`, present: true, code: "validation_failed", path: "EXTRA"},
	}
	for _, c := range cases {
		var v in
		present, err := decodeBody(&Call{Body: []byte(c.body)}, wordValidation, &v)
		if present != c.present {
			t.Errorf("%q: present = %v", c.body, present)
		}
		code, path, message := "", "", ""
		if r, ok := refusal.As(err); ok {
			code, message = r.Code, r.Message
			for _, f := range r.Extra {
				if f.Key == "path" {
					path, _ = f.Value.(string)
				}
			}
		} else if err != nil {
			t.Errorf("%q: untyped error %v", c.body, err)
		}
		if code != c.code || path != c.path || (c.message != "" && message != c.message) {
			t.Errorf("%q: %s at %q (%s), want %s at %q (%s)", c.body, code, path, message, c.code, c.path, c.message)
		}
	}
	if err := requireRoot(false, "workspace", true); err == nil {
		t.Fatal("absent root accepted")
	} else if r, _ := refusal.As(err); r.Code != "parameter_missing" {
		t.Fatalf("absent root: %v", err)
	}
}

// TestFieldWords: the unknown key takes the door's word, with its finer word where it has one.
func TestFieldWords(t *testing.T) {
	t.Parallel()
	body := []byte(`{"nope":1}`)
	for _, c := range []struct {
		word       fieldWord
		kind       refusal.Kind
		code, fine string
	}{
		{wordParameter, refusal.BadRequest, "parameter_invalid", ""},
		{wordValidation, refusal.Unprocessable, "validation_failed", ""},
		{wordConfiguration, refusal.Unprocessable, "validation_failed", "invalid"},
		{wordAnnouncement, refusal.Unprocessable, "invalid_announcement", ""},
	} {
		_, err := decodeExact(body, c.word, &noFields{})
		r, ok := refusal.As(err)
		if !ok || r.Kind != c.kind || r.Code != c.code {
			t.Fatalf("%+v: %v", c.word, err)
		}
		fine := ""
		for _, f := range r.Extra {
			if f.Key == "word" {
				fine, _ = f.Value.(string)
			}
		}
		if fine != c.fine {
			t.Fatalf("%+v: word %q", c.word, fine)
		}
	}
}
