package refusal

import (
	"github.com/nexuskernel/nexus/sdk/refusal"
)

// Error is the one refusal type, sdk/refusal's: core/refusal adds no type of its own, so a
// refusal built by a service, the announcement validator or a plugin's host is the same value the
// one error writer reads.
type Error = refusal.Refusal

// Kind classifies a refusal; the HTTP layer maps each kind to one status.
type Kind = refusal.Kind

// Field is one extra key of a refusal body.
type Field = refusal.Field

// Problem is one failure in a refusal's list of every failure, written last as "errors".
type Problem = refusal.Problem

// The kinds, sdk/refusal's.
const (
	Internal            = refusal.Internal
	BadRequest          = refusal.BadRequest
	Unauthorized        = refusal.Unauthorized
	Forbidden           = refusal.Forbidden
	NotFound            = refusal.NotFound
	MethodNotAllowed    = refusal.MethodNotAllowed
	Conflict            = refusal.Conflict
	TooLarge            = refusal.TooLarge
	Unprocessable       = refusal.Unprocessable
	Unavailable         = refusal.Unavailable
	RangeNotSatisfiable = refusal.RangeNotSatisfiable
	TooManyRequests     = refusal.TooManyRequests
	RequestTimeout      = refusal.RequestTimeout
)

// New returns a refusal.
func New(kind Kind, code, message string) *Error { return refusal.New(kind, code, message) }

// Newf returns a refusal whose message is formatted.
func Newf(kind Kind, code, format string, args ...any) *Error {
	return refusal.Newf(kind, code, format, args...)
}

// As returns the refusal inside err, if any.
func As(err error) (*Error, bool) { return refusal.As(err) }

// Words every door shares (docs/api.md#conventions, docs/api.md#planes-and-tokens).
const (
	CodeNotFound         = refusal.CodeNotFound
	CodeMethodNotAllowed = "method_not_allowed"
	CodeContentTooLarge  = refusal.CodeContentTooLarge
	CodeRequestTimeout   = "request_timeout"
	CodeUnauthorized     = "unauthorized"
	CodeInternal         = "internal_error"
	CodeParameterInvalid = refusal.CodeParameterInvalid
	CodeParameterMissing = refusal.CodeParameterMissing
	CodeValidationFailed = refusal.CodeValidationFailed
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
	// CodeReservedToolName: a client names a kernel tool where only another executor's tool
	// belongs (a tool step, a tool-provider import).
	CodeReservedToolName = "reserved_tool_name"
)
