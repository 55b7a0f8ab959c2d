package jsonwire

import (
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// Decode parses exactly one JSON value (surrounding whitespace allowed). Objects keep their
// members in document order, repeated keys included (HasDuplicateKeys finds them); numbers keep
// their literal text. Bytes that are not UTF-8 and unpaired surrogate escapes become U+FFFD, as
// encoding/json does, so every decoded string is valid UTF-8.
func Decode(data []byte) (Value, error) {
	return DecodeText(string(data))
}

// DecodeText is Decode over a string. Decoded strings without escapes share its memory.
func DecodeText(src string) (Value, error) {
	d := decoder{src: src}
	d.space()
	v, err := d.value(0)
	if err != nil {
		return Value{}, err
	}
	d.space()
	if d.pos != len(d.src) {
		return Value{}, d.fail("data after the value")
	}
	return v, nil
}

type decoder struct {
	src string
	pos int
}

func (d *decoder) fail(msg string) error { return &SyntaxError{Offset: d.pos, Reason: msg} }

func (d *decoder) space() {
	for d.pos < len(d.src) {
		switch d.src[d.pos] {
		case ' ', '\t', '\n', '\r':
			d.pos++
		default:
			return
		}
	}
}

func (d *decoder) value(depth int) (Value, error) {
	if d.pos >= len(d.src) {
		return Value{}, d.fail("unexpected end")
	}
	switch c := d.src[d.pos]; c {
	case '{':
		if depth >= MaxDepth {
			return Value{}, d.fail("nesting too deep")
		}
		return d.object(depth)
	case '[':
		if depth >= MaxDepth {
			return Value{}, d.fail("nesting too deep")
		}
		return d.array(depth)
	case '"':
		s, err := d.str()
		return Value{kind: StringKind, s: s}, err
	case 't':
		return Value{kind: BoolKind, b: true}, d.literal("true")
	case 'f':
		return Value{kind: BoolKind}, d.literal("false")
	case 'n':
		return Value{}, d.literal("null")
	default:
		start := d.pos
		if !d.number() {
			return Value{}, d.fail("invalid value")
		}
		return Value{kind: NumberKind, s: d.src[start:d.pos]}, nil
	}
}

func (d *decoder) literal(word string) error {
	if !strings.HasPrefix(d.src[d.pos:], word) {
		return d.fail("invalid literal")
	}
	d.pos += len(word)
	return nil
}

func (d *decoder) object(depth int) (Value, error) {
	d.pos++ // {
	d.space()
	members := []Field{}
	if d.pos < len(d.src) && d.src[d.pos] == '}' {
		d.pos++
		return Value{kind: ObjectKind, members: members}, nil
	}
	for {
		d.space()
		if d.pos >= len(d.src) || d.src[d.pos] != '"' {
			return Value{}, d.fail("expected a key")
		}
		key, err := d.str()
		if err != nil {
			return Value{}, err
		}
		d.space()
		if d.pos >= len(d.src) || d.src[d.pos] != ':' {
			return Value{}, d.fail("expected ':'")
		}
		d.pos++
		d.space()
		v, err := d.value(depth + 1)
		if err != nil {
			return Value{}, err
		}
		members = append(members, Field{Key: key, Value: v})
		d.space()
		if d.pos >= len(d.src) {
			return Value{}, d.fail("unexpected end")
		}
		switch d.src[d.pos] {
		case ',':
			d.pos++
		case '}':
			d.pos++
			return Value{kind: ObjectKind, members: members}, nil
		default:
			return Value{}, d.fail("expected ',' or '}'")
		}
	}
}

func (d *decoder) array(depth int) (Value, error) {
	d.pos++ // [
	d.space()
	items := []Value{}
	if d.pos < len(d.src) && d.src[d.pos] == ']' {
		d.pos++
		return Value{kind: ArrayKind, items: items}, nil
	}
	for {
		d.space()
		v, err := d.value(depth + 1)
		if err != nil {
			return Value{}, err
		}
		items = append(items, v)
		d.space()
		if d.pos >= len(d.src) {
			return Value{}, d.fail("unexpected end")
		}
		switch d.src[d.pos] {
		case ',':
			d.pos++
		case ']':
			d.pos++
			return Value{kind: ArrayKind, items: items}, nil
		default:
			return Value{}, d.fail("expected ',' or ']'")
		}
	}
}

// str reads a string starting at its opening quote and returns its content.
func (d *decoder) str() (string, error) {
	d.pos++ // "
	start := d.pos
	// Fast path: no escapes and valid UTF-8, so the content is a slice of the source.
	ascii := true
	for d.pos < len(d.src) {
		c := d.src[d.pos]
		switch {
		case c == '"':
			s := d.src[start:d.pos]
			d.pos++
			if !ascii && !utf8.ValidString(s) {
				return validUTF8(s), nil
			}
			return s, nil
		case c == '\\':
			return d.slowStr(start)
		case c < 0x20:
			return "", d.fail("control character in string")
		case c >= utf8.RuneSelf:
			ascii = false
		}
		d.pos++
	}
	return "", d.fail("unterminated string")
}

// slowStr decodes a string with escapes; d.pos is at the first backslash.
func (d *decoder) slowStr(start int) (string, error) {
	var b strings.Builder
	b.Grow(d.pos - start + 16)
	b.WriteString(validUTF8(d.src[start:d.pos]))
	for d.pos < len(d.src) {
		c := d.src[d.pos]
		switch {
		case c == '"':
			d.pos++
			return b.String(), nil
		case c < 0x20:
			return "", d.fail("control character in string")
		case c == '\\':
			if d.pos+1 >= len(d.src) {
				return "", d.fail("unterminated escape")
			}
			e := d.src[d.pos+1]
			d.pos += 2
			switch e {
			case '"', '\\', '/':
				b.WriteByte(e)
			case 'b':
				b.WriteByte('\b')
			case 'f':
				b.WriteByte('\f')
			case 'n':
				b.WriteByte('\n')
			case 'r':
				b.WriteByte('\r')
			case 't':
				b.WriteByte('\t')
			case 'u':
				r, ok := d.hex4()
				if !ok {
					return "", d.fail("invalid \\u escape")
				}
				if utf16.IsSurrogate(r) {
					r2 := rune(-1)
					if strings.HasPrefix(d.src[d.pos:], `\u`) {
						save := d.pos
						d.pos += 2
						var ok2 bool
						if r2, ok2 = d.hex4(); !ok2 {
							return "", d.fail("invalid \\u escape")
						}
						if dec := utf16.DecodeRune(r, r2); dec != utf8.RuneError {
							b.WriteRune(dec)
							continue
						}
						d.pos = save // the second escape stands on its own
					}
					b.WriteRune(utf8.RuneError)
					continue
				}
				b.WriteRune(r)
			default:
				return "", d.fail("invalid escape")
			}
		case c < utf8.RuneSelf:
			b.WriteByte(c)
			d.pos++
		default:
			r, size := utf8.DecodeRuneInString(d.src[d.pos:])
			b.WriteRune(r) // RuneError for invalid bytes, as encoding/json
			d.pos += size
		}
	}
	return "", d.fail("unterminated string")
}

func (d *decoder) hex4() (rune, bool) {
	if d.pos+4 > len(d.src) {
		return 0, false
	}
	var r rune
	for i := 0; i < 4; i++ {
		c := d.src[d.pos+i]
		switch {
		case '0' <= c && c <= '9':
			r = r<<4 | rune(c-'0')
		case 'a' <= c && c <= 'f':
			r = r<<4 | rune(c-'a'+10)
		case 'A' <= c && c <= 'F':
			r = r<<4 | rune(c-'A'+10)
		default:
			return 0, false
		}
	}
	d.pos += 4
	return r, true
}

// number advances over a JSON number and reports whether one was there.
func (d *decoder) number() bool {
	n := scanNumber(d.src[d.pos:])
	if n == 0 {
		return false
	}
	d.pos += n
	return true
}

// scanNumber returns the length of the JSON number at the start of s, or 0.
func scanNumber(s string) int {
	i := 0
	if i < len(s) && s[i] == '-' {
		i++
	}
	switch {
	case i < len(s) && s[i] == '0':
		i++
	case i < len(s) && '1' <= s[i] && s[i] <= '9':
		for i < len(s) && '0' <= s[i] && s[i] <= '9' {
			i++
		}
	default:
		return 0
	}
	if i < len(s) && s[i] == '.' {
		i++
		if i >= len(s) || s[i] < '0' || s[i] > '9' {
			return 0
		}
		for i < len(s) && '0' <= s[i] && s[i] <= '9' {
			i++
		}
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			i++
		}
		if i >= len(s) || s[i] < '0' || s[i] > '9' {
			return 0
		}
		for i < len(s) && '0' <= s[i] && s[i] <= '9' {
			i++
		}
	}
	return i
}

func validNumber(s string) bool { return s != "" && scanNumber(s) == len(s) }

// validUTF8 replaces each byte that is not part of a UTF-8 sequence with U+FFFD, one per byte
// as encoding/json does (strings.ToValidUTF8 would merge a run into one).
func validUTF8(s string) string {
	if utf8.ValidString(s) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 8)
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		b.WriteRune(r)
		i += size
	}
	return b.String()
}
