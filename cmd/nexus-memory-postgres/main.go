// Command nexus-memory-postgres is the memory plugin that stores documents in PostgreSQL
// (providers/memory-postgres). The plugin host starts it; run by hand it explains that and exits.
package main

import (
	memorypostgres "github.com/nexuskernel/nexus/providers/memory-postgres"
	"github.com/nexuskernel/nexus/sdk/memory"
	"github.com/nexuskernel/nexus/sdk/plugin"
)

func main() {
	memory.Serve(memory.ServeConfig{
		Info:      plugin.Info{Name: "memory-postgres", Version: memorypostgres.Version},
		Configure: memorypostgres.Configure,
	})
}
