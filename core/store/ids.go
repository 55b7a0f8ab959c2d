package store

import (
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

// Millis is the stored form of a time: Unix milliseconds.
func Millis(t time.Time) int64 { return t.UnixMilli() }

// FromMillis turns a stored time back into a UTC time.Time.
func FromMillis(ms int64) time.Time { return time.UnixMilli(ms).UTC() }

// TimeLayout is the API's one timestamp form (docs/api.md#conventions), defined once in
// sdk/jsonwire: RFC 3339 in UTC with milliseconds and Z, the precision of a stored time.
const TimeLayout = jsonwire.TimeLayout

// FormatMillis is a stored time in TimeLayout.
func FormatMillis(ms int64) string { return FromMillis(ms).Format(TimeLayout) }
