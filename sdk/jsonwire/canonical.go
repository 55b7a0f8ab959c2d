package jsonwire

import (
	"bytes"
	"errors"
	"math"
	"strconv"
)

// ErrHugeNumber is CanonicalValue's refusal of a number outside the double-precision range: it
// has no shortest round-trip form, so no canonical bytes to store, measure or compare.
var ErrHugeNumber = errors.New("a number is outside the double-precision range")

// CanonicalValue is the canonical form of a value the kernel stores, measures or compares (a tool
// input, an idempotent request body, a size estimate): Canonical, with a number that has no
// double value refused (ErrHugeNumber) rather than kept as written.
func CanonicalValue(raw []byte) ([]byte, error) {
	out, facts, err := Canonical(raw)
	if err != nil {
		return nil, err
	}
	if facts.HugeNumber {
		return nil, ErrHugeNumber
	}
	return out, nil
}

// Equal reports whether two JSON texts have the same canonical form (CanonicalValue); an error
// from either side is returned as is.
func Equal(a, b []byte) (bool, error) {
	ca, err := CanonicalValue(a)
	if err != nil {
		return false, err
	}
	cb, err := CanonicalValue(b)
	if err != nil {
		return false, err
	}
	return bytes.Equal(ca, cb), nil
}

// AppendNumber appends the shortest round-trip form of f: the ECMAScript number-to-string rule,
// which encoding/json also follows (exponent form below 1e-6 and from 1e21 on, with no leading
// zeros in the exponent). Negative zero is written 0. f must be finite.
func AppendNumber(b []byte, f float64) []byte {
	if f == 0 {
		return append(b, '0')
	}
	format := byte('f')
	if abs := math.Abs(f); abs < 1e-6 || abs >= 1e21 {
		format = 'e'
	}
	start := len(b)
	b = strconv.AppendFloat(b, f, format, -1, 64)
	if format == 'e' {
		// strconv writes e-07; the shortest form is e-7.
		n := len(b)
		if n-start >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	return b
}
