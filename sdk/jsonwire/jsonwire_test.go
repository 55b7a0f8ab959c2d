package jsonwire

import (
	"encoding/json"
	"errors"
	"testing"
)

func TestCanonicalJSON(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in, want        string
		dup, unstorable bool
	}{
		{`{"b":1, "a":[true,false,null], "A":{}}`, `{"A":{},"a":[true,false,null],"b":1}`, false, false},
		{` "x" `, `"x"`, false, false},
		{`{"_meta":1,"z":2,"mimeType":3}`, `{"_meta":1,"mimeType":3,"z":2}`, false, false},
		{`"<&>\u003c\/\u00e9\u2028"`, "\"<&></é\u2028\"", false, false},
		{`"\b\f\n\r\t\u0001\u001f\u007f\"\\"`, "\"\\b\\f\\n\\r\\t\\u0001\\u001f\x7f\\\"\\\\\"", false, false},
		{`"\ud83d\ude00"`, `"😀"`, false, false},
		{`[1.0, 1e2, -0, 0.000001, 1e-7, 1e21, 123456789012345678901, 1.5E+3, -2.50]`, `[1,100,0,0.000001,1e-7,1e+21,123456789012345680000,1500,-2.5]`, false, false},
		{`1e400`, `1e400`, false, false},
		{`{"a":1,"a":2}`, `{"a":2}`, true, false},
		{`[{"k":{"x":1,"x":1}}]`, `[{"k":{"x":1}}]`, true, false},
		{`"\u0000"`, "\"\\u0000\"", false, true},
		{`{"\u0000":1}`, "{\"\\u0000\":1}", false, true},
		{`"\ud800"`, "\"\uFFFD\"", false, true},
		{`"\udc00"`, "\"\uFFFD\"", false, true},
		{`"\ud800\u0041"`, "\"\uFFFDA\"", false, true},
		{`"\ud800\ud800"`, "\"\uFFFD\uFFFD\"", false, true},
		{"\"\xff\"", "\"\uFFFD\"", false, true},
	}
	for _, tt := range tests {
		got, facts, err := Canonical([]byte(tt.in))
		if err != nil {
			t.Errorf("%s: %v", tt.in, err)
			continue
		}
		if string(got) != tt.want {
			t.Errorf("%s: got %s, want %s", tt.in, got, tt.want)
		}
		if facts.DuplicateKey != tt.dup || facts.Unstorable != tt.unstorable {
			t.Errorf("%s: facts %+v", tt.in, facts)
		}
	}
	for _, bad := range []string{``, `{`, `{"a"}`, `{"a":1,}`, `[1,]`, `01`, `1.`, `-`, `.5`, `tru`, `"a`, `"\x"`, `"\u12"`, "\"\x01\"", `1 2`, `{"a":1}x`, `nul`} {
		if _, _, err := Canonical([]byte(bad)); err == nil {
			t.Errorf("%q: accepted", bad)
		}
	}
}

// FuzzCanonicalJSON checks the walker against encoding/json: it accepts exactly the texts the
// standard decoder accepts, and its output is valid JSON that canonicalizes to itself.
func FuzzCanonicalJSON(f *testing.F) {
	for _, s := range []string{`{"b":1,"a":[1.5,"x"]}`, `"\ud800"`, `1e400`, `[]`, `{"a":{"a":1}}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		got, _, err := Canonical(in)
		if (err == nil) != json.Valid(in) {
			t.Fatalf("%q: walker err %v, json.Valid %v", in, err, json.Valid(in))
		}
		if err != nil {
			return
		}
		if !json.Valid(got) {
			t.Fatalf("%q: output %q is not JSON", in, got)
		}
		again, _, err := Canonical(got)
		if err != nil || string(again) != string(got) {
			t.Fatalf("%q: not idempotent: %q then %q (%v)", in, got, again, err)
		}
	})
}

func TestCanonicalJSONDepth(t *testing.T) {
	t.Parallel()
	nest := func(n int) []byte {
		b := make([]byte, 0, 2*n)
		for i := 0; i < n; i++ {
			b = append(b, '[')
		}
		for i := 0; i < n; i++ {
			b = append(b, ']')
		}
		return b
	}
	for _, n := range []int{MaxDepth, MaxDepth + 1} {
		_, _, err := Canonical(nest(n))
		if (err == nil) != json.Valid(nest(n)) {
			t.Errorf("depth %d: walker err %v, json.Valid %v", n, err, json.Valid(nest(n)))
		}
	}
}

func TestQuotedLen(t *testing.T) {
	t.Parallel()
	for _, s := range []string{"", "a", "\"\\", "\b\f\n\r\t", "\x00\x01\x1f", "é€😀", "\u2028<>&", "\x7f"} {
		if got, want := QuotedLen(s), len(AppendString(nil, s)); got != want {
			t.Errorf("QuotedLen(%q) = %d, want %d", s, got, want)
		}
	}
}

func TestCanonicalJSONManyKeys(t *testing.T) {
	t.Parallel()
	// Past keySetLinear keys the set switches to a map; repeats are still found.
	var b []byte
	b = append(b, '{')
	for i := 0; i < 40; i++ {
		b = append(b, []byte(`"k`+string(rune('a'+i%26))+string(rune('a'+i/26))+`":1,`)...)
	}
	b = append(b, []byte(`"kaa":2}`)...)
	out, facts, err := Canonical(b)
	if err != nil || !facts.DuplicateKey {
		t.Fatalf("err %v, facts %+v", err, facts)
	}
	if !json.Valid(out) || len(out) == 0 || out[len(out)-1] != '}' {
		t.Fatalf("out %s", out)
	}
	var m map[string]int
	if err := json.Unmarshal(out, &m); err != nil || len(m) != 40 || m["kaa"] != 2 {
		t.Errorf("got %d keys, kaa=%d: %v", len(m), m["kaa"], err)
	}
}

// TestSyntaxOffset: every failed walk says where the input stopped being JSON, and matches
// ErrSyntax.
func TestSyntaxOffset(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		in     string
		offset int
	}{
		{`{"a":1,}`, 7},
		{`{"a" 1}`, 5},
		{`{"a":tru}`, 5},
		{`{"a":1} x`, 8},
		{`[1,`, 3},
		{`{"a":"\x"}`, 8},
		{``, 0},
	} {
		_, err := Scan([]byte(c.in))
		var se *SyntaxError
		if !errors.As(err, &se) || !errors.Is(err, ErrSyntax) {
			t.Errorf("%q: %v is not a syntax error", c.in, err)
			continue
		}
		if se.Offset != c.offset {
			t.Errorf("%q: offset %d, want %d", c.in, se.Offset, c.offset)
		}
	}
	if _, err := SplitObject([]byte(`{"a":[1,2}`)); err == nil || err.(*SyntaxError).Offset != 9 {
		t.Errorf("SplitObject: %v", err)
	}
}

func TestIsPublicID(t *testing.T) {
	t.Parallel()
	for s, want := range map[string]bool{
		"0190a3f2-7c4e-7d2a-9b1e-3f5a6c7d8e9f":  true,
		"00000000-0000-0000-0000-000000000000":  true,
		"0190A3F2-7C4E-7D2A-9B1E-3F5A6C7D8E9F":  false, // upper case is read by lowering, never a public id
		"0190a3f2-7c4e-7d2a-9b1e-3f5a6c7d8e9":   false,
		"0190a3f2-7c4e-7d2a-9b1e-3f5a6c7d8e9ff": false,
		"0190a3f27c4e-7d2a-9b1e-3f5a6c7d8e9f-":  false,
		"0190a3f2-7c4e-7d2a-9b1e-3f5a6c7d8e9g":  false,
		"":                                      false,
	} {
		if got := IsPublicID(s); got != want {
			t.Errorf("IsPublicID(%q) = %v, want %v", s, got, want)
		}
	}
}
