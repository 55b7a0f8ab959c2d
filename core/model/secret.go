package model

import (
	"fmt"
	"log/slog"
)

// redacted is what every printed form of a Secret shows.
const redacted = "[redacted]"

// Secret holds a credential read from the environment (api_key, a credential-like header). Every
// way of printing it (fmt verbs, JSON, slog) shows "[redacted]"; only the request builder calls
// Reveal, to set the header. The zero Secret is no credential.
type Secret struct {
	value string
	// Env is the variable the value came from, which errors may name.
	Env string
}

// NewSecret wraps a credential read from the variable env.
func NewSecret(env, value string) Secret { return Secret{value: value, Env: env} }

// Reveal returns the credential itself. Only code that writes it into a request header may call it.
func (s Secret) Reveal() string { return s.value }

// IsSet reports whether the secret holds a value.
func (s Secret) IsSet() bool { return s.value != "" }

func (s Secret) String() string   { return redacted }
func (s Secret) GoString() string { return redacted }

// Format prints "[redacted]" for every verb, %v, %+v, %#v, %s and %q included.
func (s Secret) Format(f fmt.State, verb rune) { _, _ = f.Write([]byte(redacted)) }

// MarshalJSON writes the string "[redacted]".
func (s Secret) MarshalJSON() ([]byte, error) { return []byte(`"` + redacted + `"`), nil }

// MarshalText writes "[redacted]", for encoders that use text marshalling.
func (s Secret) MarshalText() ([]byte, error) { return []byte(redacted), nil }

// LogValue keeps the value out of structured logs.
func (s Secret) LogValue() slog.Value { return slog.StringValue(redacted) }

var _ slog.LogValuer = Secret{}

// Equal reports whether two secrets hold the same value from the same variable.
func (s Secret) Equal(o Secret) bool { return s.value == o.value && s.Env == o.Env }
