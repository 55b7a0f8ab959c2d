package plugins

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/nexuskernel/nexus/sdk/memory"
	"github.com/nexuskernel/nexus/sdk/plugin"
)

// Config is what the host needs.
type Config struct {
	// Catalog is the plugin blocks to run; nil runs none.
	Catalog *Catalog
	// Plane is the executor plane the plugins' executors live on.
	Plane ExecutorPlane
	// Logger is the server's logger; the host logs under "plugins".
	Logger hclog.Logger
	// DataDir is the server's data directory; each plugin gets <DataDir>/plugins/<name>.
	DataDir string
	// Resolver finds the plugin commands.
	Resolver Resolver
	// Timings shortens the supervisor's clocks in tests; zero fields take DefaultTimings.
	Timings Timings
	// Storage, when set, admits each plugin's storage root against the other instances'
	// (StorageGuard); nil checks nothing.
	Storage StorageGuard
	// OnState, when set, hears each plugin's state change (its name and new state), on the
	// supervisor's goroutine: it must not block.
	OnState func(name string, st State)
}

// Host runs the catalog's plugins. Its methods are what the plugin routes and the CLI call:
// Status, Restart and Reload each map to one route.
type Host struct {
	plane    ExecutorPlane
	logger   hclog.Logger
	dataDir  string
	resolver Resolver
	timings  Timings
	storage  StorageGuard
	onState  func(name string, st State)

	ctx    context.Context // the host's life: calls run under it
	cancel context.CancelFunc

	mu      sync.Mutex
	catalog *Catalog
	sups    map[string]*supervisor
	order   []string
	closed  bool
}

// ErrUnknownPlugin answers a name the catalog does not hold.
var ErrUnknownPlugin = errors.New("plugins: no such plugin in the catalog")

// ErrClosed answers a call after Shutdown.
var ErrClosed = errors.New("plugins: host is shut down")

// New returns a host that runs nothing yet; Start launches the catalog.
func New(cfg Config) (*Host, error) {
	if cfg.Plane == nil {
		return nil, errors.New("plugins: an executor plane is required")
	}
	logger := cfg.Logger
	if logger == nil {
		logger = hclog.NewNullLogger()
	}
	cat := cfg.Catalog
	if cat == nil {
		cat = &Catalog{}
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &Host{
		plane: cfg.Plane, logger: logger.Named("plugins"), dataDir: cfg.DataDir, resolver: cfg.Resolver,
		timings: cfg.Timings.withDefaults(), storage: cfg.Storage, onState: cfg.OnState, ctx: ctx, cancel: cancel, catalog: cat, sups: map[string]*supervisor{},
	}, nil
}

// Start launches every enabled entry and returns once each has an outcome for its first attempt
// (ready, refused, or waiting to retry), or ctx ends. A plugin that does not load does not stop
// the others or the server.
func (h *Host) Start(ctx context.Context) error {
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return ErrClosed
	}
	var started []*supervisor
	for _, e := range h.catalog.Entries {
		s := h.addLocked(e)
		if s != nil {
			started = append(started, s)
		}
	}
	h.mu.Unlock()
	return waitSettled(ctx, started)
}

// addLocked creates an entry's supervisor and, when enabled, runs it.
func (h *Host) addLocked(e Entry) *supervisor {
	s := newSupervisor(h, e)
	h.sups[e.Name] = s
	h.order = append(h.order, e.Name)
	if !e.Enabled {
		close(s.done)
		s.settle()
		return nil
	}
	go s.run()
	return s
}

func waitSettled(ctx context.Context, sups []*supervisor) error {
	for _, s := range sups {
		select {
		case <-s.settled:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

// inOrder answers the entries' supervisors in catalog order.
func (h *Host) inOrder() []*supervisor {
	h.mu.Lock()
	defer h.mu.Unlock()
	sups := make([]*supervisor, 0, len(h.order))
	for _, n := range h.order {
		sups = append(sups, h.sups[n])
	}
	return sups
}

// Status answers every catalog entry in catalog order.
func (h *Host) Status() []Status {
	sups := h.inOrder()
	out := make([]Status, 0, len(sups))
	for _, s := range sups {
		out = append(out, s.status())
	}
	return out
}

// StatusOf answers one entry.
func (h *Host) StatusOf(name string) (Status, error) {
	h.mu.Lock()
	s := h.sups[name]
	h.mu.Unlock()
	if s == nil {
		return Status{}, fmt.Errorf("%w: %s", ErrUnknownPlugin, name)
	}
	return s.status(), nil
}

// Restart resets the entry's backoff and breaker and starts it again now: a ready instance is
// drained and replaced, a refused or open one gets a fresh attempt. It returns once the new
// attempt has an outcome or ctx ends.
func (h *Host) Restart(ctx context.Context, name string) error {
	h.mu.Lock()
	old := h.sups[name]
	if old == nil {
		h.mu.Unlock()
		return fmt.Errorf("%w: %s", ErrUnknownPlugin, name)
	}
	h.mu.Unlock()
	return h.replace(ctx, old, old.entry)
}

// replace starts a fresh supervisor for e beside old; when it loads, old drains into it and
// stops, otherwise old keeps serving and shows the failed attempt.
func (h *Host) replace(ctx context.Context, old *supervisor, e Entry) error {
	fresh := newSupervisor(h, e)
	old.mu.Lock()
	fresh.executorID = old.executorID
	fresh.gen = old.gen
	fresh.restarts = old.restarts
	fresh.counts = old.counts
	fresh.pollFinds = old.pollFinds
	oldReady := old.state == StateReady
	fresh.standby = oldReady
	old.mu.Unlock()
	if !e.Enabled {
		h.swap(old, fresh)
		close(fresh.done)
		fresh.settle()
		go func() {
			old.stop(h.timings.DrainTimeout, false, false)
			h.forgetRoot(e.Name)
		}()
		return nil
	}
	go fresh.run()
	if err := waitSettled(ctx, []*supervisor{fresh}); err != nil {
		return err
	}
	fresh.mu.Lock()
	loaded := fresh.state == StateReady
	attempt := fresh.lastErr
	fresh.mu.Unlock()
	if !loaded && oldReady {
		h.logger.Warn("replacement did not load; the running instance keeps serving", "plugin", e.Name, "error", attempt)
		fresh.stop(0, true, false)
		old.mu.Lock()
		old.lastErr = "replacement failed: " + attempt
		root := old.root
		old.mu.Unlock()
		// The replacement recorded its own root; the instance still serving records its own again.
		if root != nil && h.storage != nil {
			if _, err := h.storage.Admit(ctx, e.Name, *root); err != nil {
				h.logger.Warn("recording the serving root again failed", "plugin", e.Name, "error", err)
			}
		}
		return nil
	}
	fresh.mu.Lock()
	fresh.standby = false
	fresh.mu.Unlock()
	h.swap(old, fresh)
	old.mu.Lock()
	old.successor = fresh
	old.mu.Unlock()
	go old.stop(h.timings.DrainTimeout, false, false)
	return nil
}

func (h *Host) swap(old, fresh *supervisor) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.sups[old.entry.Name] = fresh
}

// ReloadReport summarises a reload's diff.
type ReloadReport struct {
	Added     []string `json:"added"`
	Removed   []string `json:"removed"`
	Changed   []string `json:"changed"`
	Unchanged []string `json:"unchanged"`
	// NotApplied names the settings outside the plugin blocks that changed in the file and wait
	// for a restart (model and model_provider blocks, the kernel block, …); the server fills it,
	// the host applies plugin blocks only.
	NotApplied []string `json:"not_applied"`
}

// Reload applies a new catalog (docs/plugins.md#states-status-reload-and-restart): added entries
// load, removed ones drain, stop and have their executors revoked, changed ones (any attribute, or
// the executable's digest) start beside the old instance and replace it when they load, and
// unchanged ones keep running while a refused or open one gets one fresh attempt. Every entry's
// backoff and breaker reset.
func (h *Host) Reload(ctx context.Context, cat *Catalog) (ReloadReport, error) {
	if cat == nil {
		cat = &Catalog{}
	}
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return ReloadReport{}, ErrClosed
	}
	prev := h.sups
	var rep ReloadReport
	keep := map[string]bool{}
	var order []string
	var added []*supervisor
	var changed []Entry
	for _, e := range cat.Entries {
		keep[e.Name] = true
		order = append(order, e.Name)
		old, ok := prev[e.Name]
		switch {
		case !ok:
			rep.Added = append(rep.Added, e.Name)
			if s := h.addLocked(e); s != nil {
				added = append(added, s)
			}
		case h.entryChanged(old, e):
			rep.Changed = append(rep.Changed, e.Name)
			changed = append(changed, e)
		default:
			rep.Unchanged = append(rep.Unchanged, e.Name)
		}
	}
	var removed []*supervisor
	for _, name := range h.order {
		if !keep[name] {
			rep.Removed = append(rep.Removed, name)
			removed = append(removed, prev[name])
			delete(h.sups, name)
		}
	}
	h.order = order
	h.catalog = cat
	h.mu.Unlock()

	h.logger.Info("reload", "added", rep.Added, "removed", rep.Removed, "changed", rep.Changed, "unchanged", rep.Unchanged)
	for _, s := range removed {
		go func() {
			s.stop(h.timings.DrainTimeout, false, true)
			h.forgetRoot(s.entry.Name)
		}()
	}
	for _, name := range rep.Unchanged {
		h.mu.Lock()
		s := h.sups[name]
		h.mu.Unlock()
		s.mu.Lock()
		s.breaker.reset()
		waiting := s.state == StateRefused || s.state == StateOpen || s.state == StateRestarting
		s.mu.Unlock()
		if waiting {
			s.poke(false) // one fresh attempt now
		}
	}
	var errs []error
	for _, e := range changed {
		h.mu.Lock()
		old := h.sups[e.Name]
		h.mu.Unlock()
		if err := h.replace(ctx, old, e); err != nil {
			errs = append(errs, err)
		}
	}
	if err := waitSettled(ctx, added); err != nil {
		errs = append(errs, err)
	}
	return rep, errors.Join(errs...)
}

// entryChanged compares every attribute and the current digest of the resolved executable, so
// a binary upgraded in place counts as a change.
func (h *Host) entryChanged(old *supervisor, e Entry) bool {
	if !reflect.DeepEqual(old.entry, e) {
		return true
	}
	path, r := h.resolver.Resolve(e)
	if r != nil {
		return true
	}
	digest, err := FileDigest(path)
	old.mu.Lock()
	defer old.mu.Unlock()
	return err != nil || path != old.command || digest != old.digest
}

// forgetRoot removes this instance's recorded storage root of a plugin that no longer runs here.
func (h *Host) forgetRoot(name string) {
	if h.storage == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := h.storage.Forget(ctx, name); err != nil {
		h.logger.Warn("forgetting the storage root failed", "plugin", name, "error", err)
	}
}

// Unready lists the plugins held unready by their storage root (StorageGuard), as /readyz's
// reasons: "plugins: NAME: WORD: message".
func (h *Host) Unready() []string {
	var out []string
	for _, s := range h.inOrder() {
		s.mu.Lock()
		if s.held && s.refusal != nil {
			out = append(out, "plugins: "+s.entry.Name+": "+s.refusal.Code+": "+s.refusal.Message)
		}
		s.mu.Unlock()
	}
	return out
}

// Shutdown stops claiming, gives in-flight calls the shutdown grace, then kills every plugin
// and marks their executors offline.
func (h *Host) Shutdown(ctx context.Context) error {
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return nil
	}
	h.closed = true
	sups := make([]*supervisor, 0, len(h.sups))
	for _, s := range h.sups {
		sups = append(sups, s)
	}
	h.mu.Unlock()
	var wg sync.WaitGroup
	for _, s := range sups {
		wg.Add(1)
		go func() { defer wg.Done(); s.stop(h.timings.ShutdownGrace, true, false) }()
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
	}
	h.cancel()
	select {
	case <-done:
		return nil
	case <-time.After(5 * time.Second):
		return errors.New("plugins: shutdown did not finish")
	}
}

// MemoryStore is a ready memory plugin's store, as the member memory doors reach it.
type MemoryStore struct {
	Provider memory.Provider
	// ProtocolMinor is the minor the plugin reported: from 3 on its store keeps document ids
	// and honours a conditional write's Expect (docs/plugins.md#protocol-13).
	ProtocolMinor int
}

// MemoryProvider answers the store of the named memory plugin, for the member memory doors
// (docs/api.md#memory): isMemory says the catalog holds a memory plugin of that name, and ms is
// its store while the plugin is ready on this instance, nil otherwise. A call through it after
// the process died answers plugin.ErrPluginShutdown.
func (h *Host) MemoryProvider(name string) (ms *MemoryStore, isMemory bool) {
	h.mu.Lock()
	s := h.sups[name]
	h.mu.Unlock()
	if s == nil || s.entry.Kind != plugin.KindMemory {
		return nil, false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.state != StateReady || s.inst == nil || s.inst.memory == nil {
		return nil, true
	}
	return &MemoryStore{Provider: s.inst.memory, ProtocolMinor: s.inst.info.ProtocolMinor}, true
}
