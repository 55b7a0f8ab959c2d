package registry

import (
	"fmt"
	"strings"
)

const (
	// MinTemplateLines: fewer lines cannot say what a tool does, when to reach for it and
	// what comes back, which is what a model needs to call it well.
	MinTemplateLines = 4
	// MaxTemplateLines: every declared description rides at the front of each cached
	// prompt prefix, so each line is paid on every request; 25 bounds that cost per tool.
	MaxTemplateLines = 25
)

// checkTemplate applies the rules of a description template: the text rules of checkText
// plus a line count from MinTemplateLines to MaxTemplateLines.
func checkTemplate(text string) error {
	if err := checkText(text); err != nil {
		return err
	}
	if n := strings.Count(text, "\n") + 1; n < MinTemplateLines || n > MaxTemplateLines {
		return fmt.Errorf("has %d lines, want %d to %d", n, MinTemplateLines, MaxTemplateLines)
	}
	return nil
}

// checkText applies the rules every kernel text obeys, templates and property descriptions
// alike. Printable ASCII plus line feed keeps the catalog free of escapes other than \" \\ \n,
// so its bytes are the same from any correct JSON encoder; no stray white space, so the
// texts survive editors and copy-paste unchanged; and every macro names a live tool, with no
// brace pair outside one, so a render can never leave braces or a dangling name behind.
func checkText(text string) error {
	if text == "" {
		return fmt.Errorf("is empty")
	}
	for i := 0; i < len(text); i++ {
		if c := text[i]; c != '\n' && (c < 0x20 || c > 0x7e) {
			return fmt.Errorf("byte %d is %q, outside printable ASCII and line feed", i, c)
		}
	}
	if strings.TrimSpace(text) != text {
		return fmt.Errorf("has leading or trailing white space")
	}
	for i, line := range strings.Split(text, "\n") {
		if strings.TrimRight(line, " ") != line {
			return fmt.Errorf("line %d ends in a space", i+1)
		}
	}
	for _, w := range MacroWords(text) {
		if !isLiveWire(w) {
			return fmt.Errorf("macro {{%s}} names no kernel tool", w)
		}
	}
	if rest := macro.ReplaceAllString(text, ""); strings.Contains(rest, "{{") || strings.Contains(rest, "}}") {
		return fmt.Errorf("has {{ or }} outside a macro")
	}
	return nil
}
