package server

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/nexuskernel/nexus/core/executors"
	"github.com/nexuskernel/nexus/plugins"
	memoryfs "github.com/nexuskernel/nexus/providers/memory-fs"
	"github.com/nexuskernel/nexus/sdk/plugin"
	"github.com/nexuskernel/nexus/sdk/refusal"
)

// memoryRoots is the plugin host's storage guard (docs/operations.md#several-instances): it names
// the root of a memory-fs plugin by the marker memory-fs writes in it, reading the root the
// plugin block configures exactly as the plugin does (memoryfs.ResolveRoot), and admits it
// through the executor plane against the other live instances' roots.
type memoryRoots struct{ roots executors.PluginRoots }

var _ plugins.StorageGuard = memoryRoots{}

// Root names a memory-fs plugin's root; any other plugin keeps storage the host cannot name.
func (memoryRoots) Root(e plugins.Entry, info plugin.Info, dataDir string) (plugins.StorageRoot, bool, error) {
	if e.Kind != plugin.KindMemory || info.Name != memoryfs.PluginName {
		return plugins.StorageRoot{}, false, nil
	}
	root, err := memoryfs.ResolveRoot(plugin.Config{PluginName: e.Name, DataDir: dataDir, Raw: e.Config})
	if err != nil {
		return plugins.StorageRoot{}, false, err
	}
	id, err := memoryfs.RootID(root)
	if errors.Is(err, os.ErrNotExist) {
		// The plugin prepared its root before answering Configure: a marker the host cannot
		// read means the host does not see the root the plugin writes to.
		return plugins.StorageRoot{}, false, fmt.Errorf("memory-fs root %s has no %s that this server can read: %w", root, memoryfs.RootIDFile, err)
	}
	if err != nil {
		return plugins.StorageRoot{}, false, err
	}
	return plugins.StorageRoot{ID: id, Path: root}, true, nil
}

func (m memoryRoots) Admit(ctx context.Context, name string, root plugins.StorageRoot) (*refusal.Refusal, error) {
	return m.roots.Admit(ctx, name, root)
}

func (m memoryRoots) Check(ctx context.Context, name string, root plugins.StorageRoot) (*refusal.Refusal, error) {
	return m.roots.Check(ctx, name, root)
}

func (m memoryRoots) Forget(ctx context.Context, name string) error { return m.roots.Forget(ctx, name) }
