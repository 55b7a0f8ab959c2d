package announce

import (
	"fmt"

	"github.com/nexuskernel/nexus/sdk/refusal"
)

// The words an announcement refusal carries (docs/api.md#the-executor-plane,
// docs/plugins.md#what-the-host-checks). They are contracts: clients and plugin operators match on
// them byte for byte.
const (
	// CodeReservedNamespace: a kernel name of a reserved namespace, in either spelling.
	CodeReservedNamespace = "reserved_namespace"
	// CodeInvalidAnnouncement: a malformed entry.
	CodeInvalidAnnouncement = "invalid_announcement"
	// CodeValidationFailed: a bound of docs/api.md#the-executor-plane
	CodeValidationFailed = refusal.CodeValidationFailed
	// CodeParameterInvalid: the HTTP body is not one JSON object (ParseAnnouncement only).
	CodeParameterInvalid = refusal.CodeParameterInvalid
	// CodeParameterMissing: the HTTP body has no tools (ParseAnnouncement only).
	CodeParameterMissing = refusal.CodeParameterMissing
	// CodeContentTooLarge: the HTTP body is over MaxBodyBytes (ParseAnnouncement only).
	CodeContentTooLarge = refusal.CodeContentTooLarge
)

// Keys of an announcement refusal's body: the first failure's path and name follow code and
// message; the list of every failure is the refusal's Errors.
const (
	keyRefusalPath = "path"
	keyRefusalName = "name"
)

// refusalOf builds the refusal from the problems found, or nil when there are none: the first
// failure, in check order, names the word, message, path and name, and a 422 lists every failure
// found in Errors (docs/api.md#the-executor-plane). It is the door's body as it stands, so the
// HTTP announcement door and the plugin host report the same value. Nothing of a refused
// announcement is stored.
func refusalOf(problems []refusal.Problem) *refusal.Refusal {
	if len(problems) == 0 {
		return nil
	}
	first := problems[0]
	kind := refusal.Unprocessable
	switch first.Code {
	case CodeParameterInvalid, CodeParameterMissing:
		kind = refusal.BadRequest
	case CodeContentTooLarge:
		kind = refusal.TooLarge
	}
	r := refusal.New(kind, first.Code, first.Message)
	if first.Path != "" {
		r = r.With(keyRefusalPath, first.Path)
	}
	if first.Name != "" {
		r = r.With(keyRefusalName, first.Name)
	}
	if kind == refusal.Unprocessable {
		r.Errors = problems
	}
	return r
}

// single is a refusal with one failure.
func single(code, path, message string) *refusal.Refusal {
	return refusalOf([]refusal.Problem{{Code: code, Path: path, Message: message}})
}

// problems collects failures in check order.
type problems []refusal.Problem

func (ps *problems) add(code, path, name, format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	if path != "" {
		msg = path + ": " + msg
	}
	*ps = append(*ps, refusal.Problem{Code: code, Path: path, Name: name, Message: msg})
}
