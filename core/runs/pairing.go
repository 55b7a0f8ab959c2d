package runs

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/nexuskernel/nexus/core/canonjson"
)

// ReplacementKey is the pairing key the kernel mints for a call whose provider id is empty, too
// long or repeated (docs/development.md#how-the-kernel-runs-work check 1): "kc_" and the first 24
// hex digits of SHA-256 over round key, NUL, call index, NUL, original id.
func ReplacementKey(roundKey string, index int, originalID string) string {
	h := sha256.New()
	h.Write([]byte(roundKey))
	h.Write([]byte{0})
	h.Write([]byte(strconv.Itoa(index)))
	h.Write([]byte{0})
	h.Write([]byte(originalID))
	return "kc_" + hex.EncodeToString(h.Sum(nil))[:24]
}

// PairingKeys applies check 1 to every call id of an answer: an id of 1..128 characters that
// does not repeat an earlier one is kept, any other is replaced.
func PairingKeys(roundKey string, ids []string) []string {
	out := make([]string, len(ids))
	seen := map[string]bool{}
	for i, id := range ids {
		if id == "" || utf8.RuneCountInString(id) > MaxCallIDLen || seen[id] {
			out[i] = ReplacementKey(roundKey, i, id)
		} else {
			out[i] = id
		}
		seen[id] = true
	}
	return out
}

// Verdict is what checks 2-6 of the pairing law say about one call; checks 1 (pairing key)
// and 7 (addressing) are applied by the caller around it.
type Verdict struct {
	// Error is set when the call is born failed.
	Error *TaskError
	// ToolName is the row's tool_name when born failed by check 2 (the called name clipped).
	ToolName string
	// Input is the arguments as a JSON object when every check passed.
	Input json.RawMessage
}

// CheckCall applies checks 2-6 of the pairing law (docs/development.md#how-the-kernel-runs-work) to
// one call: declared is the answer of the round's frozen declaration for the called name (after
// alias lookup), truncated says the answer's finish was length.
func CheckCall(name, arguments string, declared, truncated bool) Verdict {
	if n := utf8.RuneCountInString(name); n > MaxToolNameLen {
		return Verdict{ToolName: clipRunes(name, MaxToolNameLen), Error: &TaskError{Key: KeyUnknownTool,
			Detail: fmt.Sprintf("The called name is %d characters long; the bound is %d.", n, MaxToolNameLen)}}
	}
	if !declared {
		return Verdict{ToolName: name, Error: &TaskError{Key: KeyUnknownTool, Detail: name + " is not one of this round's tools."}}
	}
	args := []byte(arguments)
	if len(bytes.TrimSpace(args)) == 0 {
		args = []byte("{}")
	}
	if problem := objectProblem(args); problem != "" {
		if truncated {
			return Verdict{ToolName: name, Error: &TaskError{Key: KeyTruncatedToolArguments,
				Detail: "The model ran out of output tokens while writing the arguments."}}
		}
		return Verdict{ToolName: name, Error: &TaskError{Key: KeyInvalidToolArguments, Detail: CutUTF8(problem, ArgumentsDetailBytes)}}
	}
	if path := unstorable(args); path != "" {
		// Checked before the size so that canonical encoding, which refuses such values, has a
		// value it can measure; the law's order still holds, because a value the store cannot
		// keep has no canonical size to compare.
		canon, err := canonjson.Canonicalize(args)
		if err == nil && len(canon) > MaxToolInputBytes {
			return Verdict{ToolName: name, Error: &TaskError{Key: KeyToolInputTooLarge,
				Detail: fmt.Sprintf("Arguments are %d bytes; the bound is %d.", len(canon), MaxToolInputBytes)}}
		}
		return Verdict{ToolName: name, Error: &TaskError{Key: KeyInvalidToolInput, Detail: path + " holds a value the store cannot keep."}}
	}
	canon, err := canonjson.Canonicalize(args)
	if err != nil {
		return Verdict{ToolName: name, Error: &TaskError{Key: KeyInvalidToolInput, Detail: "$ holds a value the store cannot keep."}}
	}
	if len(canon) > MaxToolInputBytes {
		return Verdict{ToolName: name, Error: &TaskError{Key: KeyToolInputTooLarge,
			Detail: fmt.Sprintf("Arguments are %d bytes; the bound is %d.", len(canon), MaxToolInputBytes)}}
	}
	return Verdict{ToolName: name, Input: json.RawMessage(args)}
}

func clipRunes(s string, n int) string {
	i := 0
	for j := range s {
		if i == n {
			return s[:j]
		}
		i++
	}
	return s
}

// objectProblem says, in a few words, why raw is not one JSON object; "" when it is.
func objectProblem(raw []byte) string {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		var se *json.SyntaxError
		if errors.As(err, &se) {
			return fmt.Sprintf("The arguments are not valid JSON: %s (at byte %d).", se.Error(), se.Offset)
		}
		return "The arguments are not valid JSON: " + err.Error() + "."
	}
	if _, err := dec.Token(); err == nil {
		return "The arguments hold more than one JSON value."
	}
	switch v.(type) {
	case map[string]any:
		return ""
	case []any:
		return "The arguments are a JSON array, not an object."
	case string:
		return "The arguments are a JSON string, not an object."
	case json.Number:
		return "The arguments are a JSON number, not an object."
	case bool:
		return "The arguments are a JSON boolean, not an object."
	default:
		return "The arguments are JSON null, not an object."
	}
}

// unstorable finds the first value the store cannot keep (check 6): a string with U+0000 or
// an unpaired surrogate escape, or a number outside the IEEE-754 double range. It answers the
// JSON path of the first one ("$.a[0]"), or "" when none.
func unstorable(raw []byte) string {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var walk func(path string) (string, error)
	walk = func(path string) (string, error) {
		tok, err := dec.Token()
		if err != nil {
			return "", err
		}
		switch v := tok.(type) {
		case json.Delim:
			switch v {
			case '{':
				for dec.More() {
					kt, err := dec.Token()
					if err != nil {
						return "", err
					}
					k := kt.(string)
					p := path + "." + k
					if strings.ContainsRune(k, 0) || strings.ContainsRune(k, utf8.RuneError) {
						return p, nil
					}
					if bad, err := walk(p); bad != "" || err != nil {
						return bad, err
					}
				}
				_, err = dec.Token()
				return "", err
			case '[':
				i := 0
				for dec.More() {
					if bad, err := walk(fmt.Sprintf("%s[%d]", path, i)); bad != "" || err != nil {
						return bad, err
					}
					i++
				}
				_, err = dec.Token()
				return "", err
			}
		case string:
			if strings.ContainsRune(v, 0) || strings.ContainsRune(v, utf8.RuneError) {
				return path, nil
			}
		case json.Number:
			f, err := strconv.ParseFloat(v.String(), 64)
			if err != nil || math.IsInf(f, 0) {
				return path, nil
			}
		}
		return "", nil
	}
	if hasLoneSurrogateEscape(raw) {
		// encoding/json turns a lone surrogate escape into U+FFFD, which the walk reports at its
		// path; a real U+FFFD in the input is storable, so re-check that one exists.
		bad, _ := walk("$")
		return bad
	}
	dec = json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if bytes.Contains(raw, []byte(`\u0000`)) || hasHugeNumber(raw) {
		bad, _ := walk("$")
		return bad
	}
	return ""
}

// hasLoneSurrogateEscape reports whether raw contains a \uD800-\uDFFF escape not paired.
func hasLoneSurrogateEscape(raw []byte) bool {
	s := string(raw)
	for i := 0; i+6 <= len(s); i++ {
		if s[i] != '\\' {
			continue
		}
		if s[i+1] == '\\' {
			i++
			continue
		}
		if s[i+1] != 'u' {
			continue
		}
		r, err := strconv.ParseUint(s[i+2:i+6], 16, 32)
		if err != nil {
			continue
		}
		if utf16.IsSurrogate(rune(r)) {
			if r < 0xDC00 && i+12 <= len(s) && s[i+6] == '\\' && s[i+7] == 'u' {
				r2, err := strconv.ParseUint(s[i+8:i+12], 16, 32)
				if err == nil && r2 >= 0xDC00 && r2 <= 0xDFFF {
					i += 11
					continue
				}
			}
			return true
		}
		i += 5
	}
	return false
}

// hasHugeNumber is a cheap pre-check: an exponent or a long digit run is the only way to write
// a number past the double range.
func hasHugeNumber(raw []byte) bool {
	return bytes.ContainsAny(raw, "eE") || len(raw) > 300
}
