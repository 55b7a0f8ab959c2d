package canonjson

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Canonicalize re-encodes one JSON text canonically. Invalid JSON, trailing data after the
// value, and a number outside the IEEE-754 double range are errors (a *NumberError for the last).
// A key repeated inside one object keeps its last value, as encoding/json decodes it; invalid
// UTF-8 and unpaired surrogate escapes read as U+FFFD, again as encoding/json decodes them.
func Canonicalize(data []byte) ([]byte, error) {
	v, err := decode(data)
	if err != nil {
		return nil, err
	}
	out, err := appendValue(make([]byte, 0, len(data)), v)
	if ne, ok := err.(*NumberError); ok {
		// Steps were collected innermost first while the error unwound.
		slices.Reverse(ne.steps)
		ne.Path = "$" + strings.Join(ne.steps, "")
		ne.steps = nil
	}
	return out, err
}

// Marshal encodes v with encoding/json and returns the canonical form of the result.
func Marshal(v any) ([]byte, error) {
	data, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return Canonicalize(data)
}

// Equal reports whether two JSON texts have the same canonical form. An error from either side
// is returned as is.
func Equal(a, b []byte) (bool, error) {
	ca, err := Canonicalize(a)
	if err != nil {
		return false, err
	}
	cb, err := Canonicalize(b)
	if err != nil {
		return false, err
	}
	return bytes.Equal(ca, cb), nil
}

// NumberError is a number that has no double-precision value, so it has no shortest
// round-trip form either.
type NumberError struct {
	// Path locates the number: "$" for the root, then ".key" and "[index]" steps. A key is
	// written as is, without quoting.
	Path string
	// Literal is the number as written.
	Literal string

	steps []string
}

func (e *NumberError) Error() string {
	return fmt.Sprintf("canonjson: number %s at %s is outside the double-precision range", e.Literal, e.Path)
}

// ErrTrailingData is returned when a JSON text holds more than one value.
var ErrTrailingData = errors.New("canonjson: data after the JSON value")

func decode(data []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		if err == io.EOF {
			return nil, io.ErrUnexpectedEOF
		}
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, ErrTrailingData
	}
	return v, nil
}

// appendValue writes v; the path of a failing number is built only when one fails, so deep
// nesting costs nothing on the way down.
func appendValue(b []byte, v any) ([]byte, error) {
	switch v := v.(type) {
	case nil:
		return append(b, "null"...), nil
	case bool:
		return strconv.AppendBool(b, v), nil
	case json.Number:
		f, err := strconv.ParseFloat(string(v), 64)
		if err != nil {
			return nil, &NumberError{Literal: string(v)}
		}
		return AppendNumber(b, f), nil
	case string:
		return AppendString(b, v), nil
	case []any:
		b = append(b, '[')
		for i, e := range v {
			if i > 0 {
				b = append(b, ',')
			}
			var err error
			if b, err = appendValue(b, e); err != nil {
				return nil, step(err, "["+strconv.Itoa(i)+"]")
			}
		}
		return append(b, ']'), nil
	case map[string]any:
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		slices.Sort(keys) // Go string order is byte order
		b = append(b, '{')
		for i, k := range keys {
			if i > 0 {
				b = append(b, ',')
			}
			b = AppendString(b, k)
			b = append(b, ':')
			var err error
			if b, err = appendValue(b, v[k]); err != nil {
				return nil, step(err, "."+k)
			}
		}
		return append(b, '}'), nil
	default:
		return nil, fmt.Errorf("canonjson: unexpected decoded type %T", v)
	}
}

func step(err error, s string) error {
	if ne, ok := err.(*NumberError); ok {
		ne.steps = append(ne.steps, s)
	}
	return err
}

// AppendNumber appends the shortest round-trip form of f: the ECMAScript number-to-string
// rule, which encoding/json also follows (exponent form below 1e-6 and from 1e21 on, with no
// leading zeros in the exponent). Negative zero is written 0. f must be finite.
func AppendNumber(b []byte, f float64) []byte {
	if f == 0 {
		return append(b, '0')
	}
	format := byte('f')
	if abs := math.Abs(f); abs < 1e-6 || abs >= 1e21 {
		format = 'e'
	}
	b = strconv.AppendFloat(b, f, format, -1, 64)
	if format == 'e' {
		// strconv writes e-07; the shortest form is e-7.
		n := len(b)
		if n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	return b
}

const hexDigits = "0123456789abcdef"

// AppendString appends s as a JSON string with only the escapes JSON requires: the quote, the
// backslash, and the control characters below U+0020 (the five with a short form use it, the
// rest \u00xx in lower-case hex). Everything else, <, >, &, U+2028 and U+2029 included, is
// written as its UTF-8 bytes; invalid UTF-8 is written as U+FFFD.
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
