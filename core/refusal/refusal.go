package refusal

import (
	"errors"
	"fmt"
)

// Kind classifies a refusal; the HTTP layer maps each kind to one status.
type Kind int

const (
	// Internal is a server fault (500).
	Internal Kind = iota
	// BadRequest is a request the server cannot parse (400).
	BadRequest
	// Unauthorized is a missing, malformed, unknown, revoked or wrong-plane credential (401).
	Unauthorized
	// Forbidden is an authenticated caller without the kind or role a route needs (403).
	Forbidden
	// NotFound is an unknown route or an object the caller may not see (404).
	NotFound
	// MethodNotAllowed is a known route under another method (405).
	MethodNotAllowed
	// Conflict is a request that collides with the current state (409).
	Conflict
	// TooLarge is a body over the route's bound (413).
	TooLarge
	// Unprocessable is a well-formed request whose content is refused (422).
	Unprocessable
	// Unavailable is a dependency that cannot answer now (503).
	Unavailable
	// RangeNotSatisfiable is a byte range that lies outside the representation (416).
	RangeNotSatisfiable
	// TooManyRequests is a caller over a rate or concurrency limit (429); the door says when
	// to retry.
	TooManyRequests
	// RequestTimeout is a request body that did not arrive within its door's bound (408); the
	// connection is closed after the answer.
	RequestTimeout
)

// Field is one extra key of a refusal body.
type Field struct {
	Key   string
	Value any
}

// Error is a refusal with a stable word.
type Error struct {
	Kind    Kind
	Code    string
	Message string
	// Extra keys follow code and message in the body, in this order.
	Extra []Field
	// Cause is an underlying error for logs; it never reaches a client.
	Cause error
}

// New returns a refusal.
func New(kind Kind, code, message string) *Error {
	return &Error{Kind: kind, Code: code, Message: message}
}

// Newf returns a refusal whose message is formatted.
func Newf(kind Kind, code, format string, args ...any) *Error {
	return &Error{Kind: kind, Code: code, Message: fmt.Sprintf(format, args...)}
}

// With returns a copy of e with one more extra key.
func (e *Error) With(key string, value any) *Error {
	c := *e
	c.Extra = append(append([]Field(nil), e.Extra...), Field{key, value})
	return &c
}

// Get returns the value of an extra key.
func (e *Error) Get(key string) (any, bool) {
	for _, f := range e.Extra {
		if f.Key == key {
			return f.Value, true
		}
	}
	return nil, false
}

func (e *Error) Error() string {
	if e.Cause != nil {
		return e.Code + ": " + e.Message + ": " + e.Cause.Error()
	}
	return e.Code + ": " + e.Message
}

func (e *Error) Unwrap() error { return e.Cause }

// Is matches another refusal with the same code, so that errors.Is(err, refusal.New(…, "x", ""))
// and sentinels defined per word work.
func (e *Error) Is(target error) bool {
	var t *Error
	return errors.As(target, &t) && t.Code == e.Code
}

// As returns the refusal inside err, if any.
func As(err error) (*Error, bool) {
	var e *Error
	if errors.As(err, &e) {
		return e, true
	}
	return nil, false
}

// Words every door shares (docs/api.md#conventions, docs/api.md#planes-and-tokens).
const (
	CodeNotFound         = "not_found"
	CodeMethodNotAllowed = "method_not_allowed"
	CodeContentTooLarge  = "content_too_large"
	CodeRequestTimeout   = "request_timeout"
	CodeUnauthorized     = "unauthorized"
	CodeInternal         = "internal_error"
	CodeParameterInvalid = "parameter_invalid"
	CodeParameterMissing = "parameter_missing"
	CodeValidationFailed = "validation_failed"
	CodeNotUser          = "not_user"
	CodeNotAgent         = "not_agent"
	CodeNotAuthorized    = "not_authorized"
	CodeUnavailable      = "unavailable"
	// CodeStaleObject: a whole-replacement door's expected_lock_version is not the current one;
	// the refusal carries current_lock_version.
	CodeStaleObject = "stale_object"
)

// Words more than one service answers with: the declaration compiler, the run engine and the
// kernel's discovery tools refuse or fail with the same word for the same fact
// (docs/agent-tools.md#declaration-refusals, docs/api.md#runs).
const (
	// CodeToolNotServed: no runner, kernel family or tool provider serves the tool.
	CodeToolNotServed = "tool_not_served"
	// CodeToolNotDeclared: the tool is not in the frozen declaration.
	CodeToolNotDeclared = "tool_not_declared"
	// CodeRunnerNotEligible: the named runner is not an eligible runner of the workspace.
	CodeRunnerNotEligible = "runner_not_eligible"
)
