package announce

// Canonical JSON (runs.md §0.2) and the storability facts of a raw JSON value. The result
// envelope (core/envelope) keeps its own copy of this walker: the dependency rules let neither
// package import the other, and both must measure bounds the same way.

import (
	"bytes"
	"errors"
	"math"
	"sort"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
)

// jsonFacts are what a walk learns about a value besides its canonical bytes.
type jsonFacts struct {
	// duplicateKey: some object in the value repeats a key.
	duplicateKey bool
	// unstorable: some string (key or value) holds U+0000, an unpaired surrogate escape or
	// bytes that are not UTF-8, none of which PostgreSQL's text and jsonb can keep.
	unstorable bool
}

var errSyntax = errors.New("not one JSON value")

// canonicalJSON re-encodes one JSON value with object keys sorted by byte order, no
// insignificant whitespace, no HTML escaping, minimal string escapes and numbers in their
// shortest round-trip form. A repeated key keeps its last value, as decoders do. Numbers too
// large for a double keep their literal, so that measuring never fails on a value the store
// accepts.
func canonicalJSON(raw []byte) ([]byte, jsonFacts, error) {
	w := walker{src: raw}
	w.skipSpace()
	out, err := w.value(0)
	if err != nil {
		return nil, w.facts, err
	}
	w.skipSpace()
	if w.pos != len(w.src) {
		return nil, w.facts, errSyntax
	}
	return out, w.facts, nil
}

// maxJSONDepth matches encoding/json's nesting limit, so that any value the body decoder
// accepted can be walked, and nothing deeper can exhaust the stack.
const maxJSONDepth = 10000

type walker struct {
	src   []byte
	pos   int
	facts jsonFacts
}

func (w *walker) skipSpace() {
	for w.pos < len(w.src) {
		switch w.src[w.pos] {
		case ' ', '\t', '\n', '\r':
			w.pos++
		default:
			return
		}
	}
}

func (w *walker) value(depth int) ([]byte, error) {
	if w.pos >= len(w.src) {
		return nil, errSyntax
	}
	switch c := w.src[w.pos]; {
	case (c == '{' || c == '[') && depth >= maxJSONDepth:
		return nil, errSyntax
	case c == '{':
		return w.object(depth)
	case c == '[':
		return w.array(depth)
	case c == '"':
		s, err := w.str()
		if err != nil {
			return nil, err
		}
		return appendString(nil, s), nil
	case c == 't':
		return w.literal("true")
	case c == 'f':
		return w.literal("false")
	case c == 'n':
		return w.literal("null")
	default:
		return w.number()
	}
}

func (w *walker) literal(word string) ([]byte, error) {
	if !bytes.HasPrefix(w.src[w.pos:], []byte(word)) {
		return nil, errSyntax
	}
	w.pos += len(word)
	return []byte(word), nil
}

type canonMember struct {
	key   string
	value []byte
}

func (w *walker) object(depth int) ([]byte, error) {
	w.pos++ // {
	var members []canonMember
	index := map[string]int{}
	w.skipSpace()
	if w.pos < len(w.src) && w.src[w.pos] == '}' {
		w.pos++
		return []byte("{}"), nil
	}
	for {
		w.skipSpace()
		if w.pos >= len(w.src) || w.src[w.pos] != '"' {
			return nil, errSyntax
		}
		key, err := w.str()
		if err != nil {
			return nil, err
		}
		w.skipSpace()
		if w.pos >= len(w.src) || w.src[w.pos] != ':' {
			return nil, errSyntax
		}
		w.pos++
		w.skipSpace()
		v, err := w.value(depth + 1)
		if err != nil {
			return nil, err
		}
		if at, seen := index[key]; seen {
			w.facts.duplicateKey = true
			members[at].value = v
		} else {
			index[key] = len(members)
			members = append(members, canonMember{key, v})
		}
		w.skipSpace()
		if w.pos >= len(w.src) {
			return nil, errSyntax
		}
		if w.src[w.pos] == ',' {
			w.pos++
			continue
		}
		if w.src[w.pos] != '}' {
			return nil, errSyntax
		}
		w.pos++
		break
	}
	// Byte order of the keys' UTF-8, which Go's string comparison is.
	sort.Slice(members, func(i, j int) bool { return members[i].key < members[j].key })
	out := []byte{'{'}
	for i, m := range members {
		if i > 0 {
			out = append(out, ',')
		}
		out = appendString(out, m.key)
		out = append(out, ':')
		out = append(out, m.value...)
	}
	return append(out, '}'), nil
}

func (w *walker) array(depth int) ([]byte, error) {
	w.pos++ // [
	out := []byte{'['}
	w.skipSpace()
	if w.pos < len(w.src) && w.src[w.pos] == ']' {
		w.pos++
		return append(out, ']'), nil
	}
	for n := 0; ; n++ {
		w.skipSpace()
		v, err := w.value(depth + 1)
		if err != nil {
			return nil, err
		}
		if n > 0 {
			out = append(out, ',')
		}
		out = append(out, v...)
		w.skipSpace()
		if w.pos >= len(w.src) {
			return nil, errSyntax
		}
		if w.src[w.pos] == ',' {
			w.pos++
			continue
		}
		if w.src[w.pos] != ']' {
			return nil, errSyntax
		}
		w.pos++
		return append(out, ']'), nil
	}
}

// str reads a string token and returns its decoded text, noting what the store cannot keep.
func (w *walker) str() (string, error) {
	w.pos++ // opening quote
	var b []byte
	for {
		if w.pos >= len(w.src) {
			return "", errSyntax
		}
		c := w.src[w.pos]
		switch {
		case c == '"':
			w.pos++
			return string(b), nil
		case c == '\\':
			r, err := w.escape()
			if err != nil {
				return "", err
			}
			b = utf8.AppendRune(b, r)
		case c < 0x20:
			return "", errSyntax
		case c < utf8.RuneSelf:
			b = append(b, c)
			w.pos++
		default:
			r, size := utf8.DecodeRune(w.src[w.pos:])
			if r == utf8.RuneError && size == 1 {
				w.facts.unstorable = true
			}
			b = utf8.AppendRune(b, r)
			w.pos += size
		}
	}
}

// escape reads one backslash escape, joining a surrogate pair into one rune.
func (w *walker) escape() (rune, error) {
	if w.pos+1 >= len(w.src) {
		return 0, errSyntax
	}
	c := w.src[w.pos+1]
	w.pos += 2
	switch c {
	case '"', '\\', '/':
		return rune(c), nil
	case 'b':
		return '\b', nil
	case 'f':
		return '\f', nil
	case 'n':
		return '\n', nil
	case 'r':
		return '\r', nil
	case 't':
		return '\t', nil
	case 'u':
	default:
		return 0, errSyntax
	}
	r, ok := w.hex4()
	if !ok {
		return 0, errSyntax
	}
	switch {
	case r == 0:
		w.facts.unstorable = true
		return 0, nil
	case utf16.IsSurrogate(r):
		if r < 0xDC00 && bytes.HasPrefix(w.src[w.pos:], []byte(`\u`)) {
			save := w.pos
			w.pos += 2
			if lo, ok := w.hex4(); ok && lo >= 0xDC00 && lo <= 0xDFFF {
				return utf16.DecodeRune(r, lo), nil
			}
			w.pos = save
		}
		w.facts.unstorable = true
		return utf8.RuneError, nil
	}
	return r, nil
}

func (w *walker) hex4() (rune, bool) {
	if w.pos+4 > len(w.src) {
		return 0, false
	}
	v, err := strconv.ParseUint(string(w.src[w.pos:w.pos+4]), 16, 32)
	if err != nil {
		return 0, false
	}
	w.pos += 4
	return rune(v), true
}

func (w *walker) number() ([]byte, error) {
	start := w.pos
	for w.pos < len(w.src) {
		c := w.src[w.pos]
		if (c >= '0' && c <= '9') || c == '-' || c == '+' || c == '.' || c == 'e' || c == 'E' {
			w.pos++
			continue
		}
		break
	}
	lit := w.src[start:w.pos]
	if !validNumber(lit) {
		return nil, errSyntax
	}
	return canonicalNumber(lit), nil
}

// validNumber checks the JSON number grammar: -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func validNumber(s []byte) bool {
	i := 0
	if i < len(s) && s[i] == '-' {
		i++
	}
	switch {
	case i < len(s) && s[i] == '0':
		i++
	case i < len(s) && s[i] >= '1' && s[i] <= '9':
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
		}
	default:
		return false
	}
	if i < len(s) && s[i] == '.' {
		i++
		if i >= len(s) || s[i] < '0' || s[i] > '9' {
			return false
		}
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
		}
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			i++
		}
		if i >= len(s) || s[i] < '0' || s[i] > '9' {
			return false
		}
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
		}
	}
	return i == len(s)
}

// canonicalNumber writes a number in its shortest round-trip form, with the exponent
// thresholds ECMAScript uses (as encoding/json does). Negative zero is 0.
func canonicalNumber(lit []byte) []byte {
	f, err := strconv.ParseFloat(string(lit), 64)
	if err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
		return append([]byte(nil), lit...)
	}
	if f == 0 {
		return []byte("0")
	}
	format := byte('f')
	if abs := math.Abs(f); abs < 1e-6 || abs >= 1e21 {
		format = 'e'
	}
	b := strconv.AppendFloat(nil, f, format, -1, 64)
	if format == 'e' {
		// 1e-07 -> 1e-7
		n := len(b)
		if n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	return b
}

// appendString writes s as a JSON string with minimal escapes: the quote, the backslash and
// control characters only.
func appendString(out []byte, s string) []byte {
	const hex = "0123456789abcdef"
	out = append(out, '"')
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '"' || c == '\\':
			out = append(out, '\\', c)
		case c >= 0x20:
			out = append(out, c)
		case c == '\b':
			out = append(out, '\\', 'b')
		case c == '\f':
			out = append(out, '\\', 'f')
		case c == '\n':
			out = append(out, '\\', 'n')
		case c == '\r':
			out = append(out, '\\', 'r')
		case c == '\t':
			out = append(out, '\\', 't')
		default:
			out = append(out, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xF])
		}
	}
	return append(out, '"')
}
