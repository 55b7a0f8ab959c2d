package declare

import (
	"errors"
	"fmt"
	"unicode/utf8"

	"github.com/nexuskernel/nexus/core/refusal"
)

// Refusal is one refused declaration: the word, the request field and the path inside it, and
// the facts an acceptance refusal reports. The compiler reports the first failing check only.
// A Door turns it into the envelope of the route that asked.
type Refusal struct {
	Word string
	// Field is the request field the refusal is about (FieldToolDefinitions, FieldKernelTools,
	// …), or "" when it is about no field.
	Field string
	// Index is the authored index of the offending entry or list item, or -1.
	Index int
	// Suffix is the path inside Field: "[1].params.bg.maps_to", or "" for the field itself.
	Suffix string
	// Detail is a human sentence; tests and clients never read it.
	Detail string
	// Callable, RunnerID and ToolName are the acceptance facts (the extra fields
	// (docs/api.md#agent-profiles)).
	Callable string
	RunnerID string
	ToolName string
	// Assembled marks a refusal of the set acceptance assembled rather than of a request
	// field: the bound of the final set, or an imported tool that still collides after
	// qualification. It carries no path.
	Assembled bool
}

// Path is the unprefixed path: Field followed by Suffix ("tool_definitions[1].params.bg").
func (r *Refusal) Path() string { return r.Field + r.Suffix }

func (r *Refusal) Error() string {
	if p := r.Path(); p != "" {
		return p + ": " + r.Word + ": " + r.Detail
	}
	return r.Word + ": " + r.Detail
}

// AsRefusal returns the *Refusal inside err.
func AsRefusal(err error) (*Refusal, bool) {
	var r *Refusal
	ok := errors.As(err, &r)
	return r, ok
}

func refuse(word, field string, index int, suffix, format string, args ...any) *Refusal {
	return &Refusal{Word: word, Field: field, Index: index, Suffix: suffix, Detail: fmt.Sprintf(format, args...)}
}

// entryRefusal refuses entry i of tool_definitions at the path suffix after "[i]".
func entryRefusal(word string, i int, rest, format string, args ...any) *Refusal {
	return refuse(word, FieldToolDefinitions, i, fmt.Sprintf("[%d]%s", i, rest), format, args...)
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

// Refuse turns a *Refusal inside err into the door's *refusal.Error. Any other error, and nil,
// is returned unchanged.
func (d Door) Refuse(err error) error {
	r, ok := AsRefusal(err)
	if !ok {
		return err
	}
	return d.Envelope(r)
}

// Envelope is the door's refusal for r.
func (d Door) Envelope(r *Refusal) *refusal.Error {
	switch d.kind {
	case profileDoor:
		return d.validationFailed(r)
	case assemblyDoor:
		return d.assembly(r)
	case runDoor:
		return d.run(r)
	default:
		return d.acceptance(r, r.Word)
	}
}

func (d Door) path(r *Refusal) string {
	field := r.Field
	if d.kind == runDoor && field == FieldToolDefinitions {
		field = fieldStepTools
	}
	if field == "" || field == FieldDefaultRunner {
		// The selection is a top-level request field on every door.
		return field + r.Suffix
	}
	return d.prefix + field + r.Suffix
}

func (d Door) message(r *Refusal) string {
	if p := d.path(r); p != "" && !r.Assembled {
		return p + ": " + r.Word + ": " + r.Detail
	}
	if r.Field != "" {
		return r.Field + ": " + r.Word + ": " + r.Detail
	}
	return r.Word + ": " + r.Detail
}

func (d Door) validationFailed(r *Refusal) *refusal.Error {
	e := refusal.New(refusal.Unprocessable, refusal.CodeValidationFailed, d.message(r)).
		With(extraField, r.Field).With(extraWord, r.Word)
	if r.Assembled {
		return e.With(extraCallable, r.Callable)
	}
	return e.With(extraPath, d.path(r))
}

func (d Door) assembly(r *Refusal) *refusal.Error {
	switch r.Word {
	case WordContentTooLarge:
		e := refusal.New(refusal.TooLarge, refusal.CodeContentTooLarge, d.message(r)).With(extraField, r.Field)
		if r.Assembled {
			return e
		}
		return e.With(extraPath, d.path(r))
	case WordRunnerNotDeclared, WordRunnerNotEligible, WordToolNotServed, WordToolNotDeclared, WordContextNotAuthorable:
		return d.acceptance(r, r.Word)
	default:
		return d.validationFailed(r)
	}
}

func (d Door) run(r *Refusal) *refusal.Error {
	code := r.Word
	if code == WordInvalid {
		code = WordInvalidTools
	}
	e := d.acceptance(r, code)
	item := ErrorItem{Code: code}
	if !r.Assembled {
		item.Path = d.path(r)
	}
	return e.With(extraErrors, []ErrorItem{item})
}

// ErrorItem is one failure in a run door's errors list.
type ErrorItem struct {
	Code string `json:"code"`
	Path string `json:"path,omitempty"`
}

// acceptance writes the word as the code with the facts docs/api.md#agent-profiles lists for it, in
// its order.
func (d Door) acceptance(r *Refusal, code string) *refusal.Error {
	e := refusal.New(refusal.Unprocessable, code, d.message(r))
	switch r.Word {
	case WordRunnerNotDeclared:
		return e.With(extraRunnerID, r.RunnerID).With(extraPath, FieldDefaultRunner)
	case WordRunnerNotEligible:
		e = e.With(extraRunnerID, r.RunnerID)
		if r.Callable != "" {
			e = e.With(extraCallable, r.Callable)
		}
		return e
	case WordToolNotServed:
		return e.With(extraCallable, r.Callable).With(extraRunnerID, r.RunnerID).With(extraToolName, r.ToolName)
	case WordToolNotDeclared:
		return e.With(extraPath, d.path(r)).With(extraToolName, r.ToolName)
	}
	if r.Callable != "" {
		e = e.With(extraCallable, r.Callable)
	}
	if p := d.path(r); p != "" && !r.Assembled {
		e = e.With(extraPath, p)
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
	extraErrors   = "errors"
)
