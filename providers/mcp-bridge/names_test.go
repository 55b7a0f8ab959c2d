package mcpbridge

import (
	"regexp"
	"strings"
	"testing"
)

func TestEncodeExamples(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"read_text_file", "read_text_file"},
		{"get-tiny-image", "get-tiny-image"},
		{"github.create_issue", "github__2ecreate_issue"},
		{"files/read", "files__2fread"},
		{"weird name", "weird__20name"},
		{"résumé", "r__c3__a9sum__c3__a9"},
		{"server__tool", "server__tool"},
		{"a__2eb", "a__5f_2eb"},
		{"nexus.graph.delegate_task", "nexus__2egraph__2edelegate_task"},
	} {
		if got := Encode(c.in); got != c.want {
			t.Errorf("Encode(%q) = %q, want %q", c.in, got, c.want)
		}
		if got := Decode(c.want); got != c.in {
			t.Errorf("Decode(%q) = %q, want %q", c.want, got, c.in)
		}
	}
	if isKernelName(Encode("nexus.graph.delegate_task")) {
		t.Error("an encoded dotted name reads as a kernel name")
	}
}

func TestServedNameBudget(t *testing.T) {
	got := servedName("every_", "analytics.reports.generate_quarterly_revenue_breakdown_by_region_and_product_line", 64)
	if got != "every_analytics__2ereports__2egenerate_quarterly_reve-a240fe74d0" || len(got) != 64 {
		t.Errorf("hashed form %q (%d)", got, len(got))
	}
	exact := strings.Repeat("a", 61)
	if got := servedName("fx_", exact, 64); got != "fx_"+exact {
		t.Errorf("exactly at the budget: %q", got)
	}
	one := strings.Repeat("a", 62)
	if got := servedName("fx_", one, 64); len(got) != 64 || !regexp.MustCompile(`^fx_a{50}-[0-9a-f]{10}$`).MatchString(got) {
		t.Errorf("one past the budget: %q", got)
	}
	// A head that would end inside an escape stops before it.
	n := strings.Repeat("a", 48) + ".bbbbbbbbbbbbbbbbbbbb"
	got = servedName("fx_", n, 64)
	if !strings.HasPrefix(got, "fx_"+strings.Repeat("a", 48)+"-") || len(got) != 3+48+11 {
		t.Errorf("head inside an escape: %q", got)
	}
}

var grammar = regexp.MustCompile(`^[A-Za-z0-9_-]*$`)

func FuzzNameMapping(f *testing.F) {
	for _, s := range []string{"", "a", "a.b", "a__2eb", "__", "___2e", "résumé", "files/read", "\x00\xff", "_5f"} {
		f.Add(s, "x__2e")
	}
	f.Fuzz(func(t *testing.T, a, b string) {
		ea, eb := Encode(a), Encode(b)
		if !grammar.MatchString(ea) {
			t.Fatalf("Encode(%q) = %q leaves the grammar", a, ea)
		}
		if Decode(ea) != a {
			t.Fatalf("Decode(Encode(%q)) = %q", a, Decode(ea))
		}
		if a != b && ea == eb {
			t.Fatalf("%q and %q both encode to %q", a, b, ea)
		}
		for _, max := range []int{16, 64, 128} {
			s := servedName("p_", a, max)
			if len(s) > max || !grammar.MatchString(s) {
				t.Fatalf("servedName(%q, %d) = %q", a, max, s)
			}
		}
	})
}
