package memory

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/nexuskernel/nexus/sdk/jsonwire"
)

// ValidName checks a document name against docs/agent-tools.md#memory-and-skills: 1 to MaxNameBytes
// bytes of UTF-8, segments separated by "/" with none empty and none "." or "..", and no
// U+0000–U+001F, U+007F, "\" or bidirectional control (U+061C, U+200E, U+200F, U+202A–U+202E,
// U+2066–U+2069: a name holding one can display as another name, so no provider may keep one).
// Anything else is allowed, spaces, non-ASCII letters and the joiners of emoji (U+200D) included. A
// bad name is ErrNameInvalid.
//
// Names reach the Engine as JSON strings, so they are always valid UTF-8; a store refuses
// anything else too, because it could not return such a name byte for byte through JSON.
func ValidName(name string) error {
	if reason := nameProblem(name); reason != "" {
		return fmt.Errorf("%w: %s", ErrNameInvalid, reason)
	}
	return nil
}

func nameProblem(name string) string {
	switch {
	case name == "":
		return "empty name"
	case len(name) > MaxNameBytes:
		return fmt.Sprintf("name of %d bytes, over %d", len(name), MaxNameBytes)
	case !utf8.ValidString(name):
		return "name is not UTF-8"
	}
	for i := 0; i < len(name); i++ {
		if c := name[i]; c < 0x20 || c == 0x7f || c == '\\' {
			return "control character or backslash in name"
		}
	}
	if strings.IndexFunc(name, IsBidiControl) >= 0 {
		return "bidirectional control character in name"
	}
	for seg := range strings.SplitSeq(name, "/") {
		switch seg {
		case "":
			return "empty segment in name"
		case ".", "..":
			return "dot segment in name"
		}
	}
	return ""
}

// IsBidiControl reports whether r is a bidirectional formatting control (Unicode's Bidi_Control
// property): the characters that reorder the text around them on screen.
func IsBidiControl(r rune) bool { return jsonwire.IsBidiControl(r) }

// IsReservedName reports whether a document name lies under the skills folder
// (docs/agent-tools.md#memory-and-skills): the name is "skills" or begins with "skills/". Models
// never write, edit or delete such names.
func IsReservedName(name string) bool {
	return name == SkillsFolder || strings.HasPrefix(name, SkillsFolder+"/")
}
