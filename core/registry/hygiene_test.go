package registry

import (
	"strings"
	"testing"
)

// TestTemplateHygiene checks every template and property description the registry holds.
func TestTemplateHygiene(t *testing.T) {
	t.Parallel()
	for _, e := range New().Entries() {
		if err := checkTemplate(e.Template); err != nil {
			t.Errorf("%s: template %v", e.Wire, err)
		}
		descs := propertyDescriptionTexts(t, e.Schema)
		for p, d := range descs {
			if err := checkText(d); err != nil {
				t.Errorf("%s: property %s description %v", e.Wire, p, err)
			}
		}
	}
}

func TestCheckTemplate(t *testing.T) {
	t.Parallel()
	four := "one\ntwo\nthree\nfour"
	tests := []struct {
		name, text string
		ok         bool
	}{
		{"four lines", four, true},
		{"twenty-five lines", strings.Repeat("line\n", MaxTemplateLines-1) + "end", true},
		{"blank line inside", "one\n\nthree\nfour", true},
		{"macros", "call {{wait}}\nor {{ask}}\nthen\n{{skill}}", true},
		{"indented line", "one\n    two\nthree\nfour", true},
		{"three lines", "one\ntwo\nthree", false},
		{"twenty-six lines", strings.Repeat("line\n", MaxTemplateLines) + "end", false},
		{"empty", "", false},
		{"tab", "one\ttwo\ntwo\nthree\nfour", false},
		{"carriage return", "one\r\ntwo\nthree\nfour", false},
		{"non-ASCII", "caf\u00e9\ntwo\nthree\nfour", false},
		{"control byte", "one\x00\ntwo\nthree\nfour", false},
		{"DEL", "one\x7f\ntwo\nthree\nfour", false},
		{"trailing space on a line", "one \ntwo\nthree\nfour", false},
		{"trailing space at the end", four + " ", false},
		{"trailing line feed", four + "\n", false},
		{"leading blank line", "\n" + four, false},
		{"leading space", " " + four, false},
		{"macro naming no tool", "see {{browse}}\ntwo\nthree\nfour", false},
		{"spaced macro", "see {{ wait }}\ntwo\nthree\nfour", false},
		{"stray open braces", "see {{\ntwo\nthree\nfour", false},
		{"stray close braces", "see }}\ntwo\nthree\nfour", false},
		{"capitalised macro", "see {{Wait}}\ntwo\nthree\nfour", false},
	}
	for _, tt := range tests {
		if err := checkTemplate(tt.text); (err == nil) != tt.ok {
			t.Errorf("%s: checkTemplate = %v, want ok %v", tt.name, err, tt.ok)
		}
	}
}
