package jsonv

import "unicode/utf8"

// Append writes v's compact encoding to dst: no insignificant whitespace, HTML characters and
// non-ASCII (U+2028 and U+2029 included) as themselves, only what JSON requires escaped, and
// numbers as their literal. Object members are written in order, repeats included.
func (v Value) Append(dst []byte) []byte {
	switch v.kind {
	case NullKind:
		return append(dst, "null"...)
	case BoolKind:
		if v.b {
			return append(dst, "true"...)
		}
		return append(dst, "false"...)
	case NumberKind:
		return append(dst, v.s...)
	case StringKind:
		return AppendString(dst, v.s)
	case ArrayKind:
		dst = append(dst, '[')
		for i, it := range v.items {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = it.Append(dst)
		}
		return append(dst, ']')
	default:
		dst = append(dst, '{')
		for i, m := range v.members {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = AppendString(dst, m.Key)
			dst = append(dst, ':')
			dst = m.Value.Append(dst)
		}
		return append(dst, '}')
	}
}

// Encode returns v's compact encoding.
func (v Value) Encode() []byte { return v.Append(make([]byte, 0, 64)) }

// MarshalJSON returns the compact encoding, so a Value can sit in a struct that
// encoding/json writes. Use an Encoder with SetEscapeHTML(false) to keep the bytes exact.
func (v Value) MarshalJSON() ([]byte, error) { return v.Encode(), nil }

// EncodedSize is the byte length of the compact encoding, measured without building it.
func (v Value) EncodedSize() int {
	switch v.kind {
	case NullKind:
		return 4
	case BoolKind:
		if v.b {
			return 4
		}
		return 5
	case NumberKind:
		return len(v.s)
	case StringKind:
		return stringSize(v.s)
	case ArrayKind:
		n := 2
		if len(v.items) > 1 {
			n += len(v.items) - 1
		}
		for _, it := range v.items {
			n += it.EncodedSize()
		}
		return n
	default:
		n := 2
		if len(v.members) > 1 {
			n += len(v.members) - 1
		}
		for _, m := range v.members {
			n += stringSize(m.Key) + 1 + m.Value.EncodedSize()
		}
		return n
	}
}

const hexDigits = "0123456789abcdef"

// AppendString writes s as a JSON string. Invalid UTF-8 is written as U+FFFD, as encoding/json
// does; control characters use the short escapes encoding/json uses (\b \f \n \r \t) or \u00XX.
func AppendString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' && c < utf8.RuneSelf {
			i++
			continue
		}
		if c >= utf8.RuneSelf {
			r, size := utf8.DecodeRuneInString(s[i:])
			if r == utf8.RuneError && size == 1 {
				dst = append(dst, s[start:i]...)
				dst = append(dst, "\uFFFD"...)
				i++
				start = i
				continue
			}
			i += size
			continue
		}
		dst = append(dst, s[start:i]...)
		switch c {
		case '"', '\\':
			dst = append(dst, '\\', c)
		case '\b':
			dst = append(dst, '\\', 'b')
		case '\f':
			dst = append(dst, '\\', 'f')
		case '\n':
			dst = append(dst, '\\', 'n')
		case '\r':
			dst = append(dst, '\\', 'r')
		case '\t':
			dst = append(dst, '\\', 't')
		default:
			dst = append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
		}
		i++
		start = i
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

func stringSize(s string) int {
	n := 2
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c >= 0x20 && c != '"' && c != '\\' && c < utf8.RuneSelf:
			n++
			i++
		case c >= utf8.RuneSelf:
			r, size := utf8.DecodeRuneInString(s[i:])
			if r == utf8.RuneError && size == 1 {
				n += len("\uFFFD")
			} else {
				n += size
			}
			i += size
		case c == '"' || c == '\\' || c == '\b' || c == '\f' || c == '\n' || c == '\r' || c == '\t':
			n += 2
			i++
		default:
			n += 6
			i++
		}
	}
	return n
}
