package announce

import (
	"strings"
	"unicode/utf8"
)

// Glob matches a whole value against an anchored glob: "*" any run of characters (none
// included), "?" exactly one character, everything else itself. It is the one glob of the
// project: the approval rules, the MCP bridge's allow and deny lists and the import selectors
// (ValidImportSelector) all match with it.
func Glob(pattern, value string) bool {
	p, v := []rune(pattern), []rune(value)
	pi, vi := 0, 0
	star, mark := -1, 0
	for vi < len(v) {
		switch {
		case pi < len(p) && (p[pi] == '?' || p[pi] == v[vi]) && p[pi] != '*':
			pi++
			vi++
		case pi < len(p) && p[pi] == '*':
			star, mark = pi, vi
			pi++
		case star >= 0:
			pi = star + 1
			mark++
			vi = mark
		default:
			return false
		}
	}
	for pi < len(p) && p[pi] == '*' {
		pi++
	}
	return pi == len(p)
}

// IsImportPattern reports whether an import selector is a pattern rather than an exact name:
// it ends in "*".
func IsImportPattern(selector string) bool { return strings.HasSuffix(selector, "*") }

// ValidImportSelector is the import selector grammar (docs/agent-tools.md#imports): an exact
// name of 1 to MaxToolNameLength characters without NUL, "*" or "?", or such a name's prefix
// (possibly empty) followed by one trailing "*", so that "fs_*" takes every tool whose name
// starts with fs_ and "*" takes all. A "?" or a "*" anywhere else is refused: a selector reads
// as a prefix, which an author can predict, and it matches through Glob like every other
// pattern of the project.
func ValidImportSelector(selector string) bool {
	body := strings.TrimSuffix(selector, "*")
	if body == "" {
		return selector == "*"
	}
	return utf8.RuneCountInString(body) <= MaxToolNameLength && !strings.ContainsAny(body, "*?\x00")
}

// MatchImport is Glob for a selector ValidImportSelector accepts, without Glob's work: an exact
// name matches itself, and a name's prefix with its trailing "*" matches every name it starts.
// An acceptance may match thousands of announced names against each selector.
func MatchImport(selector, name string) bool {
	if prefix, ok := strings.CutSuffix(selector, "*"); ok {
		return strings.HasPrefix(name, prefix)
	}
	return selector == name
}
