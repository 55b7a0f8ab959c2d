package memory

import (
	"bytes"
	"encoding/json"
	"github.com/nexuskernel/nexus/sdk/jsonwire"
	"math"
	"strings"

	"github.com/nexuskernel/nexus/core/refusal"
)

// field is one member-door request field as sent: nil when absent, else its JSON text.
type field json.RawMessage

// absent reports whether the field is missing or null.
func (f field) absent() bool { return f == nil || isNull(f) }

func isNull(raw []byte) bool { return bytes.Equal(bytes.TrimSpace(raw), []byte("null")) }

// str answers the field's string value; ok is false for anything but a JSON string.
func (f field) str() (string, bool) {
	if f == nil {
		return "", false
	}
	var s string
	if json.Unmarshal(f, &s) != nil {
		return "", false
	}
	return s, true
}

// boolean answers the field's boolean value; ok is false for anything but true or false.
func (f field) boolean() (bool, bool) {
	if f == nil {
		return false, false
	}
	var b bool
	if json.Unmarshal(f, &b) != nil {
		return false, false
	}
	return b, true
}

// integer answers the field's integral value; ok is false for anything but a JSON number with
// an integral value that fits an int64.
func (f field) integer() (int64, bool) {
	if f == nil {
		return 0, false
	}
	// Decoding into any keeps a quoted "5" a string, which json.Number would accept.
	var v any
	dec := json.NewDecoder(bytes.NewReader(f))
	dec.UseNumber()
	if dec.Decode(&v) != nil {
		return 0, false
	}
	n, ok := v.(json.Number)
	if !ok {
		return 0, false
	}
	if i, err := n.Int64(); err == nil {
		return i, true
	}
	x, err := n.Float64()
	if err != nil || x != math.Trunc(x) || math.Abs(x) > 1<<53 {
		return 0, false
	}
	return int64(x), true
}

// Request field paths, as refusals name them (docs/api.md#conventions).
const (
	pathPath                = "memory.path"
	pathContent             = "memory.content"
	pathDescription         = "memory.description"
	pathOldText             = "memory.old_text"
	pathNewText             = "memory.new_text"
	pathPattern             = "memory.pattern"
	pathPrefix              = "memory.prefix"
	pathIgnoreCase          = "memory.ignore_case"
	pathLimit               = "memory.limit"
	pathExpectedPublicID    = "memory.expected_public_id"
	pathExpectedLockVersion = "memory.expected_lock_version"
	// pathQueryPrefix is the list door's query parameter.
	pathQueryPrefix = "prefix"
)

// refuse422 is a door refusal with one of memory's words, naming the field.
func refuse422(code, path, format string, args ...any) error {
	return refusal.Newf(refusal.Unprocessable, code, format, args...).With("path", path)
}

func missing(path string) error {
	return refusal.Newf(refusal.BadRequest, refusal.CodeParameterMissing, "%s is required.", path).With("path", path)
}

func invalidParameter(path, format string, args ...any) error {
	return refusal.Newf(refusal.BadRequest, refusal.CodeParameterInvalid, format, args...).With("path", path)
}

// expectation reads a conditional write's expected_public_id and expected_lock_version
// (docs/api.md#memory): both are required; both null expects no document (a create, when
// allowCreate); otherwise both name the document expected. Missing is 400 parameter_missing;
// half null, a public id that is not a UUID or a lock version that is not a positive integer is
// 400 parameter_invalid.
func expectation(publicID, lockVersion field, allowCreate bool) (*Expect, error) {
	if publicID == nil {
		return nil, missing(pathExpectedPublicID)
	}
	if lockVersion == nil {
		return nil, missing(pathExpectedLockVersion)
	}
	idNull, versionNull := isNull(publicID), isNull(lockVersion)
	switch {
	case idNull && versionNull && allowCreate:
		return &Expect{Absent: true}, nil
	case idNull && versionNull:
		return nil, invalidParameter(pathExpectedPublicID, "%s and %s must name the document this call changes.", pathExpectedPublicID, pathExpectedLockVersion)
	case idNull:
		return nil, invalidParameter(pathExpectedPublicID, "%s is null while %s is not: send both null to create, or both set.", pathExpectedPublicID, pathExpectedLockVersion)
	case versionNull:
		return nil, invalidParameter(pathExpectedLockVersion, "%s is null while %s is not: send both null to create, or both set.", pathExpectedLockVersion, pathExpectedPublicID)
	}
	id, ok := publicID.str()
	id = strings.ToLower(id)
	if !ok || !jsonwire.IsPublicID(id) {
		return nil, invalidParameter(pathExpectedPublicID, "%s must be a document's public id (a UUID).", pathExpectedPublicID)
	}
	v, ok := lockVersion.integer()
	if !ok || v < 1 {
		return nil, invalidParameter(pathExpectedLockVersion, "%s must be a positive integer.", pathExpectedLockVersion)
	}
	return &Expect{PublicID: id, LockVersion: v}, nil
}
