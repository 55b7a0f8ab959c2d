package plugin

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/nexuskernel/nexus/sdk/announce"
)

// Info is what a plugin says about itself.
type Info struct {
	// Name is the plugin's own name, e.g. "memory-fs".
	Name string
	// Version is the semantic version of the plugin binary.
	Version string
	// Kind is forced by the kind package's Serve.
	Kind Kind
	// ProtocolVersions lists the protocol majors this binary can serve; filled by Serve.
	ProtocolVersions []int
	// ProtocolMinor is filled by Serve.
	ProtocolMinor int
}

// Config is the catalog's config block, delivered by Configure.
type Config struct {
	// PluginName is the catalog name, e.g. "memory-fs-main".
	PluginName string
	// DataDir is <data-dir>/plugins/<catalog name>, created 0700 by the host.
	DataDir string
	// Raw is the config object as JSON ({} when the block is absent).
	Raw json.RawMessage
	// MaxConcurrency is the plugin block's max_concurrency: how many calls the host sends the
	// plugin at once. 0 from a host that does not say (before this field), which a plugin reads
	// as the host's default, 8.
	MaxConcurrency int
}

// Decode unmarshals Raw into v, refusing unknown fields and trailing data. A failure wraps
// ErrConfigInvalid, so a plugin that returns it refuses its load instead of being retried.
func (c Config) Decode(v any) error {
	raw := bytes.TrimSpace(c.Raw)
	if len(raw) == 0 {
		raw = []byte("{}")
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("%w: %v", ErrConfigInvalid, err)
	}
	if dec.More() {
		return fmt.Errorf("%w: trailing data after the config object", ErrConfigInvalid)
	}
	return nil
}

// Describer is served by every plugin; the kind packages' Serve implement it from their
// ServeConfig, and the values the host dispenses implement it.
type Describer interface {
	// Describe answers the plugin's Info and its current announcement, which is empty before
	// Configure.
	Describe(ctx context.Context) (Info, announce.Announcement, error)
	// Configure delivers the catalog's config block. ErrConfigInvalid refuses the load; any
	// other failure (ErrUnavailable) is retried with backoff.
	Configure(ctx context.Context, cfg Config) error
}

// Errors shared by every kind. They cross the wire as error kinds and come back as the same
// sentinels, so errors.Is works on the host.
var (
	// ErrPluginShutdown is the host's: a call could not reach the plugin because its process
	// is gone or its connection broke. It is crash handling, never a refusal a model reads.
	ErrPluginShutdown = errors.New("plugin: process is gone")
	// ErrConfigInvalid refuses the load; the host does not retry it until a reload.
	ErrConfigInvalid = errors.New("plugin: configuration invalid")
	// ErrUnavailable says a dependency is not reachable yet; the host retries the start with
	// backoff.
	ErrUnavailable = errors.New("plugin: dependency unavailable")
)
