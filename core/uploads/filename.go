package uploads

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// CleanFilename is the name an upload keeps of the filename its part declared
// (docs/api.md#the-executor-plane docs/api.md#uploads): the base name (after the last '/' or '\',
// since clients on either kind of system send paths), with control characters and bidirectional
// controls (U+061C, U+200E, U+200F, U+202A–U+202E, U+2066–U+2069, which can make "exe.txt" display
// as "txt.exe") removed, cut to MaxFilenameBytes on a character boundary, and DefaultFilename when
// nothing is left.
//
// Decisions the documented rules leave open: bytes that are not UTF-8 are dropped (the store
// keeps text); "." and ".." name directories, not files, and become DefaultFilename; other
// characters, spaces and the joiners of emoji (U+200D) included, are kept as sent.
func CleanFilename(raw string) string {
	s := strings.ToValidUTF8(raw, "")
	if i := strings.LastIndexAny(s, `/\`); i >= 0 {
		s = s[i+1:]
	}
	s = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) || unicode.Is(unicode.Bidi_Control, r) {
			return -1
		}
		return r
	}, s)
	if len(s) > MaxFilenameBytes {
		cut := MaxFilenameBytes
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		s = s[:cut]
	}
	if s == "" || s == "." || s == ".." {
		return DefaultFilename
	}
	return s
}
