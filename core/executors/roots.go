package executors

import (
	"context"
	"fmt"
	"strings"

	"github.com/nexuskernel/nexus/core/refusal"
	"github.com/nexuskernel/nexus/core/store"
	"github.com/nexuskernel/nexus/plugins"
)

// CodeMemoryRootSplit is the refusal of a memory plugin whose live instances keep their data in
// different roots (docs/operations.md#several-instances): the override door answers it 409 while
// the roots differ, and an instance whose root is not the one in use holds its copy of the plugin
// unready with it.
const CodeMemoryRootSplit = "memory_root_split"

// PluginRoots admits each instance's root of a plugin whose storage the host can name, against
// the roots the other live instances serve from (docs/operations.md#several-instances). It is
// the store half of the plugin host's plugins.StorageGuard; core/server names the roots.
type PluginRoots struct{ s *Service }

// PluginRoots answers the service's root admissions.
func (s *Service) PluginRoots() PluginRoots { return PluginRoots{s} }

// liveCutoff is the oldest heartbeat of a live instance: the takeover's own timeout.
func (r PluginRoots) liveCutoff() int64 {
	_, timeout := r.s.engine.Heartbeat()
	return r.s.nowMS() - timeout.Milliseconds()
}

// Admit records root as this instance's root of the plugin and answers nil when the instance may
// serve from it: no other live instance serves the plugin from another root. Otherwise it records
// the root as held and answers the memory_root_split refusal naming the root in use. Admissions
// of one plugin are serialized across instances, so two starting at once cannot both serve.
func (r PluginRoots) Admit(ctx context.Context, plugin string, root plugins.StorageRoot) (*refusal.Error, error) {
	self := r.s.engine.InstanceID()
	var refused *refusal.Error
	err := r.s.store.Write(ctx, func(tx *store.Tx) error {
		refused = nil
		if err := store.LockPluginRoots(ctx, tx, plugin); err != nil {
			return err
		}
		rows, err := store.LivePluginRoots(ctx, tx, plugin, r.liveCutoff())
		if err != nil {
			return err
		}
		refused = heldBy(self, plugin, root, rows)
		return store.PutPluginRoot(ctx, tx, store.PluginRoot{InstanceID: self, Plugin: plugin, RootID: root.ID,
			RootPath: root.Path, Serving: refused == nil, RecordedAt: r.s.nowMS()})
	})
	if err != nil {
		return nil, fmt.Errorf("executors: admit the root of plugin %s: %w", plugin, err)
	}
	return refused, nil
}

// Check answers the refusal Admit would answer now, recording nothing: what an instance holding
// its copy unready rereads until the root in use is its own, or none is.
func (r PluginRoots) Check(ctx context.Context, plugin string, root plugins.StorageRoot) (*refusal.Error, error) {
	rows, err := store.LivePluginRoots(ctx, r.s.store.Reader(), plugin, r.liveCutoff())
	if err != nil {
		return nil, fmt.Errorf("executors: read the roots of plugin %s: %w", plugin, err)
	}
	return heldBy(r.s.engine.InstanceID(), plugin, root, rows), nil
}

// Forget removes this instance's root of the plugin: its block was removed or disabled.
func (r PluginRoots) Forget(ctx context.Context, plugin string) error {
	self := r.s.engine.InstanceID()
	return r.s.store.Write(ctx, func(tx *store.Tx) error { return store.DeletePluginRoot(ctx, tx, self, plugin) })
}

// heldBy answers the refusal of root when another live instance serves the plugin from another
// root (the oldest such instance's is the root in use), or nil.
func heldBy(self, plugin string, root plugins.StorageRoot, rows []store.PluginRoot) *refusal.Error {
	for _, row := range rows {
		if row.InstanceID == self || !row.Serving || row.RootID == root.ID {
			continue
		}
		return refusal.Newf(refusal.Conflict, CodeMemoryRootSplit,
			"This instance's %s root %s (ROOT_ID %s) is not the root in use, %s (ROOT_ID %s) on instance %s (host %s): every instance must keep it in one shared root, or use memory-postgres (docs/operations.md#several-instances). It stays unready and loads by itself once the root in use is its own.",
			plugin, root.Path, root.ID, row.RootPath, row.RootID, row.InstanceID, row.Host).
			With("plugin", plugin).With("root", root.Path).With("root_in_use", row.RootPath).With("instance", row.InstanceID)
	}
	return nil
}

// SplitRoot is one root of a split as the override door's refusal lists it.
type SplitRoot struct {
	Instance string `json:"instance"`
	Host     string `json:"host"`
	Root     string `json:"root"`
	RootID   string `json:"root_id"`
	Serving  bool   `json:"serving"`
}

// checkRootSplit refuses an override to a plugin whose live instances record more than one root
// (docs/api.md#the-memory-override): 409 memory_root_split, listing every live instance's root.
func (s *Service) checkRootSplit(ctx context.Context, q store.Querier, key, plugin string) error {
	rows, err := store.LivePluginRoots(ctx, q, plugin, PluginRoots{s}.liveCutoff())
	if err != nil {
		return err
	}
	ids := map[string]bool{}
	listed := make([]SplitRoot, 0, len(rows))
	var paths []string
	for _, row := range rows {
		ids[row.RootID] = true
		listed = append(listed, SplitRoot{Instance: row.InstanceID, Host: row.Host, Root: row.RootPath, RootID: row.RootID, Serving: row.Serving})
		paths = append(paths, row.RootPath+" on "+row.InstanceID)
	}
	if len(ids) < 2 {
		return nil
	}
	return refusal.Newf(refusal.Conflict, CodeMemoryRootSplit,
		"The live instances keep plugin %s's memory in %d different roots (%s): give every instance one shared root, or use memory-postgres (docs/operations.md#several-instances).",
		plugin, len(ids), strings.Join(paths, ", ")).
		With("path", "tool_provider_overrides."+key).With("plugin", plugin).With("roots", listed)
}
