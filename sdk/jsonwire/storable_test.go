package jsonwire

import "testing"

func TestUnstorablePath(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ in, want string }{
		{`{"a":"x","b":[1,2]}`, ""},
		{`{"a":"\ud83d\ude00"}`, ""},
		{`{"a":"\ufffd"}`, ""},
		{`{"a":"\ud800x"}`, "$.a"},
		{`{"a":"ok","b":[1,"\u0000"]}`, "$.b[1]"},
		{`{"a":{"c":1e400}}`, "$.a.c"},
		{`[1,-1e999]`, "$[1]"},
		{`{"a\u0000":1}`, "$.a\x00"},
		{"{\"a\":\"\xff\"}", "$.a"},
		{`1e400`, "$"},
		{`{"a":1e308}`, ""},
		{`{"a":`, ""},
	} {
		if got := UnstorablePath([]byte(c.in)); got != c.want {
			t.Errorf("UnstorablePath(%s) = %q, want %q", c.in, got, c.want)
		}
	}
}

func TestScanNotesHugeNumbers(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]bool{`1e400`: true, `[1.5e300]`: false, `-1E+309`: true, `12345678901234567890`: false} {
		f, err := Scan([]byte(in))
		if err != nil || f.HugeNumber != want {
			t.Errorf("Scan(%s) = %+v, %v; want HugeNumber %v", in, f, err, want)
		}
	}
}
