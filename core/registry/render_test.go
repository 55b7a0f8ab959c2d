package registry

import (
	"bytes"
	"encoding/json"
	"io"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// marker spells a wire name in bytes no kernel text can contain (they are printable ASCII),
// so every spelled position can be found again.
func marker(w string) string { return "\x01" + w + "\x02" }

func unmark(s string) string {
	for {
		i := strings.IndexByte(s, '\x01')
		if i < 0 {
			return s
		}
		j := strings.IndexByte(s[i:], '\x02') + i
		s = s[:i] + "{{" + s[i+1:j] + "}}" + s[j+1:]
	}
}

func TestRender(t *testing.T) {
	t.Parallel()
	spell := func(w string) string { return "<" + strings.ToUpper(w) + ">" }
	tests := []struct{ in, want string }{
		{"", ""},
		{"no macros", "no macros"},
		{"{{wait}}", "<WAIT>"},
		{"call {{wait}} or {{ask}}.", "call <WAIT> or <ASK>."},
		{"{{wait}}{{wait}}", "<WAIT><WAIT>"},
		{"{{{wait}}}", "{<WAIT>}"},
		{"{{ wait }}", "{{ wait }}"},
		{"{{Wait}}", "{{Wait}}"},
		{"{{wait", "{{wait"},
		{"{{nexus.graph.wait}}", "{{nexus.graph.wait}}"},
		// A word that names no kernel tool is ordinary text, left as written.
		{"{{browse}} then {{skill}}", "{{browse}} then <SKILL>"},
		{"{{session_read}}x", "<SESSION_READ>x"},
	}
	for _, tt := range tests {
		if got := Render(tt.in, spell); got != tt.want {
			t.Errorf("Render(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
	if got := Render("{{wait}} and {{spawn}}", PlainSpelling); got != "wait and spawn" {
		t.Errorf("plain render = %q", got)
	}
}

func TestMacroWords(t *testing.T) {
	t.Parallel()
	got := MacroWords("{{wait}}, {{browse}}, {{ ask }}, {{wait}}, {{Spawn}}, {{x1_y}}")
	if diff := cmp.Diff([]string{"wait", "browse", "wait", "x1_y"}, got); diff != "" {
		t.Errorf("MacroWords (-want +got):\n%s", diff)
	}
	if got := MacroWords("plain"); len(got) != 0 {
		t.Errorf("MacroWords(plain) = %q", got)
	}
}

func TestRenderSchema(t *testing.T) {
	t.Parallel()
	spell := func(string) string { return "Agent" }
	tests := []struct {
		name, in, want string
	}{
		{
			name: "top-level property description, layout kept",
			in: `{ "type": "object",
  "properties": { "a": {"description": "see {{delegate_task}}", "type": "string"},
                  "b": {"type":"string"} } }`,
			want: `{ "type": "object",
  "properties": { "a": {"description": "see Agent", "type": "string"},
                  "b": {"type":"string"} } }`,
		},
		{
			name: "nowhere else",
			in:   `{"description":"{{wait}}","properties":{"a":{"items":{"description":"{{wait}}"},"enum":["{{wait}}"],"default":"{{wait}}","description":"{{wait}}"}},"x":{"properties":{"b":{"description":"{{wait}}"}}}}`,
			want: `{"description":"{{wait}}","properties":{"a":{"items":{"description":"{{wait}}"},"enum":["{{wait}}"],"default":"{{wait}}","description":"Agent"}},"x":{"properties":{"b":{"description":"{{wait}}"}}}}`,
		},
		{
			name: "unchanged description keeps its escapes",
			in:   `{"properties":{"a":{"description":"\u003cx\u003e {{browse}}"}}}`,
			want: `{"properties":{"a":{"description":"\u003cx\u003e {{browse}}"}}}`,
		},
		{
			name: "rendered description written without HTML escapes",
			in:   `{"properties":{"a":{"description":"\u003cx\u003e \"{{ask}}\""}}}`,
			want: `{"properties":{"a":{"description":"<x> \"Agent\""}}}`,
		},
		{
			name: "shapes with nothing to render",
			in:   `{"properties":{"a":true,"b":{"description":7},"c":{}},"required":[]}`,
			want: `{"properties":{"a":true,"b":{"description":7},"c":{}},"required":[]}`,
		},
		{
			name: "properties not an object",
			in:   `{"properties":["{{wait}}"]}`,
			want: `{"properties":["{{wait}}"]}`,
		},
	}
	for _, tt := range tests {
		got, err := RenderSchema(json.RawMessage(tt.in), spell)
		if err != nil {
			t.Errorf("%s: %v", tt.name, err)
			continue
		}
		if diff := cmp.Diff(tt.want, string(got)); diff != "" {
			t.Errorf("%s (-want +got):\n%s", tt.name, diff)
		}
	}
	for _, bad := range []string{``, `{`, `[]`, `"x"`, `{"properties":{}} {}`} {
		if got, err := RenderSchema(json.RawMessage(bad), spell); err == nil {
			t.Errorf("RenderSchema(%q) = %s, want an error", bad, got)
		}
	}
}

// TestMacros checks the tool-name macros of the templates
// (docs/agent-tools.md#the-twenty-kernel-tools).
func TestMacros(t *testing.T) {
	t.Parallel()
	r := New()
	entries := r.Entries()
	for _, e := range entries {
		texts := map[string]string{"template": e.Template}
		for p, d := range propertyDescriptionTexts(t, e.Schema) {
			texts["property "+p] = d
		}
		for where, text := range texts {
			for _, w := range MacroWords(text) {
				if !isLiveWire(w) {
					t.Errorf("%s %s: {{%s}} names no live wire name", e.Wire, where, w)
				}
			}
			if rest := macro.ReplaceAllString(text, ""); strings.Contains(rest, "{{") || strings.Contains(rest, "}}") {
				t.Errorf("%s %s: {{ or }} outside a macro", e.Wire, where)
			}

			// Render purity: spelling every tool as a marker changes exactly the macro
			// positions, and each one is asked for by its own word.
			var asked []string
			marked := Render(text, func(w string) string { asked = append(asked, w); return marker(w) })
			if diff := cmp.Diff(MacroWords(text), asked); diff != "" {
				t.Errorf("%s %s: spell calls (-macros +asked):\n%s", e.Wire, where, diff)
			}
			if unmark(marked) != text {
				t.Errorf("%s %s: render changed bytes outside the macros", e.Wire, where)
			}
			if strings.Count(marked, "\x01") != len(MacroWords(text)) {
				t.Errorf("%s %s: %d markers for %d macros", e.Wire, where, strings.Count(marked, "\x01"), len(MacroWords(text)))
			}
		}
		if err := checkSchemaTexts(e.Schema); err != nil {
			t.Errorf("%s: schema: %v", e.Wire, err)
		}
	}

	// After the plain render no brace pair remains in any served definition string.
	for i, raw := range servedEntries(t, r.CatalogBody()) {
		def, _ := get(members(t, raw), "definition")
		dec := json.NewDecoder(bytes.NewReader(def))
		for {
			tok, err := dec.Token()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			if s, ok := tok.(string); ok && (strings.Contains(s, "{{") || strings.Contains(s, "}}")) {
				t.Errorf("%s: definition string %q keeps braces after the plain render", entries[i].Wire, s)
			}
		}
	}
}

func TestCheckSchemaTextsRefusesMacrosElsewhere(t *testing.T) {
	t.Parallel()
	for _, bad := range []string{
		`{"type":"object","description":"{{wait}}","properties":{}}`,
		`{"type":"object","properties":{"a":{"type":"array","items":{"type":"string","description":"{{wait}}"}}}}`,
		`{"type":"object","properties":{"a":{"type":"string","enum":["{{wait}}"],"description":"ok text"}}}`,
		`{"type":"object","properties":{"{{wait}}":{"type":"string","description":"ok text"}}}`,
		`{"type":"object","properties":{"a":{"type":"string","description":"see {{browse}}"}}}`,
		`{"type":"object","properties":{"a":{"type":"string","description":"trailing space "}}}`,
	} {
		if err := checkSchemaTexts([]byte(bad)); err == nil {
			t.Errorf("checkSchemaTexts(%s) passed", bad)
		}
	}
	ok := `{"type":"object","properties":{"a":{"type":"array","items":{"type":"string"},"description":"see {{wait}}"}}}`
	if err := checkSchemaTexts([]byte(ok)); err != nil {
		t.Errorf("checkSchemaTexts(%s) = %v", ok, err)
	}
}

func TestDefinitionUnderAnAlias(t *testing.T) {
	t.Parallel()
	r := New()
	spell := func(w string) string {
		if w == "delegate_task" {
			return "Agent"
		}
		return w
	}
	dt, _ := r.Resolve("delegate_task")
	def, err := Definition(dt, spell)
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Function struct {
			Name        string          `json:"name"`
			Description string          `json:"description"`
			Parameters  json.RawMessage `json:"parameters"`
		} `json:"function"`
	}
	if err := json.Unmarshal(def, &got); err != nil {
		t.Fatal(err)
	}
	if got.Function.Name != "Agent" {
		t.Errorf("name = %q, want the spelled name", got.Function.Name)
	}
	if !strings.Contains(got.Function.Description, "Put several Agent calls") || strings.Contains(got.Function.Description, "delegate_task") {
		t.Errorf("description not spelled with the alias:\n%s", got.Function.Description)
	}
	if !strings.Contains(propertyDescriptionTexts(t, got.Function.Parameters)["tools"], "except Agent, which") {
		t.Errorf("tools description not spelled with the alias: %s", got.Function.Parameters)
	}
}
