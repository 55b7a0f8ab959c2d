package server

import (
	"context"

	"github.com/nexuskernel/nexus/core/executors"
	"github.com/nexuskernel/nexus/core/memory"
	"github.com/nexuskernel/nexus/plugins"
)

// memoryBackings tells the member memory doors where a workspace's memory lives
// (docs/api.md#memory): the executor its override names, read from the store at each call, and
// the store of the memory plugin that runs it while that plugin is ready on this instance.
type memoryBackings struct {
	overrides *executors.Service
	host      *plugins.Host
}

var _ memory.Backings = memoryBackings{}

func (m memoryBackings) Backing(ctx context.Context, workspaceID int64) (memory.Backing, error) {
	executor, plugin, err := m.overrides.MemoryTarget(ctx, workspaceID)
	if err != nil || executor == "" {
		return memory.Backing{}, err
	}
	b := memory.Backing{Executor: executor}
	if plugin == "" {
		return b, nil
	}
	ms, isMemory := m.host.MemoryProvider(plugin)
	if !isMemory {
		// A tool-provider plugin announcing the memory names answers only through its calls.
		return b, nil
	}
	b.Plugin = plugin
	if ms != nil {
		b.Provider = ms.Provider
		b.Conditional = ms.ProtocolMinor >= memory.ConditionalMinor
	}
	return b, nil
}
