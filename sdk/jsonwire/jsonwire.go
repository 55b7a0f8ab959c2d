package jsonwire

// Canonical JSON (docs/api.md#conventions) and the storability facts of a raw JSON value: the
// package's one walker, which the splits, the storability check and Decode (value_decode.go) read
// through as well, so every caller measures bounds the same way.

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"sort"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// Facts are what a walk learns about a value besides its canonical bytes.
type Facts struct {
	// DuplicateKey: some object in the value repeats a key.
	DuplicateKey bool
	// Unstorable: some string (key or value) holds U+0000, an unpaired surrogate escape or
	// bytes that are not UTF-8, none of which PostgreSQL's text and jsonb can keep.
	Unstorable bool
	// HugeNumber: some number lies outside the double-precision range, so it has no shortest
	// round-trip form; Canonical keeps its literal, CanonicalValue refuses it.
	HugeNumber bool
}

// ErrSyntax matches every syntax error (each a *SyntaxError): the input is not exactly one JSON
// value of the expected kind.
var ErrSyntax = errors.New("not one JSON value")

// SyntaxError is the error of every walk that fails: where the input stops being what was
// expected. errors.Is(err, ErrSyntax) holds for it.
type SyntaxError struct {
	// Offset is the byte offset, from the start of the input, at which the walk stopped.
	Offset int
	// Reason says what was wrong there, when the reader knows ("" for a walk).
	Reason string
}

func (e *SyntaxError) Error() string {
	if e.Reason != "" {
		return "not one JSON value: " + e.Reason + " at byte " + strconv.Itoa(e.Offset)
	}
	return "not one JSON value: syntax error at byte " + strconv.Itoa(e.Offset)
}

// Is makes errors.Is(err, ErrSyntax) true for a *SyntaxError.
func (e *SyntaxError) Is(target error) bool { return target == ErrSyntax }

func (w *walker) syntaxError() error { return &SyntaxError{Offset: w.pos} }

// Canonical re-encodes one JSON value with object keys sorted by byte order, no
// insignificant whitespace, no HTML escaping, minimal string escapes and numbers in their
// shortest round-trip form. A repeated key keeps its last value, as decoders do. Numbers too
// large for a double keep their literal, so that measuring never fails on a value the store
// accepts.
func Canonical(raw []byte) ([]byte, Facts, error) {
	w := walker{src: raw, emit: true}
	w.skipSpace()
	out, err := w.value(0)
	if err != nil {
		return nil, w.facts, err
	}
	w.skipSpace()
	if w.pos != len(w.src) {
		return nil, w.facts, w.syntaxError()
	}
	return out, w.facts, nil
}

// MaxDepth matches encoding/json's nesting limit, so that any value the body decoder
// accepted can be walked, and nothing deeper can exhaust the stack.
const MaxDepth = 10000

type walker struct {
	src   []byte
	pos   int
	facts Facts
	// emit: build canonical output. Without it the walker only checks the syntax and
	// gathers facts, which is what splitting and scanning need.
	emit bool
	// text, when set, holds the same bytes as src: a string read without escapes is sliced
	// from it rather than copied (Decode's values share their source's memory).
	text string
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
		return nil, w.syntaxError()
	}
	switch c := w.src[w.pos]; {
	case (c == '{' || c == '[') && depth >= MaxDepth:
		return nil, w.syntaxError()
	case c == '{':
		return w.object(depth)
	case c == '[':
		return w.array(depth)
	case c == '"':
		s, err := w.str(w.emit)
		if err != nil || !w.emit {
			return nil, err
		}
		return AppendString(nil, s), nil
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
		return nil, w.syntaxError()
	}
	w.pos += len(word)
	if !w.emit {
		return nil, nil
	}
	return []byte(word), nil
}

type canonMember struct {
	key   string
	value []byte
}

func (w *walker) object(depth int) ([]byte, error) {
	var members []canonMember
	var keys keySet
	more, err := w.open('}')
	for ; more && err == nil; more, err = w.next('}') {
		var key string
		if key, err = w.key(); err != nil {
			return nil, err
		}
		v, err := w.value(depth + 1)
		if err != nil {
			return nil, err
		}
		at, seen := keys.index(key)
		switch {
		case seen:
			w.facts.DuplicateKey = true
			if w.emit {
				members[at].value = v
			}
		default:
			keys.add(key)
			if w.emit {
				members = append(members, canonMember{key, v})
			}
		}
	}
	if err != nil {
		return nil, err
	}
	if !w.emit {
		return nil, nil
	}
	// Byte order of the keys' UTF-8, which Go's string comparison is.
	sort.Slice(members, func(i, j int) bool { return members[i].key < members[j].key })
	out := []byte{'{'}
	for i, m := range members {
		if i > 0 {
			out = append(out, ',')
		}
		out = AppendString(out, m.key)
		out = append(out, ':')
		out = append(out, m.value...)
	}
	return append(out, '}'), nil
}

// keySet remembers an object's keys in first-seen order: a slice searched linearly while the
// object is small, the usual case, and a map once it is not.
type keySet struct {
	list []string
	m    map[string]int
}

const keySetLinear = 16

func (k *keySet) index(key string) (int, bool) {
	if k.m != nil {
		i, ok := k.m[key]
		return i, ok
	}
	for i, s := range k.list {
		if s == key {
			return i, true
		}
	}
	return 0, false
}

func (k *keySet) add(key string) {
	k.list = append(k.list, key)
	if k.m == nil && len(k.list) > keySetLinear {
		k.m = make(map[string]int, 2*len(k.list))
		for i, s := range k.list {
			k.m[s] = i
		}
		return
	}
	if k.m != nil {
		k.m[key] = len(k.list) - 1
	}
}

func (w *walker) array(depth int) ([]byte, error) {
	var out []byte
	if w.emit {
		out = []byte{'['}
	}
	more, err := w.open(']')
	for n := 0; more && err == nil; more, err = w.next(']') {
		v, err := w.value(depth + 1)
		if err != nil {
			return nil, err
		}
		if w.emit {
			if n > 0 {
				out = append(out, ',')
			}
			out = append(out, v...)
		}
		n++
	}
	if err != nil || !w.emit {
		return nil, err
	}
	return append(out, ']'), nil
}

// The grammar of the two containers, which every reader here (Canonical, Scan, the splits and
// Decode) walks through these three steps, so that none of them spells the punctuation again.

// open steps over the opening bracket at w.pos and any white space after it, and reports
// whether a first member or element follows (false: the closing bracket, consumed).
func (w *walker) open(closing byte) (bool, error) {
	w.pos++
	w.skipSpace()
	if w.pos < len(w.src) && w.src[w.pos] == closing {
		w.pos++
		return false, nil
	}
	return true, nil
}

// next steps over what follows a member or element: a comma (true: another one follows) or the
// closing bracket (false).
func (w *walker) next(closing byte) (bool, error) {
	w.skipSpace()
	if w.pos >= len(w.src) {
		return false, w.syntaxError()
	}
	switch w.src[w.pos] {
	case ',':
		w.pos++
		w.skipSpace()
		return true, nil
	case closing:
		w.pos++
		return false, nil
	}
	return false, w.syntaxError()
}

// key reads an object member's key and its colon, leaving w.pos at the value.
func (w *walker) key() (string, error) {
	if w.pos >= len(w.src) || w.src[w.pos] != '"' {
		return "", w.syntaxError()
	}
	key, err := w.str(true)
	if err != nil {
		return "", err
	}
	w.skipSpace()
	if w.pos >= len(w.src) || w.src[w.pos] != ':' {
		return "", w.syntaxError()
	}
	w.pos++
	w.skipSpace()
	return key, nil
}

// str reads a string token and returns its decoded text when keep is set, noting what the
// store cannot keep either way. Runs of plain bytes are copied whole, and a string without
// escapes is sliced from the source, so long texts cost one pass.
func (w *walker) str(keep bool) (string, error) {
	w.pos++ // opening quote
	start := w.pos
	var b strings.Builder
	escaped := false
	for {
		run := w.pos
		for run < len(w.src) {
			c := w.src[run]
			if c < 0x20 || c == '"' || c == '\\' || c >= utf8.RuneSelf {
				break
			}
			run++
		}
		if keep && escaped {
			b.Write(w.src[w.pos:run])
		}
		w.pos = run
		if w.pos >= len(w.src) {
			return "", w.syntaxError()
		}
		c := w.src[w.pos]
		switch {
		case c == '"':
			w.pos++
			if !keep {
				return "", nil
			}
			if !escaped {
				if w.text != "" {
					return w.text[start : w.pos-1], nil
				}
				return string(w.src[start : w.pos-1]), nil
			}
			return b.String(), nil
		case c == '\\':
			if keep && !escaped {
				w.startText(&b, start)
				escaped = true
			}
			r, err := w.escape()
			if err != nil {
				return "", err
			}
			if keep {
				b.WriteRune(r)
			}
		case c < 0x20:
			return "", w.syntaxError()
		default:
			r, size := utf8.DecodeRune(w.src[w.pos:])
			if r == utf8.RuneError && size == 1 {
				// Not UTF-8: decoded as U+FFFD, as encoding/json does, so the text differs
				// from the source from here on.
				w.facts.Unstorable = true
				if keep && !escaped {
					w.startText(&b, start)
					escaped = true
				}
			}
			if keep && escaped {
				b.WriteRune(r)
			}
			w.pos += size
		}
	}
}

// startText begins the decoded text of a string that does not read as its source: the bytes
// from start to w.pos so far, and a little room for what follows.
func (w *walker) startText(b *strings.Builder, start int) {
	b.Grow(w.pos - start + 16)
	b.Write(w.src[start:w.pos])
}

// escape reads one backslash escape, joining a surrogate pair into one rune.
func (w *walker) escape() (rune, error) {
	if w.pos+1 >= len(w.src) {
		return 0, w.syntaxError()
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
		return 0, w.syntaxError()
	}
	r, ok := w.hex4()
	if !ok {
		return 0, w.syntaxError()
	}
	switch {
	case r == 0:
		w.facts.Unstorable = true
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
		w.facts.Unstorable = true
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
	lit, err := w.numberLiteral()
	if err != nil {
		return nil, err
	}
	if !w.emit {
		if mayBeHuge(lit) && !finite(lit) {
			w.facts.HugeNumber = true
		}
		return nil, nil
	}
	return w.canonicalNumber(lit), nil
}

// numberLiteral reads a number token and returns its literal as written.
func (w *walker) numberLiteral() ([]byte, error) {
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
	if !ValidNumber(lit) {
		return nil, w.syntaxError()
	}
	return lit, nil
}

// maxPlainDigits is the longest literal without an exponent that can still be a double: the
// largest double, written out, has 309 digits.
const maxPlainDigits = 309

// mayBeHuge is a cheap pre-check: only an exponent or a long digit run puts a number past the
// double range, so a scan parses nothing else.
func mayBeHuge(lit []byte) bool {
	return len(lit) > maxPlainDigits || bytes.ContainsAny(lit, "eE")
}

// finite reports whether the literal has a double value.
func finite(lit []byte) bool {
	f, err := strconv.ParseFloat(string(lit), 64)
	return err == nil && !math.IsInf(f, 0) && !math.IsNaN(f)
}

// NonNegativeInteger decodes a JSON integer literal of at least zero that fits an int64: no
// sign, fraction or exponent, surrounding white space allowed. Lock versions and sizes are read
// this way, so 1.0 or 1e0 is refused rather than rounded.
func NonNegativeInteger(raw []byte) (int64, bool) {
	lit := bytes.TrimSpace(raw)
	if len(lit) == 0 || !ValidNumber(lit) || bytes.ContainsAny(lit, "-.eE") {
		return 0, false
	}
	n, err := strconv.ParseInt(string(lit), 10, 64)
	return n, err == nil
}

// ValidNumber checks the JSON number grammar: -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func ValidNumber(s []byte) bool {
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

// canonicalNumber writes a number in its shortest round-trip form (AppendNumber); a literal
// with no double value is kept as written and noted.
func (w *walker) canonicalNumber(lit []byte) []byte {
	f, err := strconv.ParseFloat(string(lit), 64)
	if err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
		w.facts.HugeNumber = true
		return append([]byte(nil), lit...)
	}
	return AppendNumber(nil, f)
}

const hexDigits = "0123456789abcdef"

// AppendString appends s as a JSON string with only the escapes JSON requires: the quote, the
// backslash, and the control characters below U+0020 (the five with a short form use it, the
// rest \u00xx in lower-case hex). Everything else, <, >, &, U+2028 and U+2029 included, is
// written as its UTF-8 bytes; bytes that are not UTF-8 are written as U+FFFD, as a decoder
// reads them.
func AppendString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = utf8.AppendRune(b, utf8.RuneError)
			i++
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

// Scan checks that raw is one JSON value and gathers its facts without re-encoding it.
func Scan(raw []byte) (Facts, error) {
	w := walker{src: raw}
	w.skipSpace()
	if _, err := w.value(0); err != nil {
		return w.facts, err
	}
	w.skipSpace()
	if w.pos != len(w.src) {
		return w.facts, w.syntaxError()
	}
	return w.facts, nil
}

// Member is one member of an object as written: its decoded key and its value's bytes.
type Member struct {
	Key string
	Raw json.RawMessage
}

// Members are an object's members in input order, repeats included.
type Members []Member

// Get returns the value of the first member named key.
func (ms Members) Get(key string) (json.RawMessage, bool) {
	for _, m := range ms {
		if m.Key == key {
			return m.Raw, true
		}
	}
	return nil, false
}

// Repeated returns the first key given twice, in document order.
func (ms Members) Repeated() (string, bool) {
	seen := make(map[string]bool, len(ms))
	for _, m := range ms {
		if seen[m.Key] {
			return m.Key, true
		}
		seen[m.Key] = true
	}
	return "", false
}

// SplitObject reads raw as exactly one JSON object and returns its members in input order,
// repeats included (which a map would hide), each value as its own bytes.
func SplitObject(raw []byte) (Members, error) {
	w := walker{src: raw}
	w.skipSpace()
	if w.pos >= len(w.src) || w.src[w.pos] != '{' {
		return nil, w.syntaxError()
	}
	var out Members
	more, err := w.open('}')
	for ; more && err == nil; more, err = w.next('}') {
		key, err := w.key()
		if err != nil {
			return nil, err
		}
		start := w.pos
		if _, err := w.value(1); err != nil {
			return nil, err
		}
		out = append(out, Member{key, raw[start:w.pos]})
	}
	if err != nil {
		return nil, err
	}
	return out, w.end()
}

// SplitArray reads raw as exactly one JSON array and returns its elements' bytes.
func SplitArray(raw []byte) ([]json.RawMessage, error) {
	w := walker{src: raw}
	w.skipSpace()
	if w.pos >= len(w.src) || w.src[w.pos] != '[' {
		return nil, w.syntaxError()
	}
	out := []json.RawMessage{}
	more, err := w.open(']')
	for ; more && err == nil; more, err = w.next(']') {
		start := w.pos
		if _, err := w.value(1); err != nil {
			return nil, err
		}
		out = append(out, raw[start:w.pos])
	}
	if err != nil {
		return nil, err
	}
	return out, w.end()
}

// DecodeString reads raw as exactly one JSON string.
func DecodeString(raw []byte) (string, bool) {
	w := walker{src: raw}
	w.skipSpace()
	if w.pos >= len(w.src) || w.src[w.pos] != '"' {
		return "", false
	}
	s, err := w.str(true)
	if err != nil || w.end() != nil {
		return "", false
	}
	return s, true
}

// end checks that nothing but whitespace follows.
func (w *walker) end() error {
	w.skipSpace()
	if w.pos != len(w.src) {
		return w.syntaxError()
	}
	return nil
}

// QuotedLen is len(AppendString(nil, s)).
func QuotedLen(s string) int {
	n := 2
	for i := 0; i < len(s); {
		c := s[i]
		if c >= utf8.RuneSelf {
			r, size := utf8.DecodeRuneInString(s[i:])
			if r == utf8.RuneError && size == 1 {
				n += utf8.RuneLen(utf8.RuneError)
			} else {
				n += size
			}
			i += size
			continue
		}
		switch {
		case c == '"' || c == '\\':
			n += 2
		case c >= 0x20:
			n++
		case c == '\b' || c == '\f' || c == '\n' || c == '\r' || c == '\t':
			n += 2
		default:
			n += 6
		}
		i++
	}
	return n
}
