package store

import (
	"database/sql/driver"
	"errors"
	"regexp"
	"time"

	"github.com/google/uuid"

	"github.com/nexuskernel/nexus/sdk/jsonwire"
)

// NewPublicID mints a public id: a lowercase UUIDv7, time-ordered so that listings by id follow
// creation order.
func NewPublicID() string {
	return uuid.Must(uuid.NewV7()).String()
}

// IsPublicID reports whether s has the shape of a public id (jsonwire.IsPublicID, the one
// pattern: a lowercase UUID of any version, as NewPublicID mints it, docs/api.md#conventions); a
// door that reads ids in either case lowers them first, and answers not_found for a malformed one
// without reading a row.
func IsPublicID(s string) bool { return jsonwire.IsPublicID(s) }

// ErrMalformedID is the error of a statement given an ID that is no public id, or a Key that is
// no task key: the statement was not sent. A lookup answers it as ErrNotFound, since no row has such an id.
var ErrMalformedID = errors.New("store: malformed public id")

// ID is a public id handed to a statement from outside the store (a path parameter, a body
// field, a tool's argument): the one place an id's shape is judged before it reaches a query,
// whichever door or tool it came through. Its Value refuses a string without the shape
// (IsPublicID) with ErrMalformedID before the statement is sent, so that no such value reaches
// the database: PostgreSQL would refuse it only after the round trip, quoting the whole value in
// its message (a 30,000-character id makes a 30,000-byte error), and SQLite would search for it.
// Every comparison of a public-id column with such a value passes it as an ID.
type ID string

// Value is the driver's value of id: the string itself, or ErrMalformedID.
func (id ID) Value() (driver.Value, error) {
	if !IsPublicID(string(id)) {
		return nil, ErrMalformedID
	}
	return string(id), nil
}

// taskKeyGrammar is the task key grammar (docs/api.md#runs): every key the kernel mints or a
// client declares matches it.
var taskKeyGrammar = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$`)

// IsTaskKey reports whether s matches the task key grammar; a key that does not names no task.
func IsTaskKey(s string) bool { return taskKeyGrammar.MatchString(s) }

// Key is a task key handed to a statement from outside the store, as ID is a public id: its
// Value refuses a string outside the grammar (bytes that are not UTF-8, U+0000, a 30,000-byte
// key) with ErrMalformedID before the statement is sent, and a lookup answers ErrNotFound.
type Key string

// Value is the driver's value of k: the string itself, or ErrMalformedID.
func (k Key) Value() (driver.Value, error) {
	if !IsTaskKey(string(k)) {
		return nil, ErrMalformedID
	}
	return string(k), nil
}

// IDs is ids as statement arguments, each an ID.
func IDs(ids []string) []ID {
	out := make([]ID, len(ids))
	for i, s := range ids {
		out[i] = ID(s)
	}
	return out
}

// Millis is the stored form of a time: Unix milliseconds.
func Millis(t time.Time) int64 { return t.UnixMilli() }

// FromMillis turns a stored time back into a UTC time.Time.
func FromMillis(ms int64) time.Time { return time.UnixMilli(ms).UTC() }

// TimeLayout is the API's one timestamp form (docs/api.md#conventions), defined once in
// sdk/jsonwire: RFC 3339 in UTC with milliseconds and Z, the precision of a stored time.
const TimeLayout = jsonwire.TimeLayout

// FormatMillis is a stored time in TimeLayout.
func FormatMillis(ms int64) string { return FromMillis(ms).Format(TimeLayout) }
