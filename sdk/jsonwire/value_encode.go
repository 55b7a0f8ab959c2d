package jsonwire

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
		return QuotedLen(v.s)
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
			n += QuotedLen(m.Key) + 1 + m.Value.EncodedSize()
		}
		return n
	}
}
