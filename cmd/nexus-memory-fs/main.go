// Command nexus-memory-fs is the memory plugin that stores documents on a local filesystem
// (providers/memory-fs). The plugin host starts it; run by hand it explains that and exits.
package main

import (
	memoryfs "github.com/nexuskernel/nexus/providers/memory-fs"
	"github.com/nexuskernel/nexus/sdk/memory"
	"github.com/nexuskernel/nexus/sdk/plugin"
)

func main() {
	memory.Serve(memory.ServeConfig{
		Info:      plugin.Info{Name: memoryfs.PluginName, Version: memoryfs.Version},
		Configure: memoryfs.Configure,
	})
}
