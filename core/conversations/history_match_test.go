package conversations_test

import (
	"strings"
	"testing"

	"github.com/nexuskernel/nexus/core/conversations"
)

// TestMatchField pins the matching rule and the excerpt window of
// docs/agent-tools.md#delegation-and-conversations: every lower-cased term inside one field, case
// folded rune by rune, and a 500-character window at max(0, min(p-100, n-500)) in code points, p
// the earliest occurrence of any term.
func TestMatchField(t *testing.T) {
	t.Parallel()
	long := func(at int, term string, n int) string {
		return strings.Repeat("ß", at) + term + strings.Repeat("ü", n-at-len([]rune(term)))
	}
	cases := []struct {
		name      string
		terms     []string
		text      string
		ok        bool
		start     int
		truncated bool
	}{
		{"all terms in the field", []string{"ship", "friday"}, "We SHIP on Friday", true, 0, false},
		{"one term missing", []string{"ship", "monday"}, "We SHIP on Friday", false, 0, false},
		{"rune-wise folding", []string{"émile"}, "ÉMILE wrote", true, 0, false},
		{"no terms match nothing", nil, "anything", false, 0, false},
		{"500 characters are whole", []string{"x"}, long(499, "x", 500), true, 0, false},
		{"near the start", []string{"needle"}, long(40, "needle", 501), true, 0, true},
		{"in the middle", []string{"needle"}, long(700, "needle", 2000), true, 600, true},
		{"near the end", []string{"needle"}, long(1990, "needle", 2000), true, 1500, true},
		{"earliest of any term", []string{"pin", "needle"}, strings.Repeat("a", 300) + "needle" + strings.Repeat("b", 400) + "pin" + strings.Repeat("c", 300), true, 200, true},
	}
	for _, c := range cases {
		ex, tr, ok := conversations.MatchField(c.terms, c.text)
		if ok != c.ok {
			t.Errorf("%s: ok %v", c.name, ok)
			continue
		}
		if !ok {
			continue
		}
		runes := []rune(c.text)
		want := c.text
		if len(runes) > conversations.MaxExcerptChars {
			want = string(runes[c.start : c.start+conversations.MaxExcerptChars])
		}
		if ex != want || tr != c.truncated {
			t.Errorf("%s: excerpt starts at %d (%d runes), truncated %v", c.name, strings.Index(c.text, ex), len([]rune(ex)), tr)
		}
	}
}
