package memoryfs

import (
	"context"
	"errors"
	"fmt"

	"github.com/nexuskernel/nexus/sdk/memory"
	"github.com/nexuskernel/nexus/sdk/plugin"
)

// Configure opens the store from a plugin's config block (docs/plugins.md): the root is
// ResolveRoot's, and a configuration Open cannot use refuses the load (plugin.ErrConfigInvalid)
// instead of being retried.
func Configure(ctx context.Context, cfg plugin.Config) (memory.Provider, error) {
	c, err := configOf(cfg)
	if err != nil {
		return nil, err
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
