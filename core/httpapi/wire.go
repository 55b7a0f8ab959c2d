package httpapi

import (
	"time"

	"github.com/nexuskernel/nexus/core/refusal"
	"github.com/nexuskernel/nexus/core/store"
)

// formatTime renders stored Unix milliseconds in the API's one timestamp form.
func formatTime(ms int64) string { return store.FormatMillis(ms) }

// formatOptTime renders optional Unix milliseconds; nil stays null.
func formatOptTime(ms *int64) *string {
	if ms == nil {
		return nil
	}
	s := formatTime(*ms)
	return &s
}

// parseTime reads an RFC 3339 timestamp from a request field into Unix milliseconds.
func parseTime(path, v string) (int64, error) {
	t, err := time.Parse(time.RFC3339Nano, v)
	if err != nil {
		return 0, refusal.Newf(refusal.Unprocessable, refusal.CodeValidationFailed, "%s must be an RFC 3339 time.", path).With("path", path)
	}
	return t.UnixMilli(), nil
}
