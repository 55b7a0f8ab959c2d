package executors

import (
	"encoding/json"
	"regexp"
	"time"
)

// timeLayout is the API's timestamp form (docs/api.md#conventions).
const timeLayout = "2006-01-02T15:04:05.000Z"

func formatMillis(ms int64) string { return time.UnixMilli(ms).UTC().Format(timeLayout) }

func optTime(ms *int64) *string {
	if ms == nil {
		return nil
	}
	s := formatMillis(*ms)
	return &s
}

func deref[T any](p *T) T {
	var z T
	if p == nil {
		return z
	}
	return *p
}

func raw(s *string) json.RawMessage {
	if s == nil {
		return nil
	}
	return json.RawMessage(*s)
}

func rawOr(s *string, fallback string) json.RawMessage {
	if s == nil {
		return json.RawMessage(fallback)
	}
	return json.RawMessage(*s)
}

var (
	uuidPattern = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)
	// keyPattern is the task key grammar (docs/api.md#runs).
	keyPattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$`)
)

func isUUID(s string) bool   { return uuidPattern.MatchString(s) }
func validKey(s string) bool { return keyPattern.MatchString(s) }
