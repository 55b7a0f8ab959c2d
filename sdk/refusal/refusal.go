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

// Problem is one failure of a validator that reports every failure it finds (the announcement
// validator, a run door's errors list).
type Problem struct {
	Code string `json:"code"`
	// Path names the field in the refused document's own tree ("tools[3].name"); "" for the
	// document as a whole.
	Path string `json:"path,omitempty"`
	// Name is the offending tool or document name, where there is one.
	Name string `json:"name,omitempty"`
	// Message is one sentence for people; it may change. A body's errors list carries code,
	// path and name only.
	Message string `json:"-"`
}

// Refusal is a refused request with a stable word.
type Refusal struct {
	Kind    Kind
	Code    string
	Message string
	// Extra keys follow code and message in the body, in this order.
	Extra []Field
	// Errors lists every failure in check order where a validator reports several; a body
	// writes it last, as "errors". Errors[0] is the failure Code names.
	Errors []Problem
	// Cause is an underlying error for logs; it never reaches a client.
	Cause error
}

// New returns a refusal.
func New(kind Kind, code, message string) *Refusal {
	return &Refusal{Kind: kind, Code: code, Message: message}
}

// Newf returns a refusal whose message is formatted.
func Newf(kind Kind, code, format string, args ...any) *Refusal {
	return &Refusal{Kind: kind, Code: code, Message: fmt.Sprintf(format, args...)}
}

// With returns a copy of r with one more extra key.
func (r *Refusal) With(key string, value any) *Refusal {
	c := *r
	c.Extra = append(append([]Field(nil), r.Extra...), Field{key, value})
	return &c
}

// Get returns the value of an extra key.
func (r *Refusal) Get(key string) (any, bool) {
	for _, f := range r.Extra {
		if f.Key == key {
			return f.Value, true
		}
	}
	return nil, false
}

func (r *Refusal) Error() string {
	if r.Cause != nil {
		return r.Code + ": " + r.Message + ": " + r.Cause.Error()
	}
	return r.Code + ": " + r.Message
}

func (r *Refusal) Unwrap() error { return r.Cause }

// Is matches another refusal with the same code, so that errors.Is(err, refusal.New(…, "x", ""))
// and sentinels defined per word work.
func (r *Refusal) Is(target error) bool {
	var t *Refusal
	return errors.As(target, &t) && t.Code == r.Code
}

// As returns the refusal inside err, if any.
func As(err error) (*Refusal, bool) {
	var r *Refusal
	if errors.As(err, &r) {
		return r, true
	}
	return nil, false
}
