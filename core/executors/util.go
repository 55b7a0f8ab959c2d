package executors

import (
	"encoding/json"

	"github.com/nexuskernel/nexus/core/store"
)

func optTime(ms *int64) *string {
	if ms == nil {
		return nil
	}
	s := store.FormatMillis(*ms)
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

// validKey reports whether s matches the task key grammar (docs/api.md#runs).
func validKey(s string) bool { return store.IsTaskKey(s) }
