package runs

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"unicode/utf8"

	"github.com/nexuskernel/nexus/core/envelope"
	"github.com/nexuskernel/nexus/core/steps"
	"github.com/nexuskernel/nexus/sdk/jsonwire"
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
	if n := utf8.RuneCountInString(name); n > steps.MaxToolNameLen {
		return Verdict{ToolName: clipRunes(name, steps.MaxToolNameLen), Error: &TaskError{Key: KeyUnknownTool,
			Detail: fmt.Sprintf("The called name is %d characters long; the bound is %d.", n, steps.MaxToolNameLen)}}
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
		return Verdict{ToolName: name, Error: &TaskError{Key: KeyInvalidToolArguments, Detail: envelope.CutUTF8(problem, ArgumentsDetailBytes)}}
	}
	if path := jsonwire.UnstorablePath(args); path != "" {
		// Checked before the size so that canonical encoding, which refuses such values, has a
		// value it can measure; the law's order still holds, because a value the store cannot
		// keep has no canonical size to compare.
		canon, err := jsonwire.CanonicalValue(args)
		if err == nil && len(canon) > steps.MaxToolInputBytes {
			return Verdict{ToolName: name, Error: &TaskError{Key: KeyToolInputTooLarge,
				Detail: fmt.Sprintf("Arguments are %d bytes; the bound is %d.", len(canon), steps.MaxToolInputBytes)}}
		}
		return Verdict{ToolName: name, Error: &TaskError{Key: KeyInvalidToolInput, Detail: path + " holds a value the store cannot keep."}}
	}
	canon, err := jsonwire.CanonicalValue(args)
	if err != nil {
		return Verdict{ToolName: name, Error: &TaskError{Key: KeyInvalidToolInput, Detail: "$ holds a value the store cannot keep."}}
	}
	if len(canon) > steps.MaxToolInputBytes {
		return Verdict{ToolName: name, Error: &TaskError{Key: KeyToolInputTooLarge,
			Detail: fmt.Sprintf("Arguments are %d bytes; the bound is %d.", len(canon), steps.MaxToolInputBytes)}}
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
