package memory

import (
	"errors"
	"fmt"
)

// Sentinel errors a Provider returns, wrapped or not, for the conditions they name. They cross
// the plugin wire as an ErrorKind and come back as the same sentinel, so errors.Is works on the
// host exactly as in process.
var (
	ErrInvalidArgument  = errors.New("memory: invalid argument") // bad scope, owner id, limit
	ErrNameInvalid      = errors.New("memory: name invalid")
	ErrNotFound         = errors.New("memory: not found")
	ErrFull             = errors.New("memory: anchor full")
	ErrTooLarge         = errors.New("memory: document too large")
	ErrContentInvalid   = errors.New("memory: content invalid")
	ErrEditNotFound     = errors.New("memory: edit text not found")
	ErrEditAmbiguous    = errors.New("memory: edit text ambiguous")
	ErrPatternInvalid   = errors.New("memory: pattern invalid")
	ErrPatternTooCostly = errors.New("memory: pattern too costly")
	ErrReadOnly         = errors.New("memory: read-only scope")
	ErrUnavailable      = errors.New("memory: store unavailable")
	// ErrStale answers a Write, Edit or Delete whose Expect does not hold (protocol 1.3).
	ErrStale = errors.New("memory: not the expected document")
)

// ErrorKind is how an error travels across the plugin wire. The values equal the ErrorKind
// enum of the plugin protocol (plugin.proto), so converting is a cast. Kinds 12, 13 and 16
// belong to the tool-provider and plugin packages and are not produced here.
type ErrorKind int32

const (
	KindUnspecified      ErrorKind = 0
	KindInvalidArgument  ErrorKind = 1
	KindNameInvalid      ErrorKind = 2
	KindNotFound         ErrorKind = 3
	KindFull             ErrorKind = 4
	KindTooLarge         ErrorKind = 5
	KindContentInvalid   ErrorKind = 6
	KindEditNotFound     ErrorKind = 7
	KindEditAmbiguous    ErrorKind = 8
	KindPatternInvalid   ErrorKind = 9
	KindPatternTooCostly ErrorKind = 10
	KindReadOnly         ErrorKind = 11
	KindUnavailable      ErrorKind = 14
	KindInternal         ErrorKind = 15
	// KindStale was added in protocol 1.3.
	KindStale ErrorKind = 17
)

// kindTable pairs each memory kind with its sentinel and its word (the enum name lower-cased
// without ERROR_KIND_, which the host quotes in failure details).
var kindTable = []struct {
	kind     ErrorKind
	sentinel error
	word     string
}{
	{KindInvalidArgument, ErrInvalidArgument, "invalid_argument"},
	{KindNameInvalid, ErrNameInvalid, "name_invalid"},
	{KindNotFound, ErrNotFound, "not_found"},
	{KindFull, ErrFull, "full"},
	{KindTooLarge, ErrTooLarge, "too_large"},
	{KindContentInvalid, ErrContentInvalid, "content_invalid"},
	{KindEditNotFound, ErrEditNotFound, "edit_not_found"},
	{KindEditAmbiguous, ErrEditAmbiguous, "edit_ambiguous"},
	{KindPatternInvalid, ErrPatternInvalid, "pattern_invalid"},
	{KindPatternTooCostly, ErrPatternTooCostly, "pattern_too_costly"},
	{KindReadOnly, ErrReadOnly, "read_only"},
	{KindUnavailable, ErrUnavailable, "unavailable"},
	{KindStale, ErrStale, "stale"},
}

// String answers the kind's word, e.g. "not_found"; unknown values read "internal".
func (k ErrorKind) String() string {
	for _, row := range kindTable {
		if row.kind == k {
			return row.word
		}
	}
	if k == KindUnspecified {
		return "unspecified"
	}
	return "internal"
}

// KindOf answers the kind of the first sentinel err matches, or KindInternal for any other
// non-nil error. A nil error is KindUnspecified.
func KindOf(err error) ErrorKind {
	if err == nil {
		return KindUnspecified
	}
	for _, row := range kindTable {
		if errors.Is(err, row.sentinel) {
			return row.kind
		}
	}
	return KindInternal
}

// ErrorFromKind rebuilds the error a peer sent as kind and message: the kind's sentinel wrapped
// with the message, so errors.Is(err, ErrNotFound) holds after the round trip. KindInternal and
// unknown kinds answer an error that matches no sentinel, which the Engine reports as
// memory_unavailable.
func ErrorFromKind(kind ErrorKind, message string) error {
	for _, row := range kindTable {
		if row.kind == kind {
			return &kindError{sentinel: row.sentinel, message: message}
		}
	}
	return &kindError{message: message}
}

// kindError is a sentinel carried with the message its peer attached.
type kindError struct {
	sentinel error // nil for an internal error
	message  string
}

func (e *kindError) Error() string {
	head := "memory: internal error"
	if e.sentinel != nil {
		head = e.sentinel.Error()
	}
	if e.message == "" {
		return head
	}
	return fmt.Sprintf("%s: %s", head, e.message)
}

func (e *kindError) Unwrap() error { return e.sentinel }
