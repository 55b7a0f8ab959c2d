// Command nexus-mcp-bridge is the first-party tool plugin that serves the tools of Model Context
// Protocol servers (providers/mcp-bridge). The plugin host starts it; run by hand it explains
// that and exits.
package main

import (
	"context"

	mcpbridge "github.com/nexuskernel/nexus/providers/mcp-bridge"
	"github.com/nexuskernel/nexus/sdk/plugin"
	"github.com/nexuskernel/nexus/sdk/toolprovider"
)

func main() {
	toolprovider.Serve(toolprovider.ServeConfig{
		Info: plugin.Info{Name: "mcp-bridge", Version: mcpbridge.Version},
		Configure: func(ctx context.Context, cfg plugin.Config) (toolprovider.Provider, error) {
			return mcpbridge.New(ctx, cfg, mcpbridge.Options{Logger: plugin.Logger()})
		},
	})
}
