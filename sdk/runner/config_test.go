package runner

import (
	"strings"
	"testing"
)

func TestParseConfig(t *testing.T) {
	t.Parallel()
	profile := `"effect_profile":{"kind":"read_only","destructive":false,"effect_scope":"closed","idempotency":"intrinsic","reconciliation":"none"}`
	good := `{"environment":{"os":"x"},"tools":[{"name":"up",` + profile + `,"command":["uptime"],"env":{"A":"b"}}]}`
	c, err := ParseConfig([]byte(good))
	if err != nil || len(c.Tools) != 1 || c.Tools[0].Name != "up" || c.Tools[0].Command[0] != "uptime" || c.Tools[0].Env["A"] != "b" {
		t.Fatalf("%+v %v", c, err)
	}
	r := c.Runner(nil)
	if len(r.Tools) != 1 || r.Tools[0].Announce.Name != "up" || r.Tools[0].Handle == nil || string(r.Environment) != `{"os":"x"}` {
		t.Fatalf("runner %+v", r)
	}
	for body, want := range map[string]string{
		`{"tools":[{"name":"up",` + profile + `}]}`:                            "has no command",
		`{"tools":[{"name":"delegate_task",` + profile + `,"command":["x"]}]}`: "reserved_namespace",
		`{"tools":[{"name":"up","command":["x"]}]}`:                            "invalid_announcement",
		`{"tools":[],"extra":1}`:                                               "unknown field",
		`{"tools":`:                                                            "runner config",
	} {
		if _, err := ParseConfig([]byte(body)); err == nil || !strings.Contains(err.Error(), want) {
			t.Fatalf("%s: %v, want %q", body, err, want)
		}
	}
}

func TestStorableText(t *testing.T) {
	t.Parallel()
	if got := storableText("a\x00b\xffc"); got != "ab\uFFFDc" {
		t.Fatalf("%q", got)
	}
}

func TestLimitedBuffer(t *testing.T) {
	t.Parallel()
	var sb strings.Builder
	l := limitedBuffer{b: &sb, n: 4}
	for _, s := range []string{"ab", "cde", "f"} {
		if n, err := l.Write([]byte(s)); n != len(s) || err != nil {
			t.Fatal(n, err)
		}
	}
	if sb.String() != "abcd" {
		t.Fatalf("%q", sb.String())
	}
}
