package declare

import (
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/nexuskernel/nexus/core/refusal"
)

// acceptanceFacts are the acceptance facts a refusal reports (docs/api.md#agent-profiles).
type acceptanceFacts struct {
	callable, runnerID, toolName string
}

// rooted is the refusal rooted at the declaration: word about field, at path (the unprefixed
// path, or "" for a refusal of the assembled set).
func rooted(word, field, path string, f acceptanceFacts, detail string) *refusal.Error {
	r := refusal.New(refusal.Unprocessable, word, detail)
	located := [...][2]string{{extraField, field}, {extraCallable, f.callable}, {extraRunnerID, f.runnerID},
		{extraToolName, f.toolName}}
	for _, kv := range located {
		if kv[1] != "" {
			r.Extra = append(r.Extra, refusal.Field{Key: kv[0], Value: kv[1]})
		}
	}
	r.Errors = []refusal.Problem{{Code: word, Path: path, Name: f.toolName}}
	return r
}

// FieldRefusal refuses the request field at the path suffix inside it ("[1].params.bg.maps_to",
// or "" for the field itself), rooted at the declaration.
func FieldRefusal(word, field, suffix, detail string) *refusal.Error {
	return rooted(word, field, field+suffix, acceptanceFacts{}, detail)
}

func refuse(word, field, suffix, format string, args ...any) *refusal.Error {
	return FieldRefusal(word, field, suffix, fmt.Sprintf(format, args...))
}

// entryRefusal refuses entry i of tool_definitions at the path suffix after "[i]".
func entryRefusal(word string, i int, rest, format string, args ...any) *refusal.Error {
	return refuse(word, FieldToolDefinitions, fmt.Sprintf("[%d]%s", i, rest), format, args...)
}

// assembledRefusal refuses the assembled set: it carries no path, only the facts.
func assembledRefusal(word, field string, f acceptanceFacts, detail string) *refusal.Error {
	return rooted(word, field, "", f, detail)
}

// declaration returns the refusal rooted at the declaration inside err: Unprocessable, one
// problem naming its code, and no extra key but the located facts, so that another validator's
// refusal (which carries path and name) passes unchanged. A door's envelope is written, never
// handed to another door.
func declaration(err error) (*refusal.Error, bool) {
	r, ok := refusal.As(err)
	if !ok || r.Kind != refusal.Unprocessable || len(r.Errors) != 1 || r.Errors[0].Code != r.Code {
		return nil, false
	}
	for _, f := range r.Extra {
		switch f.Key {
		case extraField, extraCallable, extraRunnerID, extraToolName:
		default:
			return nil, false
		}
	}
	return r, true
}

// Fault is err for a caller that compiles a set the server stored itself (a round's frozen set,
// which always compiles to itself): a refusal rooted at the declaration is then an internal
// fault, its word no client's, so it becomes a plain error reading "path: word: detail". Any
// other error, and nil, is returned unchanged.
func Fault(err error) error {
	r, ok := declaration(err)
	if !ok {
		return err
	}
	if p := unprefixed(r); p != "" {
		return errors.New(p + ": " + r.Code + ": " + r.Message)
	}
	return errors.New(r.Code + ": " + r.Message)
}

// fact is the string value of an extra key of r, or "".
func fact(r *refusal.Error, key string) string {
	v, _ := r.Get(key)
	s, _ := v.(string)
	return s
}

// quote renders a client string for a message, clipped to maxMessageQuote code points.
func quote(s string) string {
	if utf8.RuneCountInString(s) > maxMessageQuote {
		n := 0
		for i := range s {
			if n == maxMessageQuote {
				s = s[:i] + "…"
				break
			}
			n++
		}
	}
	return fmt.Sprintf("%q", s)
}

// Door is one route that accepts declarations; it decides the refusal envelope
// (docs/agent-tools.md#declaration-refusals).
type Door struct {
	kind   doorKind
	prefix string
}

type doorKind int

const (
	profileDoor doorKind = iota
	assemblyDoor
	runDoor
	narrowingDoor
)

var (
	// ProfileDoor is PUT /agent_api/v1/profile/configuration: every refusal is 422
	// validation_failed with field, word and path under "configuration.".
	ProfileDoor = Door{kind: profileDoor, prefix: "configuration."}
	// AssemblyDoor is POST /agent_api/v1/tools/assembly: grammar words as 422
	// validation_failed, bounds as 413 content_too_large, acceptance words as their own 422.
	AssemblyDoor = Door{kind: assemblyDoor, prefix: "configuration."}
)

// RunDoor is a run-authoring door whose declaration sits at prefix (for example
// "steps[0].model."): the word is the code, the model step's field is "tools", the word invalid
// reads invalid_tools, and the one failure is also listed in errors.
func RunDoor(prefix string) Door { return Door{kind: runDoor, prefix: prefix} }

// NarrowingDoor is a door that narrows by tool_names at prefix (for example "message."):
// 422 tool_not_declared with path and tool_name.
func NarrowingDoor(prefix string) Door { return Door{kind: narrowingDoor, prefix: prefix} }

// Refuse re-roots the refusal rooted at the declaration inside err into the door's envelope. Any
// other error, and nil, is returned unchanged.
func (d Door) Refuse(err error) error {
	r, ok := declaration(err)
	if !ok {
		return err
	}
	return d.Envelope(r)
}

// Envelope is the door's refusal for r, a refusal rooted at the declaration.
func (d Door) Envelope(r *refusal.Error) *refusal.Error {
	switch d.kind {
	case profileDoor:
		return d.validationFailed(r)
	case assemblyDoor:
		return d.assembly(r)
	case runDoor:
		return d.run(r)
	default:
		return d.acceptance(r, r.Code)
	}
}

// unprefixed is r's unprefixed path, "" for a refusal of the assembled set.
func unprefixed(r *refusal.Error) string {
	if len(r.Errors) == 0 {
		return ""
	}
	return r.Errors[0].Path
}

// path is r's path on the door, "" for a refusal of the assembled set.
func (d Door) path(r *refusal.Error) string {
	p := unprefixed(r)
	if p == "" {
		return ""
	}
	field := fact(r, extraField)
	if d.kind == narrowingDoor && field != FieldToolNames && field != FieldDefaultRunner {
		// A turn narrows a stored profile: the profile's fields are not the message's, so a
		// refusal of one names its field (in the message) rather than a path in the request.
		return ""
	}
	suffix := strings.TrimPrefix(p, field)
	if d.kind == runDoor && field == FieldToolDefinitions {
		field = fieldStepTools
	}
	if field == "" || field == FieldDefaultRunner {
		// The selection is a top-level request field on every door.
		return field + suffix
	}
	return d.prefix + field + suffix
}

func (d Door) message(r *refusal.Error) string {
	if p := d.path(r); p != "" {
		return p + ": " + r.Code + ": " + r.Message
	}
	if field := fact(r, extraField); field != "" {
		return field + ": " + r.Code + ": " + r.Message
	}
	return r.Code + ": " + r.Message
}

func (d Door) validationFailed(r *refusal.Error) *refusal.Error {
	e := refusal.New(refusal.Unprocessable, refusal.CodeValidationFailed, d.message(r)).
		With(extraField, fact(r, extraField)).With(extraWord, r.Code)
	if unprefixed(r) == "" {
		return e.With(extraCallable, fact(r, extraCallable))
	}
	return e.With(extraPath, d.path(r))
}

func (d Door) assembly(r *refusal.Error) *refusal.Error {
	switch r.Code {
	case WordContentTooLarge:
		e := refusal.New(refusal.TooLarge, refusal.CodeContentTooLarge, d.message(r)).With(extraField, fact(r, extraField))
		if unprefixed(r) == "" {
			return e
		}
		return e.With(extraPath, d.path(r))
	case WordRunnerNotDeclared, WordRunnerNotEligible, WordToolNotServed, WordToolNotDeclared, WordContextNotAuthorable:
		return d.acceptance(r, r.Code)
	default:
		return d.validationFailed(r)
	}
}

// run writes the word as the code (invalid reads invalid_tools) and lists the one failure in
// Errors, which the body writes last as "errors".
func (d Door) run(r *refusal.Error) *refusal.Error {
	code := r.Code
	if code == WordInvalid {
		code = WordInvalidTools
	}
	e := d.acceptance(r, code)
	e.Errors = []refusal.Problem{{Code: code, Path: d.path(r)}}
	return e
}

// acceptance writes the code with the facts docs/api.md#agent-profiles lists for the word, in its
// order.
func (d Door) acceptance(r *refusal.Error, code string) *refusal.Error {
	e := refusal.New(refusal.Unprocessable, code, d.message(r))
	callable, runnerID := fact(r, extraCallable), fact(r, extraRunnerID)
	switch r.Code {
	case WordRunnerNotDeclared:
		return e.With(extraRunnerID, runnerID).With(extraPath, FieldDefaultRunner)
	case WordRunnerNotEligible:
		e = e.With(extraRunnerID, runnerID)
		if callable != "" {
			e = e.With(extraCallable, callable)
		}
		return e
	case WordToolNotServed:
		if runnerID != "" {
			return e.With(extraCallable, callable).With(extraRunnerID, runnerID).With(extraToolName, fact(r, extraToolName))
		}
		// A tool-provider import or a bare name: no Runner to name.
		if callable != "" {
			e = e.With(extraCallable, callable)
		}
		if p := d.path(r); p != "" {
			e = e.With(extraPath, p)
		}
		return e.With(extraToolName, fact(r, extraToolName))
	case WordToolNotDeclared:
		return e.With(extraPath, d.path(r)).With(extraToolName, fact(r, extraToolName))
	}
	if callable != "" {
		e = e.With(extraCallable, callable)
	}
	if p := d.path(r); p != "" {
		e = e.With(extraPath, p)
	}
	if name := fact(r, extraToolName); name != "" {
		// An import's refusal names the tool or selector it is about.
		e = e.With(extraToolName, name)
	}
	return e
}

const (
	extraField    = "field"
	extraWord     = "word"
	extraPath     = "path"
	extraCallable = "callable"
	extraToolName = "tool_name"
	extraRunnerID = "runner_executor_public_id"
)
