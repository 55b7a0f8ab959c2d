package memoryfs

import (
	"context"
	"errors"
	"fmt"

	"github.com/nexuskernel/nexus/sdk/memory"
	"github.com/nexuskernel/nexus/sdk/plugin"
)

// Configure opens the store from a plugin's config block (docs/plugins.md): root defaults to
// the plugin's data dir, and a configuration Open cannot use refuses the load
// (plugin.ErrConfigInvalid) instead of being retried.
func Configure(ctx context.Context, cfg plugin.Config) (memory.Provider, error) {
	var c Config
	if err := cfg.Decode(&c); err != nil {
		return nil, err
	}
	if c.Root == "" {
		c.Root = cfg.DataDir
	}
	s, err := Open(ctx, c)
	if errors.Is(err, ErrConfigInvalid) {
		return nil, fmt.Errorf("%w: %w", plugin.ErrConfigInvalid, err)
	}
	if err != nil {
		return nil, fmt.Errorf("%w: %w", plugin.ErrUnavailable, err)
	}
	return s, nil
}
