package store

import (
	"regexp"
	"time"

	"github.com/google/uuid"
)

// NewPublicID mints a public id: a lowercase UUIDv7, time-ordered so that listings by id follow
// creation order.
func NewPublicID() string {
	return uuid.Must(uuid.NewV7()).String()
}

// publicIDPattern is the shape of a public id: a lowercase UUID, of any version, as NewPublicID
// mints it (docs/api.md#conventions). The one pattern of the server: a door that reads ids in
// either case lowers them first.
var publicIDPattern = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)

// IsPublicID reports whether s has the shape of a public id; a door answers not_found for a
// malformed one without reading a row.
func IsPublicID(s string) bool { return publicIDPattern.MatchString(s) }

// Millis is the stored form of a time: Unix milliseconds.
func Millis(t time.Time) int64 { return t.UnixMilli() }

// FromMillis turns a stored time back into a UTC time.Time.
func FromMillis(ms int64) time.Time { return time.UnixMilli(ms).UTC() }

// TimeLayout is the API's one timestamp form (docs/api.md#conventions): RFC 3339 in UTC with
// milliseconds and Z, the precision of a stored time.
const TimeLayout = "2006-01-02T15:04:05.000Z"

// FormatMillis is a stored time in TimeLayout.
func FormatMillis(ms int64) string { return FromMillis(ms).Format(TimeLayout) }
