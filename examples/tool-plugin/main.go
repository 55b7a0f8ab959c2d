// Command nexus-wordcount is a Nexus tool plugin built outside the Nexus repository, against the
// SDK alone: it serves one tool, word_count. The Nexus server starts it from a plugin block of
// its settings file (nexus.hcl beside this file); run by hand it explains that and exits.
//
// Copy this directory to start a plugin of your own: change the module path in go.mod, drop the
// replace directive, and `go build`.
package main

import (
	"context"

	"github.com/nexuskernel/nexus/sdk/plugin"
	"github.com/nexuskernel/nexus/sdk/toolprovider"
)

func main() {
	// Serve speaks go-plugin's handshake on standard output and serves gRPC until the host
	// stops the process. Configure runs once per start with the block's config.
	toolprovider.Serve(toolprovider.ServeConfig{
		Info: plugin.Info{Name: "wordcount", Version: Version},
		Configure: func(_ context.Context, cfg plugin.Config) (toolprovider.Provider, error) {
			return Configure(cfg)
		},
	})
}
