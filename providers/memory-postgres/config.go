package memorypostgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"time"

	"github.com/nexuskernel/nexus/sdk/memory"
	"github.com/nexuskernel/nexus/sdk/plugin"
)

// Version is the semantic version of this store, reported by the plugin that serves it.
const Version = "1.0.0"

// Defaults of the configuration (docs/plugins.md).
const (
	DefaultSchema = "nexus_memory"
	// DefaultMaxOpenConns bounds the pool: eight covers the host's default of eight calls in
	// flight per plugin.
	DefaultMaxOpenConns = 8
	// DefaultMaxIdleConns keeps half the pool warm between bursts.
	DefaultMaxIdleConns = 4
	// DefaultConnMaxLifetime recycles connections so a failover or a pooler restart is picked
	// up without an error burst.
	DefaultConnMaxLifetime = 30 * time.Minute
	// DefaultStatementTimeout bounds one statement: a memory operation touches one anchor of at
	// most 64 small documents, so five seconds means the database is in trouble.
	DefaultStatementTimeout = 5 * time.Second
)

// schemaRE is the schema-name grammar: a plain lowercase identifier, so it can be spliced into
// SQL without quoting.
var schemaRE = regexp.MustCompile(`^[a-z_][a-z0-9_]{0,62}$`)

// ErrConfigInvalid is a configuration the store can never use.
var ErrConfigInvalid = errors.New("memorypostgres: configuration invalid")

// Config is the store's configuration, the plugin's config block.
type Config struct {
	// DSN is the lib/pq connection string; required.
	DSN string `json:"dsn"`
	// Schema holds the store's tables; default nexus_memory.
	Schema           string   `json:"schema,omitempty"`
	MaxOpenConns     int      `json:"max_open_conns,omitempty"`
	MaxIdleConns     int      `json:"max_idle_conns,omitempty"`
	ConnMaxLifetime  Duration `json:"conn_max_lifetime,omitzero"`
	StatementTimeout Duration `json:"statement_timeout,omitzero"`
}

// Duration is a time.Duration written as a Go duration string ("30m", "5s").
type Duration struct{ time.Duration }

// UnmarshalJSON reads a duration string.
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("a duration is a string such as \"5s\": %w", err)
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return err
	}
	if v <= 0 {
		return fmt.Errorf("duration %q is not positive", s)
	}
	d.Duration = v
	return nil
}

// withDefaults checks c and fills its defaults.
func (c Config) withDefaults() (Config, error) {
	if c.DSN == "" {
		return c, fmt.Errorf("%w: dsn is required", ErrConfigInvalid)
	}
	if c.Schema == "" {
		c.Schema = DefaultSchema
	}
	if !schemaRE.MatchString(c.Schema) {
		return c, fmt.Errorf("%w: schema %q does not match [a-z_][a-z0-9_]{0,62}", ErrConfigInvalid, c.Schema)
	}
	if c.MaxOpenConns < 0 || c.MaxIdleConns < 0 {
		return c, fmt.Errorf("%w: connection counts must not be negative", ErrConfigInvalid)
	}
	if c.MaxOpenConns == 0 {
		c.MaxOpenConns = DefaultMaxOpenConns
	}
	if c.MaxIdleConns == 0 {
		c.MaxIdleConns = min(DefaultMaxIdleConns, c.MaxOpenConns)
	}
	if c.ConnMaxLifetime.Duration == 0 {
		c.ConnMaxLifetime.Duration = DefaultConnMaxLifetime
	}
	if c.StatementTimeout.Duration == 0 {
		c.StatementTimeout.Duration = DefaultStatementTimeout
	}
	return c, nil
}

// Configure opens the store from a plugin's config block: a configuration that can never work
// refuses the load (plugin.ErrConfigInvalid); a database that cannot be reached yet is
// plugin.ErrUnavailable, so the host retries the start with backoff.
func Configure(ctx context.Context, cfg plugin.Config) (memory.Provider, error) {
	var c Config
	if err := cfg.Decode(&c); err != nil {
		return nil, err
	}
	s, err := Open(ctx, c)
	switch {
	case errors.Is(err, ErrConfigInvalid):
		return nil, fmt.Errorf("%w: %w", plugin.ErrConfigInvalid, err)
	case err != nil:
		return nil, fmt.Errorf("%w: %w", plugin.ErrUnavailable, err)
	}
	return s, nil
}
