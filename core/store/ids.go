package store

import (
	"time"

	"github.com/google/uuid"
)

// NewPublicID mints a public id: a lowercase UUIDv7, time-ordered so that listings by id follow
// creation order.
func NewPublicID() string {
	return uuid.Must(uuid.NewV7()).String()
}

// Millis is the stored form of a time: Unix milliseconds.
func Millis(t time.Time) int64 { return t.UnixMilli() }

// FromMillis turns a stored time back into a UTC time.Time.
func FromMillis(ms int64) time.Time { return time.UnixMilli(ms).UTC() }
