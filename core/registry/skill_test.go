package registry

import (
	"strings"
	"testing"
)

func TestSkillTextsQuoteTheSkillsBlockTitle(t *testing.T) {
	t.Parallel()
	e, ok := New().Resolve("skill")
	if !ok {
		t.Fatal("no skill entry")
	}
	quote := `"` + SkillsBlockTitle + `"`
	if !strings.Contains(e.Template, quote) {
		t.Errorf("skill template does not quote %s", quote)
	}
	if !strings.Contains(propertyDescriptionTexts(t, e.Schema)["name"], quote) {
		t.Errorf("skill name description does not quote %s", quote)
	}
}
