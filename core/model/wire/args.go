package wire

import (
	"bytes"
	"encoding/json"
	"strings"
)

// emptyObject is what a replayed call whose arguments are not a JSON object carries.
var emptyObject = []byte("{}")

// ObjectArguments reads a replayed call's arguments: blank reads as {}; a JSON object is
// returned as written (raw) and compacted; anything else (malformed, truncated, an array, a
// string) is not an object, and the wire then carries {} instead, because several servers
// refuse every later request of a conversation whose history holds unparsable arguments.
func ObjectArguments(arguments string) (raw string, compact []byte, object bool) {
	if strings.TrimSpace(arguments) == "" {
		return "{}", emptyObject, true
	}
	b := []byte(arguments)
	trimmed := bytes.TrimSpace(b)
	if len(trimmed) == 0 || trimmed[0] != '{' || !json.Valid(trimmed) {
		return "{}", emptyObject, false
	}
	if !bytes.ContainsAny(trimmed, " \t\r\n") {
		return arguments, trimmed, true
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, trimmed); err != nil {
		return "{}", emptyObject, false
	}
	return arguments, buf.Bytes(), true
}

// CompactOrVerbatim is how an answer's streamed tool input becomes its arguments string: compact
// JSON when it is valid, kept verbatim when it is not (cut by the output limit), {} when empty.
func CompactOrVerbatim(input []byte) string {
	t := bytes.TrimSpace(input)
	if len(t) == 0 {
		return "{}"
	}
	if !json.Valid(t) {
		return string(input)
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, t); err != nil {
		return string(input)
	}
	return buf.String()
}
