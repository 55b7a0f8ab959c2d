package plugins

import (
	"context"

	"github.com/nexuskernel/nexus/sdk/plugin"
	"github.com/nexuskernel/nexus/sdk/refusal"
)

// StorageRoot names where a loaded plugin keeps its data: ID is what instances compare (a
// marker the storage holds, so one root reached by two paths is one root and two roots at one
// path are two), Path is for people.
type StorageRoot struct {
	ID   string
	Path string
}

// StorageGuard keeps the instances of one deployment from serving one plugin from different
// storage (docs/operations.md#several-instances). The server fills it; without one the host
// checks nothing. After a plugin's Configure the host asks Root; a plugin with a root is admitted
// before its executor serves, and one refused stays unready (state refused, the refusal shown in
// its status and readiness) and is checked again every Timings.RootRecheck until it may load.
type StorageGuard interface {
	// Root answers the storage of a plugin just configured in dataDir, ok false when the host
	// cannot name it. An error is a failed start, retried with backoff.
	Root(e Entry, info plugin.Info, dataDir string) (root StorageRoot, ok bool, err error)
	// Admit records root as this instance's root of the plugin and answers a refusal when
	// another live instance serves the plugin from another root.
	Admit(ctx context.Context, name string, root StorageRoot) (*refusal.Refusal, error)
	// Check answers the refusal Admit would answer now, recording nothing.
	Check(ctx context.Context, name string, root StorageRoot) (*refusal.Refusal, error)
	// Forget removes this instance's root of the plugin: its block was removed or disabled.
	Forget(ctx context.Context, name string) error
}
