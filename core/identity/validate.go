package identity

import (
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/nexuskernel/nexus/core/store"
	"github.com/nexuskernel/nexus/sdk/jsonwire"
)

// Limits of docs/api.md#identity and of token labels.
const (
	// maxHandleChars is the handle grammar's length: one leading character and up to 62 more
	// ([a-z0-9][a-z0-9_-]{0,62}), short enough for a path segment and a table column.
	maxHandleChars = 63
	// maxDisplayNameChars bounds display names and workspace names (docs/api.md#identity): a line a
	// table or a chat header can show.
	maxDisplayNameChars = 128
	// maxTokenLabelChars bounds a token's label, the same one-line rule as a display name: it
	// names the token in a listing, nothing more.
	maxTokenLabelChars = 128
)

// ValidHandle reports whether s matches the handle grammar [a-z0-9][a-z0-9_-]{0,62} and does not
// have the form of a UUID (docs/api.md#identity), so that a slot accepting either is never
// ambiguous.
func ValidHandle(s string) bool {
	if len(s) == 0 || len(s) > maxHandleChars {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c >= '0' && c <= '9':
		case (c == '_' || c == '-') && i > 0:
		default:
			return false
		}
	}
	return !IsUUID(s)
}

// ValidDisplayName reports whether s is 1..128 characters with no control character and no
// bidirectional control (docs/api.md, "Names that cannot spoof").
func ValidDisplayName(s string) bool { return validLine(s, 1, maxDisplayNameChars) }

// validLine reports whether s is valid UTF-8 of min..max characters without control characters
// or bidirectional controls (jsonwire.IsBidiControl), which could make one name display as another.
func validLine(s string, min, max int) bool {
	if !utf8.ValidString(s) {
		return false
	}
	n := utf8.RuneCountInString(s)
	if n < min || n > max {
		return false
	}
	for _, r := range s {
		if unicode.IsControl(r) || jsonwire.IsBidiControl(r) {
			return false
		}
	}
	return true
}

// IsUUID reports whether s has the textual form of a UUID in either case: a public id
// (store.IsPublicID) once lowered. The identity doors read ids case-insensitively
// (docs/api.md#conventions); canonicalID gives the stored form.
func IsUUID(s string) bool { return store.IsPublicID(strings.ToLower(s)) }

// canonicalID returns a UUID-form string in the lowercase form public ids are stored in, and
// false for anything else. Both dialects then compare it the same way (PostgreSQL's uuid type
// ignores case; SQLite's text does not).
func canonicalID(s string) (string, bool) {
	if !IsUUID(s) {
		return "", false
	}
	return strings.ToLower(s), true
}
