package httpapi

import (
	"testing"

	"github.com/nexuskernel/nexus/core/refusal"
)

func TestDecodeBody(t *testing.T) {
	t.Parallel()
	type in struct {
		Workspace *struct {
			Handle string `json:"handle"`
		} `json:"workspace"`
	}
	cases := []struct {
		body    string
		present bool
		code    string
	}{
		{"", false, ""},
		{"  \n", false, ""},
		{`{}`, true, ""},
		{`{"workspace":{"handle":"x"}}`, true, ""},
		{`[]`, true, "parameter_invalid"},
		{`"x"`, true, "parameter_invalid"},
		{`null`, true, "parameter_invalid"},
		{`{"a":1`, true, "parameter_invalid"},
		{`{} {}`, true, "parameter_invalid"},
		{`{}x`, true, "parameter_invalid"},
		{`{"workspace":{"handle":5}}`, true, "validation_failed"},
	}
	for _, c := range cases {
		var v in
		present, err := decodeBody(&Call{Body: []byte(c.body)}, &v)
		if present != c.present {
			t.Errorf("%q: present = %v", c.body, present)
		}
		code := ""
		if r, ok := refusal.As(err); ok {
			code = r.Code
		} else if err != nil {
			t.Errorf("%q: untyped error %v", c.body, err)
		}
		if code != c.code {
			t.Errorf("%q: code %q, want %q", c.body, code, c.code)
		}
	}
	if err := requireRoot(false, "workspace", true); err == nil {
		t.Fatal("absent root accepted")
	} else if r, _ := refusal.As(err); r.Code != "parameter_missing" {
		t.Fatalf("absent root: %v", err)
	}
}
