package announce

import "fmt"

// The words an announcement refusal carries (docs/api.md#the-executor-plane,
// docs/plugins.md#what-the-host-checks). They are contracts: clients and plugin operators match on
// them byte for byte.
const (
	// CodeReservedNamespace: a kernel name of a reserved namespace, in either spelling.
	CodeReservedNamespace = "reserved_namespace"
	// CodeInvalidAnnouncement: a malformed entry.
	CodeInvalidAnnouncement = "invalid_announcement"
	// CodeValidationFailed: a bound of docs/api.md#the-executor-plane
	CodeValidationFailed = "validation_failed"
	// CodeParameterInvalid: the HTTP body is not one JSON object (ParseAnnouncement only).
	CodeParameterInvalid = "parameter_invalid"
	// CodeParameterMissing: the HTTP body has no tools (ParseAnnouncement only).
	CodeParameterMissing = "parameter_missing"
	// CodeContentTooLarge: the HTTP body is over MaxBodyBytes (ParseAnnouncement only).
	CodeContentTooLarge = "content_too_large"
)

// Problem is one failure found in an announcement.
type Problem struct {
	Code string `json:"code"`
	// Path names the field in the announcement's own tree ("tools[3].name"); "" for the
	// body as a whole.
	Path string `json:"path,omitempty"`
	// Name is the offending tool or document name, where there is one.
	Name string `json:"name,omitempty"`
	// Message is one sentence for people; it may change. The HTTP body's errors list carries
	// code, path and name only.
	Message string `json:"-"`
}

// Refusal is a refused announcement: the first failure, in check order, and every failure
// found. Nothing of a refused announcement is stored.
type Refusal struct {
	Code    string
	Path    string
	Name    string
	Message string
	// Errors lists every failure in check order; Errors[0] is the failure named above.
	Errors []Problem
}

func (r *Refusal) Error() string { return r.Code + ": " + r.Message }

// Status is the HTTP status the announcement door answers with this refusal.
func (r *Refusal) Status() int {
	switch r.Code {
	case CodeParameterInvalid, CodeParameterMissing:
		return 400
	case CodeContentTooLarge:
		return 413
	default:
		return 422
	}
}

// refusalOf builds the refusal from the problems found, or nil when there are none.
func refusalOf(problems []Problem) *Refusal {
	if len(problems) == 0 {
		return nil
	}
	first := problems[0]
	return &Refusal{
		Code:    first.Code,
		Path:    first.Path,
		Name:    first.Name,
		Message: first.Message,
		Errors:  problems,
	}
}

// single is a refusal with one failure.
func single(code, path, message string) *Refusal {
	return refusalOf([]Problem{{Code: code, Path: path, Message: message}})
}

// problems collects failures in check order.
type problems []Problem

func (ps *problems) add(code, path, name, format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	if path != "" {
		msg = path + ": " + msg
	}
	*ps = append(*ps, Problem{Code: code, Path: path, Name: name, Message: msg})
}
