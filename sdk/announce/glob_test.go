package announce

import (
	"strings"
	"testing"
)

func TestGlob(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		p, v string
		want bool
	}{
		{"*", "", true}, {"search_*", "search_tickets", true}, {"search_*", "research_x", false},
		{"get_?", "get_a", true}, {"get_?", "get_ab", false}, {"a*b*c", "aXbYc", true}, {"a*b*c", "aXbY", false},
		{"a*b", "ac", false}, {"??", "éa", true}, {"é?", "éa", true}, {"fs_read", "fs_read", true}, {"fs_read", "fs_reads", false},
	} {
		if got := Glob(c.p, c.v); got != c.want {
			t.Errorf("Glob(%q, %q) = %v, want %v", c.p, c.v, got, c.want)
		}
	}
}

func TestValidImportSelector(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		s    string
		want bool
	}{
		{"*", true}, {"fs_*", true}, {"fs_read_text_file", true}, {"a-b", true},
		{"", false}, {"**", false}, {"fs_*_x", false}, {"*fs", false}, {"fs_?", false}, {"a\x00", false},
		{strings.Repeat("a", MaxToolNameLength+1), false}, {strings.Repeat("a", MaxToolNameLength) + "*", true},
	} {
		if got := ValidImportSelector(c.s); got != c.want {
			t.Errorf("ValidImportSelector(%q) = %v, want %v", c.s, got, c.want)
		}
	}
	if !IsImportPattern("fs_*") || IsImportPattern("fs") {
		t.Error("IsImportPattern")
	}
}

// TestMatchImport: for every valid selector, MatchImport answers as Glob does.
func TestMatchImport(t *testing.T) {
	t.Parallel()
	names := []string{"", "fs", "fs_", "fs_read", "fs_read_text_file", "f", "search", "é", "éa", "a*b"}
	for _, sel := range []string{"*", "fs*", "fs_*", "fs_read", "fs_read*", "é*", "search", "x*"} {
		if !ValidImportSelector(sel) {
			t.Fatalf("%q is not a valid selector", sel)
		}
		for _, n := range names {
			if got, want := MatchImport(sel, n), Glob(sel, n); got != want {
				t.Errorf("MatchImport(%q, %q) = %v, Glob says %v", sel, n, got, want)
			}
		}
	}
}
