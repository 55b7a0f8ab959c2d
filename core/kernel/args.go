package kernel

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/nexuskernel/nexus/core/identity"
)

// Args reads a kernel tool's input the way docs/agent-tools.md#what-a-model-reads orders the
// checks: unknown keys first (only for a closed schema), then each property in schema order,
// presence, type, then value rules. Callers read the properties in schema order; the first failure
// is kept and every later read answers the zero value, so a handler reads all its properties and
// then asks Err. The sentences are the invalid_arguments texts of
// docs/agent-tools.md#what-a-model-reads, byte for byte.
type Args struct {
	obj map[string]json.RawMessage
	err *ArgumentsError
}

// ArgumentsError is an invalid_arguments refusal with its docs/agent-tools.md#what-a-model-reads
// sentence.
type ArgumentsError struct {
	Sentence string
}

func (e *ArgumentsError) Error() string { return WordInvalidArguments + ": " + e.Sentence }

// ReadArgs opens a call's input. params are the schema's properties in schema order; closed is
// true where the schema has additionalProperties: false, and then the first unknown key in byte
// order is refused. An empty or null input reads as {}. An input that is not a JSON object never
// reaches a handler (the pairing law fails it first); it is an error here, not a refusal.
func ReadArgs(input json.RawMessage, params []string, closed bool) (*Args, error) {
	a := &Args{obj: map[string]json.RawMessage{}}
	trimmed := bytes.TrimSpace(input)
	if len(trimmed) == 0 || string(trimmed) == "null" {
		return a, nil
	}
	if err := json.Unmarshal(trimmed, &a.obj); err != nil || a.obj == nil {
		return nil, fmt.Errorf("kernel: the input is not a JSON object")
	}
	if !closed {
		return a, nil
	}
	var unknown []string
	for k := range a.obj {
		if !contains(params, k) {
			unknown = append(unknown, k)
		}
	}
	if len(unknown) > 0 {
		sort.Strings(unknown)
		if len(params) == 0 {
			a.fail("%s is not a parameter; this tool takes no parameters.", unknown[0])
		} else {
			a.fail("%s is not a parameter; the parameters are %s.", unknown[0], strings.Join(params, ", "))
		}
	}
	return a, nil
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

// Err is the first refusal, or nil.
func (a *Args) Err() *ArgumentsError { return a.err }

func (a *Args) fail(format string, args ...any) {
	if a.err == nil {
		a.err = &ArgumentsError{Sentence: fmt.Sprintf(format, args...)}
	}
}

// value answers a property's raw value; a JSON null counts as absent
// (docs/agent-tools.md#what-a-model-reads). A required property that is absent fails "<p> is
// required.".
func (a *Args) value(name string, required bool) (json.RawMessage, bool) {
	if a.err != nil {
		return nil, false
	}
	raw := bytes.TrimSpace(a.obj[name])
	if len(raw) == 0 || string(raw) == "null" {
		if required {
			a.fail("%s is required.", name)
		}
		return nil, false
	}
	return raw, true
}

// String reads a string property. nonEmpty refuses a string that is empty or only white space
// ("<p> is empty."). present is false when the property is absent (or null) or a check failed.
func (a *Args) String(name string, required, nonEmpty bool) (s string, present bool) {
	raw, ok := a.value(name, required)
	if !ok {
		return "", false
	}
	if err := json.Unmarshal(raw, &s); err != nil {
		a.fail("%s must be a string.", name)
		return "", false
	}
	if nonEmpty && strings.TrimSpace(s) == "" {
		a.fail("%s is empty.", name)
		return "", false
	}
	return s, true
}

// Bool reads a boolean property, def when absent.
func (a *Args) Bool(name string, required, def bool) bool {
	raw, ok := a.value(name, required)
	if !ok {
		return def
	}
	var b bool
	if err := json.Unmarshal(raw, &b); err != nil {
		a.fail("%s must be true or false.", name)
		return def
	}
	return b
}

// NoMax marks an integer property with a minimum only.
const NoMax = math.MaxInt64

// Int reads an integer property bounded by min and max (NoMax for a minimum only), def when
// absent. A JSON number whose value is whole counts (5 and 5.0); a string such as "5" does not.
func (a *Args) Int(name string, required bool, min, max, def int64) int64 {
	raw, ok := a.value(name, required)
	if !ok {
		return def
	}
	n, whole := wholeNumber(raw)
	if !whole || n < float64(min) || (max != NoMax && n > float64(max)) {
		if max == NoMax {
			a.fail("%s must be an integer of at least %d.", name, min)
		} else {
			a.fail("%s must be an integer from %d to %d.", name, min, max)
		}
		return def
	}
	if n >= math.MaxInt64 {
		return math.MaxInt64
	}
	return int64(n)
}

// wholeNumber reads a JSON number whose value is a whole number.
func wholeNumber(raw json.RawMessage) (float64, bool) {
	if c := raw[0]; c != '-' && (c < '0' || c > '9') {
		return 0, false
	}
	f, err := strconv.ParseFloat(string(raw), 64)
	if err != nil || math.IsInf(f, 0) || f != math.Trunc(f) {
		return 0, false
	}
	return f, true
}

// Enum reads a string property that must be one of values (schema order), def when absent.
func (a *Args) Enum(name string, required bool, def string, values ...string) string {
	raw, ok := a.value(name, required)
	if !ok {
		return def
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil || !contains(values, s) {
		a.fail("%s must be one of %s.", name, strings.Join(values, ", "))
		return def
	}
	return s
}

// Strings reads an array of strings; present is false when absent.
func (a *Args) Strings(name string, required bool) (out []string, present bool) {
	raw, ok := a.value(name, required)
	if !ok {
		return nil, false
	}
	if err := json.Unmarshal(raw, &out); err != nil || out == nil || hasNull(raw) {
		a.fail("%s must be an array of strings.", name)
		return nil, false
	}
	return out, true
}

// hasNull reports whether an array of strings decoded with a null item (json.Unmarshal reads a
// null item as "", which is not a string).
func hasNull(raw json.RawMessage) bool {
	var items []json.RawMessage
	if json.Unmarshal(raw, &items) != nil {
		return true
	}
	for _, it := range items {
		if string(bytes.TrimSpace(it)) == "null" {
			return true
		}
	}
	return false
}

// Object reads an object property, as its raw JSON.
func (a *Args) Object(name string, required bool) (json.RawMessage, bool) {
	raw, ok := a.value(name, required)
	if !ok {
		return nil, false
	}
	if raw[0] != '{' {
		a.fail("%s must be an object.", name)
		return nil, false
	}
	return raw, true
}

// StringOrNull reads a property where null has a meaning of its own (the exception
// (docs/agent-tools.md#what-a-model-reads)): set is false when absent, null is true for an explicit
// null.
func (a *Args) StringOrNull(name string) (s string, set, null bool) {
	if a.err != nil {
		return "", false, false
	}
	raw, ok := a.obj[name]
	if !ok {
		return "", false, false
	}
	raw = bytes.TrimSpace(raw)
	if string(raw) == "null" {
		return "", true, true
	}
	if err := json.Unmarshal(raw, &s); err != nil {
		a.fail("%s must be a string or null.", name)
		return "", false, false
	}
	return s, true, false
}

// UUID reads a UUID property (canonical 8-4-4-4-12 hex digits, either case).
func (a *Args) UUID(name string, required bool) (string, bool) {
	raw, ok := a.value(name, required)
	if !ok {
		return "", false
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil || !identity.IsUUID(s) {
		a.fail("%s must be a UUID.", name)
		return "", false
	}
	return s, true
}

// HandleOrUUID reads a property naming a member as "@" and a handle, or a UUID.
func (a *Args) HandleOrUUID(name string, required bool) (string, bool) {
	raw, ok := a.value(name, required)
	if !ok {
		return "", false
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		a.fail("%s must be an @handle or a UUID.", name)
		return "", false
	}
	if h, at := strings.CutPrefix(s, "@"); (at && identity.ValidHandle(h)) || (!at && identity.IsUUID(s)) {
		return s, true
	}
	a.fail("%s must be an @handle or a UUID.", name)
	return "", false
}
