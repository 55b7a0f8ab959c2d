package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/nexuskernel/nexus/sdk/client"
)

// applyPack puts the shipped adaptation pack's aliases into the configuration's
// tool_definitions (docs/agent-tools.md#adaptation-packs): rendered against the server's own
// catalog, in place of the entries of their names, the others kept. A recut that no longer fits
// the served template fails here, before anything is sent, so the profile keeps its declaration.
func applyPack(ctx context.Context, c *client.Client, cfg map[string]any, name string) error {
	p, err := client.ShippedPack(name)
	if errors.Is(err, client.ErrUnknownPack) {
		return usageErrorf("--pack: %v", err)
	}
	if err != nil {
		return err
	}
	cat, err := c.Tools(ctx)
	if err != nil {
		return apiError(err)
	}
	current, err := json.Marshal(cfg["tool_definitions"])
	if err != nil {
		return err
	}
	defs, err := p.Apply(current, client.TemplatesFrom(cat.Tools))
	var moved *client.AnchorMoved
	if errors.As(err, &moved) {
		return fmt.Errorf("%w; the profile is unchanged: a pack ships with the nexus command, so use the command of the server's release", err)
	}
	if err != nil {
		return err
	}
	cfg["tool_definitions"] = defs
	return nil
}
