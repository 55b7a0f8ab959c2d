package jsonwire

import (
	"math/big"
	"strings"
)

// EqualValues compares two values as the declaration rules define equality: objects have the same
// key set and equal values (order ignored), arrays are equal element by element, strings by
// exact content, numbers by numeric value (1 equals 1.0 and 1e0), and true, false and null by
// identity. An object that repeats a key is compared by its first occurrence of each key and
// its member count.
func EqualValues(a, b Value) bool {
	if a.kind != b.kind {
		return false
	}
	switch a.kind {
	case NullKind:
		return true
	case BoolKind:
		return a.b == b.b
	case StringKind:
		return a.s == b.s
	case NumberKind:
		return a.s == b.s || numberEqual(a.s, b.s)
	case ArrayKind:
		if len(a.items) != len(b.items) {
			return false
		}
		for i := range a.items {
			if !EqualValues(a.items[i], b.items[i]) {
				return false
			}
		}
		return true
	default:
		if len(a.members) != len(b.members) {
			return false
		}
		for i, m := range a.members {
			// Same order is the common case: compare pairwise before searching.
			if i < len(b.members) && b.members[i].Key == m.Key {
				if !EqualValues(m.Value, b.members[i].Value) {
					return false
				}
				continue
			}
			other, ok := b.Get(m.Key)
			if !ok || !EqualValues(m.Value, other) {
				return false
			}
		}
		for _, m := range b.members {
			if !a.Has(m.Key) {
				return false
			}
		}
		return true
	}
}

// decimal is a number literal as sign, significant digits without leading or trailing zeros,
// and the power of ten of the digit string's end: value = digits × 10^exp.
type decimal struct {
	neg    bool
	digits string
	exp    *big.Int
}

// numberEqual compares two valid literals by numeric value without converting to a float, so
// that no literal loses precision and no exponent, however large, allocates its magnitude.
func numberEqual(a, b string) bool {
	x, y := parseDecimal(a), parseDecimal(b)
	if x.digits == "" || y.digits == "" {
		return x.digits == y.digits // zero equals zero, whatever its sign
	}
	return x.neg == y.neg && x.digits == y.digits && x.exp.Cmp(y.exp) == 0
}

func parseDecimal(lit string) decimal {
	var d decimal
	if strings.HasPrefix(lit, "-") {
		d.neg = true
		lit = lit[1:]
	}
	mant, expText := lit, ""
	if i := strings.IndexAny(lit, "eE"); i >= 0 {
		mant, expText = lit[:i], lit[i+1:]
	}
	intPart, frac := mant, ""
	if i := strings.IndexByte(mant, '.'); i >= 0 {
		intPart, frac = mant[:i], mant[i+1:]
	}
	digits := intPart + frac
	exp := big.NewInt(int64(-len(frac)))
	if expText != "" {
		e, _ := new(big.Int).SetString(strings.TrimPrefix(expText, "+"), 10)
		exp.Add(exp, e)
	}
	digits = strings.TrimLeft(digits, "0")
	trimmed := strings.TrimRight(digits, "0")
	exp.Add(exp, big.NewInt(int64(len(digits)-len(trimmed))))
	d.digits = trimmed
	d.exp = exp
	return d
}
