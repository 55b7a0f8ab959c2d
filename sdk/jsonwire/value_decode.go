package jsonwire

// Decode parses exactly one JSON value (surrounding whitespace allowed). Objects keep their
// members in document order, repeated keys included (HasDuplicateKeys finds them); numbers keep
// their literal text. Bytes that are not UTF-8 and unpaired surrogate escapes become U+FFFD, as
// encoding/json does, so every decoded string is valid UTF-8. It reads with the same walker as
// Canonical and Scan, so all three accept exactly the same texts and fail at the same byte.
func Decode(data []byte) (Value, error) {
	return decode(data, string(data))
}

// DecodeText is Decode over a string. Decoded strings without escapes share its memory.
func DecodeText(src string) (Value, error) {
	return decode([]byte(src), src)
}

// decode reads src, whose text is the same bytes as a string.
func decode(src []byte, text string) (Value, error) {
	w := walker{src: src, text: text}
	w.skipSpace()
	v, err := w.decodeValue(0)
	if err != nil {
		return Value{}, err
	}
	if err := w.end(); err != nil {
		return Value{}, err
	}
	return v, nil
}

// decodeValue builds the Value at w.pos: the walker's value, keeping what Canonical would
// re-encode (each member in order, each number's literal).
func (w *walker) decodeValue(depth int) (Value, error) {
	if w.pos >= len(w.src) {
		return Value{}, w.syntaxError()
	}
	switch c := w.src[w.pos]; {
	case (c == '{' || c == '[') && depth >= MaxDepth:
		return Value{}, w.syntaxError()
	case c == '{':
		members := []Field{}
		more, err := w.open('}')
		for ; more && err == nil; more, err = w.next('}') {
			key, err := w.key()
			if err != nil {
				return Value{}, err
			}
			v, err := w.decodeValue(depth + 1)
			if err != nil {
				return Value{}, err
			}
			members = append(members, Field{Key: key, Value: v})
		}
		if err != nil {
			return Value{}, err
		}
		return Value{kind: ObjectKind, members: members}, nil
	case c == '[':
		items := []Value{}
		more, err := w.open(']')
		for ; more && err == nil; more, err = w.next(']') {
			v, err := w.decodeValue(depth + 1)
			if err != nil {
				return Value{}, err
			}
			items = append(items, v)
		}
		if err != nil {
			return Value{}, err
		}
		return Value{kind: ArrayKind, items: items}, nil
	case c == '"':
		s, err := w.str(true)
		return Value{kind: StringKind, s: s}, err
	case c == 't':
		_, err := w.literal("true")
		return Value{kind: BoolKind, b: true}, err
	case c == 'f':
		_, err := w.literal("false")
		return Value{kind: BoolKind}, err
	case c == 'n':
		_, err := w.literal("null")
		return Value{}, err
	default:
		start := w.pos
		if _, err := w.numberLiteral(); err != nil {
			return Value{}, err
		}
		return Value{kind: NumberKind, s: w.text[start:w.pos]}, nil
	}
}
