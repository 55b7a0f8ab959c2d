package jsonwire

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

// TestRoundTrip: decoding then encoding gives the compact form, keys in document order,
// numbers as written, HTML and U+2028 as themselves, and only what JSON requires escaped.
func TestRoundTrip(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		` { "b" : 1 , "a" : [ true , false , null ] } `:            `{"b":1,"a":[true,false,null]}`,
		`{"z":1,"a":2,"z":3}`:                                      `{"z":1,"a":2,"z":3}`,
		`[1.50e+2, -0, 0.0, 1E-7, 123456789012345678901234567890]`: `[1.50e+2,-0,0.0,1E-7,123456789012345678901234567890]`,
		`"<a href=\"x\">&amp;</a>"`:                                `"<a href=\"x\">&amp;</a>"`,
		`"\u2028\u2029 é \u00e9 \ud83d\ude00"`:                     "\"\u2028\u2029 é é 😀\"",
		`"\b\f\n\r\t\u0000\u001f\/\\"`:                             `"\b\f\n\r\t\u0000\u001f/\\"`,
		`"\ud800 lone" `:                                           "\"\uFFFD lone\"",
		`"\udc00\ud800\udc00"`:                                     "\"\uFFFD𐀀\"",
		"\"bad \xff byte\"":                                        "\"bad \uFFFD byte\"",
		`{}`:                                                       `{}`,
		`[]`:                                                       `[]`,
		`""`:                                                       `""`,
	} {
		v, err := DecodeText(in)
		if err != nil {
			t.Errorf("%s: %v", in, err)
			continue
		}
		got := string(v.Encode())
		if got != want {
			t.Errorf("%s encoded as %s, want %s", in, got, want)
		}
		if n := v.EncodedSize(); n != len(got) {
			t.Errorf("%s: EncodedSize %d, len %d", in, n, len(got))
		}
	}
}

// TestDecodeRefuses: everything that is not exactly one JSON value.
func TestDecodeRefuses(t *testing.T) {
	t.Parallel()
	for _, in := range []string{
		``, ` `, `{`, `[1,]`, `{"a":1,}`, `{"a" 1}`, `{a:1}`, `01`, `1.`, `.5`, `-`, `1e`, `1e+`, `+1`,
		`tru`, `nul`, `"a` + "\n" + `"`, `"\x"`, `"\u12"`, `"\u12g4"`, `1 2`, `[1] x`, `NaN`, `'a'`,
		`"\ud800\u12"`,
		strings.Repeat("[", MaxDepth+1) + strings.Repeat("]", MaxDepth+1),
	} {
		_, err := DecodeText(in)
		if err == nil || !errors.Is(err, ErrSyntax) {
			t.Errorf("%q decoded (err %v)", in, err)
			continue
		}
		// Decode reads with Scan's walker, so both stop at the same byte.
		_, serr := Scan([]byte(in))
		var de, se *SyntaxError
		if !errors.As(err, &de) || !errors.As(serr, &se) || de.Offset != se.Offset {
			t.Errorf("%q: Decode fails with %v, Scan with %v", in, err, serr)
		}
		if json.Valid([]byte(in)) {
			t.Errorf("%q is valid for encoding/json but refused here", in)
		}
	}
	deep := strings.Repeat("[", MaxDepth) + strings.Repeat("]", MaxDepth)
	if _, err := DecodeText(deep); err != nil {
		t.Errorf("depth %d refused: %v", MaxDepth, err)
	}
}

// TestEqual: key order ignored, numbers by value, everything else exact.
func TestEqualValues(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		a, b string
		eq   bool
	}{
		{`{"a":1,"b":[1,2]}`, `{"b":[1,2],"a":1}`, true},
		{`1`, `1.0`, true},
		{`1`, `1e0`, true},
		{`100`, `1e2`, true},
		{`0.001`, `1E-3`, true},
		{`-0`, `0`, true},
		{`0.0`, `-0e5`, true},
		{`1`, `-1`, false},
		{`12`, `1.2e1`, true},
		{`1e400`, `10e399`, true},
		{`1e400`, `1e401`, false},
		{`123456789012345678901234567890`, `123456789012345678901234567891`, false},
		{`"a"`, `"a "`, false},
		{`[1,2]`, `[2,1]`, false},
		{`{"a":1}`, `{"a":1,"b":2}`, false},
		{`{"a":1,"b":2}`, `{"a":1,"c":2}`, false},
		{`null`, `false`, false},
		{`true`, `true`, true},
		{`{}`, `[]`, false},
	} {
		a, b := mustDecode(t, tc.a), mustDecode(t, tc.b)
		if EqualValues(a, b) != tc.eq || EqualValues(b, a) != tc.eq {
			t.Errorf("EqualValues(%s, %s) != %v", tc.a, tc.b, tc.eq)
		}
	}
}

// TestValueEditing: Set and Without copy, never writing into a shared value.
func TestValueEditing(t *testing.T) {
	t.Parallel()
	v := mustDecode(t, `{"a":1,"b":2}`)
	set := v.Set("a", String("x")).Set("c", Bool(true))
	without := v.Without("a")
	if string(v.Encode()) != `{"a":1,"b":2}` {
		t.Fatalf("original changed: %s", v.Encode())
	}
	if string(set.Encode()) != `{"a":"x","b":2,"c":true}` || string(without.Encode()) != `{"b":2}` {
		t.Fatalf("set %s, without %s", set.Encode(), without.Encode())
	}
	if !mustDecode(t, `{"a":{"b":1,"b":2}}`).HasDuplicateKeys() || mustDecode(t, `[{"a":1},{"a":1}]`).HasDuplicateKeys() {
		t.Fatal("HasDuplicateKeys")
	}
	many := `{` + strings.Repeat(`"k":1,`, 30) + `"z":1}`
	if !mustDecode(t, many).HasDuplicateKeys() {
		t.Fatal("HasDuplicateKeys on a large object")
	}
	if _, ok := Number("01"); ok {
		t.Fatal("Number accepted 01")
	}
	if n, ok := Number("-1.5e3"); !ok || string(n.Encode()) != "-1.5e3" {
		t.Fatal("Number refused -1.5e3")
	}
	if string(Array().Encode()) != "[]" || string(Object().Encode()) != "{}" || string(Null().Encode()) != "null" {
		t.Fatal("empty constructors")
	}
	if b, _ := json.Marshal(struct{ V Value }{mustDecode(t, `{"x":[1]}`)}); string(b) != `{"V":{"x":[1]}}` {
		t.Fatalf("MarshalJSON: %s", b)
	}
}

func mustDecode(t *testing.T, s string) Value {
	t.Helper()
	v, err := DecodeText(s)
	if err != nil {
		t.Fatalf("%s: %v", s, err)
	}
	return v
}
