package jsonwire

import (
	"encoding/json"
	"errors"
	"reflect"
	"testing"
)

func TestCanonicalValue(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, in, want string
	}{
		{"whitespace goes", " { \"a\" : [ 1 , 2 ] ,\n\t\"b\" : null } ", `{"a":[1,2],"b":null}`},
		{"keys sort by byte order", `{"b":1,"a":2,"B":3,"é":4,"z":5,"":6}`, `{"":6,"B":3,"a":2,"b":1,"z":5,"é":4}`},
		{"nested objects sort too", `{"z":{"y":1,"x":[{"b":1,"a":2}]}}`, `{"z":{"x":[{"a":2,"b":1}],"y":1}}`},
		{"html is not escaped", `"<a href=\"x\">&amp;</a>"`, `"<a href=\"x\">&amp;</a>"`},
		{"unicode escapes are decoded", `"\u00e9\u4e2d\ud83d\ude00"`, `"é中😀"`},
		{"line and paragraph separators stay raw", `"\u2028\u2029"`, "\"\u2028\u2029\""},
		{"short escapes", `"\b\f\n\r\t\"\\\/"`, `"\b\f\n\r\t\"\\/"`},
		{"other controls are lower-case hex", `"\u0000\u001F\u000b"`, `"\u0000\u001f\u000b"`},
		{"delete stays raw", `"\u007f"`, "\"\x7f\""},
		{"lone surrogate reads as U+FFFD", `"\ud800x"`, "\"\ufffdx\""},
		{"repeated key keeps the last value", `{"a":1,"a":2}`, `{"a":2}`},
		{"booleans and null", `[true,false,null]`, `[true,false,null]`},
		{"empty containers", `[{},[]]`, `[{},[]]`},
		{"integer-valued float", `1.0`, `1`},
		{"exponent to plain", `1e2`, `100`},
		{"negative zero", `-0.0`, `0`},
		{"small plain", `0.000001`, `0.000001`},
		{"smaller goes exponent", `0.0000001`, `1e-7`},
		{"large plain", `100000000000000000000`, `100000000000000000000`},
		{"1e21 goes exponent", `1e21`, `1e+21`},
		{"shortest digits", `0.1000000000000000055511151231257827`, `0.1`},
		{"beyond 2^53 rounds", `12345678901234567890`, `12345678901234567000`},
		{"smallest subnormal", `5e-324`, `5e-324`},
		{"negative exponent form", `-1.5E-10`, `-1.5e-10`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			got, err := CanonicalValue([]byte(c.in))
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != c.want {
				t.Errorf("CanonicalValue(%s) = %s, want %s", c.in, got, c.want)
			}
		})
	}
}

func TestCanonicalValueInvalidUTF8(t *testing.T) {
	t.Parallel()
	got, err := CanonicalValue([]byte("\"a\xffb\""))
	if err != nil {
		t.Fatal(err)
	}
	if want := "\"a\ufffdb\""; string(got) != want {
		t.Errorf("got %q, want %q", got, want)
	}
	// AppendString on its own also replaces invalid bytes.
	if got := string(AppendString(nil, "x\xc3")); got != "\"x\ufffd\"" {
		t.Errorf("AppendString = %q", got)
	}
}

func TestCanonicalValueRefuses(t *testing.T) {
	t.Parallel()
	for _, in := range []string{``, `   `, `{`, `{"a":}`, `[1,]`, `nul`, `1 2`, `{} x`, `"abc`} {
		if got, err := CanonicalValue([]byte(in)); err == nil {
			t.Errorf("CanonicalValue(%q) = %s, want an error", in, got)
		}
	}
	_, err := CanonicalValue([]byte(`1 2`))
	if !errors.Is(err, ErrSyntax) {
		t.Errorf("trailing value: got %v", err)
	}
}

func TestCanonicalValueRefusesHugeNumbers(t *testing.T) {
	t.Parallel()
	in := []byte(`{"b":[1,{"c":-1e400}],"a":1}`)
	if _, err := CanonicalValue(in); !errors.Is(err, ErrHugeNumber) {
		t.Fatalf("got %v, want ErrHugeNumber", err)
	}
	// Canonical, which measures what the store accepts, keeps the literal and notes it.
	out, facts, err := Canonical(in)
	if err != nil || !facts.HugeNumber || string(out) != `{"a":1,"b":[1,{"c":-1e400}]}` {
		t.Fatalf("Canonical = %s, %+v, %v", out, facts, err)
	}
}

func TestEqual(t *testing.T) {
	t.Parallel()
	cases := []struct {
		a, b string
		want bool
	}{
		{`{"a":1,"b":[1,2]}`, ` {"b": [1, 2], "a": 1.0}`, true},
		{`{"a":"\u003c"}`, `{"a":"<"}`, true},
		{`{"a":1}`, `{"a":2}`, false},
		{`[1,2]`, `[2,1]`, false},
	}
	for _, c := range cases {
		got, err := Equal([]byte(c.a), []byte(c.b))
		if err != nil {
			t.Fatal(err)
		}
		if got != c.want {
			t.Errorf("Equal(%s, %s) = %v", c.a, c.b, got)
		}
	}
	if _, err := Equal([]byte(`{`), []byte(`{}`)); err == nil {
		t.Error("invalid left side compared")
	}
	if _, err := Equal([]byte(`{}`), []byte(`{`)); err == nil {
		t.Error("invalid right side compared")
	}
}

// FuzzCanonicalValue checks that canonical output is valid JSON holding the same value, and that
// canonicalizing it again changes nothing.
func FuzzCanonicalValue(f *testing.F) {
	for _, s := range []string{`{"b":1,"a":[true,null,"x"]}`, `"\u2028<>&"`, `1e-7`, `-0`, `{"a":{"a":{}}}`, `[1.5e300,2]`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		out, err := CanonicalValue(data)
		if err != nil {
			return
		}
		if !json.Valid(out) {
			t.Fatalf("invalid output %q from %q", out, data)
		}
		again, err := CanonicalValue(out)
		if err != nil || string(again) != string(out) {
			t.Fatalf("not idempotent: %q then %q (%v)", out, again, err)
		}
		var a, b any
		if err := json.Unmarshal(data, &a); err != nil {
			t.Fatalf("canonicalized what encoding/json refuses: %v", err)
		}
		if err := json.Unmarshal(out, &b); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(a, b) {
			t.Fatalf("value changed: %#v became %#v", a, b)
		}
	})
}
