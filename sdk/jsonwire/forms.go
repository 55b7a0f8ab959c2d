package jsonwire

import "unicode"

// The two value forms every JSON document of the API writes the same way
// (docs/api.md#conventions). They live in the toolkit, the SDK's root, because the store, the
// doors, the memory engine and the providers all read or write them and the toolkit is the one
// package all of them may import.

// TimeLayout is the API's one timestamp form: RFC 3339 in UTC with milliseconds and Z, the
// precision of a stored time.
const TimeLayout = "2006-01-02T15:04:05.000Z"

// IsBidiControl reports whether r is a bidirectional formatting control (Unicode's Bidi_Control
// property: U+061C, U+200E, U+200F, U+202A–U+202E, U+2066–U+2069), a character that reorders the
// text around it on screen, so that a name holding one can display as another name
// (docs/api.md, "Names that cannot spoof"). U+200D, the joiner inside emoji, is not one.
func IsBidiControl(r rune) bool { return unicode.Is(unicode.Bidi_Control, r) }

// publicIDLength is the length of a UUID's 8-4-4-4-12 text.
const publicIDLength = 36

// IsPublicID reports whether s has the shape of a public id: a UUID of any version in lowercase,
// the only case any answer writes. Upper case is no public id; a door that reads ids in either
// case lowers them before asking.
func IsPublicID(s string) bool {
	if len(s) != publicIDLength {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch i {
		case 8, 13, 18, 23:
			if c != '-' {
				return false
			}
		default:
			if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
				return false
			}
		}
	}
	return true
}
