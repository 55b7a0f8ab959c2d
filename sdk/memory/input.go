package memory

import (
	"bytes"
	"encoding/json"
	"math"
	"strconv"
)

// arguments is a tool input decoded one level deep: each property keeps its raw JSON so that every
// tool applies its own type rules (docs/agent-tools.md#memory-and-skills). Extra keys are ignored.
type arguments map[string]json.RawMessage

// decodeArguments parses a tool input. An empty input or JSON null reads as {}; ok is false for
// anything that is not a JSON object, which the round driver never passes on (it fails such a
// call invalid_tool_arguments) and the Engine answers as a path it cannot read.
func decodeArguments(input json.RawMessage) (args arguments, ok bool) {
	trimmed := bytes.TrimSpace(input)
	if len(trimmed) == 0 || string(trimmed) == "null" {
		return arguments{}, true
	}
	if trimmed[0] != '{' {
		return nil, false
	}
	if err := json.Unmarshal(trimmed, &args); err != nil {
		return nil, false
	}
	if args == nil {
		args = arguments{}
	}
	return args, true
}

// present reports whether key was given with a value other than null.
func (a arguments) present(key string) bool {
	raw, ok := a[key]
	return ok && string(raw) != "null"
}

// str answers a property that is a JSON string; ok is false when it is absent, null or any
// other type. encoding/json has already replaced invalid UTF-8 and lone surrogates with U+FFFD.
func (a arguments) str(key string) (s string, ok bool) {
	raw, found := a[key]
	if !found || len(raw) == 0 || raw[0] != '"' {
		return "", false
	}
	if err := json.Unmarshal(raw, &s); err != nil {
		return "", false
	}
	return s, true
}

// isTrue reports whether a property is exactly the JSON literal true.
func (a arguments) isTrue(key string) bool {
	return string(a[key]) == "true"
}

// integer answers a property that is a JSON number with an integral value (5, 5.0, 5e2, -0);
// anything else (strings, fractions, booleans, null) is treated as absent. Values beyond the
// int64 range saturate, which every caller clamps anyway.
func (a arguments) integer(key string) (int64, bool) {
	raw, found := a[key]
	if !found {
		return 0, false
	}
	return integerValue(string(raw))
}

// integerValue decides integrality on the decimal text itself, so that no float rounding can
// turn 5.0000000000000000001 into an integer and no exponent is ever expanded.
func integerValue(num string) (int64, bool) {
	// JSON number grammar: -? int (. frac)? ([eE] [+-]? exp)?
	i := 0
	neg := false
	if i < len(num) && num[i] == '-' {
		neg = true
		i++
	}
	start := i
	for i < len(num) && isDigit(num[i]) {
		i++
	}
	intPart := num[start:i]
	if intPart == "" || len(intPart) > 1 && intPart[0] == '0' {
		return 0, false
	}
	frac := ""
	if i < len(num) && num[i] == '.' {
		i++
		fs := i
		for i < len(num) && isDigit(num[i]) {
			i++
		}
		if i == fs {
			return 0, false
		}
		frac = num[fs:i]
	}
	exp := 0
	if i < len(num) && (num[i] == 'e' || num[i] == 'E') {
		i++
		esign := 1
		if i < len(num) && (num[i] == '+' || num[i] == '-') {
			if num[i] == '-' {
				esign = -1
			}
			i++
		}
		es := i
		for i < len(num) && isDigit(num[i]) {
			i++
		}
		if i == es {
			return 0, false
		}
		digits := num[es:i]
		for len(digits) > 1 && digits[0] == '0' {
			digits = digits[1:]
		}
		if len(digits) > 6 {
			digits = "999999" // an exponent this large only saturates or underflows
		}
		e, _ := strconv.Atoi(digits)
		exp = esign * e
	}
	if i != len(num) {
		return 0, false
	}
	// The value is 0.digits × 10^point, with digits the significant figures.
	digits := intPart + frac
	point := len(intPart) + exp
	lead := 0
	for lead < len(digits) && digits[lead] == '0' {
		lead++
	}
	digits, point = digits[lead:], point-lead
	for len(digits) > 0 && digits[len(digits)-1] == '0' {
		digits = digits[:len(digits)-1]
	}
	if digits == "" {
		return 0, true // zero, however spelled
	}
	if point < len(digits) {
		return 0, false // a non-zero digit after the decimal point
	}
	if point > 19 { // 20 or more integral digits exceed the int64 range
		if neg {
			return math.MinInt64, true
		}
		return math.MaxInt64, true
	}
	var v uint64
	for k := 0; k < point; k++ {
		d := uint64(0)
		if k < len(digits) {
			d = uint64(digits[k] - '0')
		}
		if v > (math.MaxUint64-d)/10 {
			v = math.MaxUint64
			break
		}
		v = v*10 + d
	}
	if neg {
		if v > 1<<63 {
			return math.MinInt64, true
		}
		return -int64(v-1) - 1, true
	}
	if v > math.MaxInt64 {
		return math.MaxInt64, true
	}
	return int64(v), true
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }
