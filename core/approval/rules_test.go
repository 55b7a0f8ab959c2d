package approval

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestParseRefusals(t *testing.T) {
	t.Parallel()
	rule := `{"tool":"x","verdict":"allow"}`
	many := "[" + strings.TrimSuffix(strings.Repeat(rule+",", MaxRules+1), ",") + "]"
	long := `[{"tool":"x","verdict":"deny","reason":"` + strings.Repeat("r", MaxRulesBytes) + `"}]`
	cases := []struct{ raw, suffix string }{
		{`{}`, ""},
		{`"allow"`, ""},
		{`null`, ""},
		{`[1,`, ""},
		{many, ""},
		{long, ""},
		{`[1]`, "[0]"},
		{`[` + rule + `,{"tool":"t","verdict":"allow","tool":"u"}]`, "[1]"},
		{`[{"tool":"t","verdict":"allow","zeta":1,"alpha":2}]`, "[0].alpha"},
		{`[{"verdict":"allow"}]`, "[0].tool"},
		{`[{"tool":"","verdict":"allow"}]`, "[0].tool"},
		{`[{"tool":3,"verdict":"allow"}]`, "[0].tool"},
		{`[{"tool":"t"}]`, "[0].verdict"},
		{`[{"tool":"t","verdict":"maybe"}]`, "[0].verdict"},
		{`[{"tool":"t","verdict":"allow","path":1}]`, "[0].path"},
		{`[{"tool":"t","verdict":"allow","path":"a","match":false}]`, "[0].match"},
		{`[{"tool":"t","verdict":"deny","reason":null}]`, "[0].reason"},
		{`[{"tool":"t","verdict":"allow","origin":"user"}]`, "[0].origin"},
		{`[{"tool":"t","verdict":"allow","origin":1}]`, "[0].origin"},
		{`[{"tool":"t","verdict":"allow","match":"x*"}]`, "[0].match"},
		{`[` + rule + `,` + rule + `,{"tool":"t","verdict":"allow","extra":1}]`, "[2].extra"},
	}
	for _, c := range cases {
		rules, p := Parse([]byte(c.raw))
		if p == nil {
			t.Errorf("%.60s: accepted as %v", c.raw, rules)
			continue
		}
		if p.Suffix != c.suffix || p.Detail == "" || strings.HasSuffix(p.Detail, ".") {
			t.Errorf("%.60s: problem %+v, want suffix %q", c.raw, p, c.suffix)
		}
	}
}

func TestParseLawful(t *testing.T) {
	t.Parallel()
	raw := `[{"tool":"memory_*","verdict":"allow"},
		{"origin":"author","reason":"no","match":"rm *","path":"args.0","verdict":"deny","tool":"shell|exec"},
		{"tool":"x","verdict":"ask","path":"a"}]`
	rules, p := Parse([]byte(raw))
	if p != nil {
		t.Fatalf("refused: %+v", p)
	}
	got, _ := json.Marshal(rules)
	want := `[{"tool":"memory_*","verdict":"allow"},{"tool":"shell|exec","verdict":"deny","path":"args.0","match":"rm *","reason":"no","origin":"author"},{"tool":"x","verdict":"ask","path":"a"}]`
	if string(got) != want {
		t.Fatalf("rules %s\nwant %s", got, want)
	}
	if rules, p := Parse([]byte(`[]`)); p != nil || rules == nil || len(rules) != 0 {
		t.Fatalf("empty list: %v %+v", rules, p)
	}
	// Exactly at the bounds is lawful.
	at := "[" + strings.TrimSuffix(strings.Repeat(`{"tool":"x","verdict":"allow"},`, MaxRules), ",") + "]"
	if rules, p := Parse([]byte(at)); p != nil || len(rules) != MaxRules {
		t.Fatalf("%d rules: %+v", MaxRules, p)
	}
	// The byte bound is measured on canonical JSON: keys sorted, whitespace gone.
	frame := len(`[{"reason":"","tool":"x","verdict":"deny"}]`)
	sized := func(n int) []byte {
		return []byte(`[ { "verdict" : "deny", "tool" : "x", "reason" : "` + strings.Repeat("r", n) + `" } ]`)
	}
	if _, p := Parse(sized(MaxRulesBytes - frame)); p != nil {
		t.Fatalf("a list of exactly %d canonical bytes: %+v", MaxRulesBytes, p)
	}
	if _, p := Parse(sized(MaxRulesBytes - frame + 1)); p == nil || p.Suffix != "" {
		t.Fatalf("a list one byte over: %+v", p)
	}
}
