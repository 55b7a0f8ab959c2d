// Command nexus-tools-example is the example third-party tool plugin (providers/tools-example).
// The plugin host starts it; run by hand it explains that and exits.
package main

import (
	"context"

	toolsexample "github.com/nexuskernel/nexus/providers/tools-example"
	"github.com/nexuskernel/nexus/sdk/plugin"
	"github.com/nexuskernel/nexus/sdk/toolprovider"
)

func main() {
	toolprovider.Serve(toolprovider.ServeConfig{
		Info: plugin.Info{Name: "tools-example", Version: toolsexample.Version},
		Configure: func(_ context.Context, cfg plugin.Config) (toolprovider.Provider, error) {
			return toolsexample.Configure(cfg)
		},
	})
}
