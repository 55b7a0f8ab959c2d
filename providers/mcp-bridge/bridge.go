package mcpbridge

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/nexuskernel/nexus/sdk/announce"
	"github.com/nexuskernel/nexus/sdk/plugin"
	"github.com/nexuskernel/nexus/sdk/toolprovider"
)

// Version is the bridge's version, sent to MCP servers as the client's and to the host as the
// plugin's.
const Version = "0.1.0"

// closeGrace bounds how long Close waits for the servers' goroutines after cancelling them:
// the stdio grace of 2 s plus room for SIGTERM.
const closeGrace = 5 * time.Second

// Options are what a caller may change; main passes only the logger.
type Options struct {
	Logger hclog.Logger
	Now    func() time.Time // nil: time.Now
	// Dial, when set, replaces the transport built from a server's config. Tests pass
	// in-memory transports here; production leaves it nil.
	Dial func(ctx context.Context, s ServerConfig) (mcp.Transport, error)
	// ServerWait bounds how long a call waits for its server to be ready. Zero means 10 s;
	// tests shorten it.
	ServerWait time.Duration
}

// Bridge serves the tools of the configured MCP servers.
type Bridge struct {
	cfg     Config
	opt     Options
	log     hclog.Logger
	dataDir string
	cancel  context.CancelFunc
	wg      sync.WaitGroup
	servers []*server
	byName  map[string]*server

	// revs is the announcement revision the host re-announces from (protocol 1.1).
	revs *toolprovider.Revisions

	mu     sync.Mutex
	ready  bool // rebuilds wait until New has read the caches
	cached map[string]*serverList
	cur    built
	built  bool // cur holds the first announcement, revision 1
	table  map[string]route
	closed bool
}

var (
	_ toolprovider.Provider    = (*Bridge)(nil)
	_ toolprovider.Reannouncer = (*Bridge)(nil)
	_ io.Closer                = (*Bridge)(nil)
)

// New decodes and checks cfg.Raw, starts every enabled server and waits up to each server's
// connect_timeout for its first tool list. Servers outlive ctx: they run under a context
// derived with context.WithoutCancel and cancelled by Close. A server that is down does not
// fail New: its trouble is its own.
func New(ctx context.Context, cfg plugin.Config, opt Options) (*Bridge, error) {
	c, err := ParseConfig(cfg)
	if err != nil {
		return nil, err
	}
	if opt.Logger == nil {
		opt.Logger = hclog.NewNullLogger()
	}
	b := &Bridge{
		cfg: c, opt: opt, log: opt.Logger, dataDir: cfg.DataDir,
		byName: map[string]*server{}, cached: map[string]*serverList{},
		table: map[string]route{}, revs: toolprovider.NewRevisions(),
	}
	if b.dataDir != "" {
		for _, dir := range []string{b.dataDir, filepath.Join(b.dataDir, "cache"), filepath.Join(b.dataDir, "work")} {
			if err := os.MkdirAll(dir, 0o700); err != nil {
				return nil, fmt.Errorf("%w: data directory: %v", plugin.ErrUnavailable, err)
			}
		}
	}
	for _, sc := range c.Servers {
		if !sc.Enabled {
			continue
		}
		if l, err := readCache(b.dataDir, sc); err == nil {
			b.cached[sc.Name] = l
		} else if !os.IsNotExist(err) {
			b.log.Debug("list cache ignored", "server", sc.Name, "error", err)
		}
		s := newServer(b, sc)
		b.servers = append(b.servers, s)
		b.byName[sc.Name] = s
	}
	b.mu.Lock()
	b.ready = true
	b.mu.Unlock()
	b.rebuild()
	sctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	b.cancel = cancel
	for _, s := range b.servers {
		b.wg.Add(1)
		go func() {
			defer b.wg.Done()
			s.run(sctx)
		}()
	}
	var wg sync.WaitGroup
	for _, s := range b.servers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			t := time.NewTimer(s.cfg.ConnectTimeout)
			defer t.Stop()
			select {
			case <-s.listed:
			case <-t.C:
				b.log.Warn("server has not listed its tools in time; serving without them until it does", "server", s.cfg.Name)
			case <-ctx.Done():
			}
		}()
	}
	wg.Wait()
	return b, nil
}

func (b *Bridge) now() time.Time {
	if b.opt.Now != nil {
		return b.opt.Now()
	}
	return time.Now()
}

func (b *Bridge) serverWait() time.Duration {
	if b.opt.ServerWait > 0 {
		return b.opt.ServerWait
	}
	return DefaultServerWait
}

// rebuild assembles the announcement from every server's list (or cached list); a changed
// announcement raises the revision and is signalled.
func (b *Bridge) rebuild() {
	lists := map[string]*serverList{}
	for _, s := range b.servers {
		if l, _, _ := s.snapshot(); l != nil {
			lists[s.cfg.Name] = l
		}
	}
	b.mu.Lock()
	if !b.ready || b.closed {
		b.mu.Unlock()
		return
	}
	for name, l := range b.cached {
		if lists[name] == nil {
			lists[name] = l
		}
	}
	next := assemble(b.cfg, lists, func(msg string, args ...any) { b.log.Warn(msg, args...) })
	if b.built && bytes.Equal(next.canonical, b.cur.canonical) {
		b.mu.Unlock()
		return
	}
	first := !b.built
	prev := b.cur
	b.cur, b.built = next, true
	for name, rt := range next.routes {
		b.table[name] = rt
	}
	b.mu.Unlock()
	for _, w := range next.withheld {
		b.log.Debug("withheld", "server", w.Server, "tool", w.Tool, "reason", w.Reason)
	}
	if first {
		return
	}
	rev := b.announcementChanged()
	added, removed := diffNames(prev.announcement, next.announcement)
	b.log.Info("list changed", "revision", rev, "added", joinNames(added), "removed", joinNames(removed))
}

// announcementChanged is the one place a new announcement leaves the bridge: the revision
// advances, and the host, watching it (protocol 1.1, docs/plugins.md#protocol-11), takes the
// new announcement with Describe. Call it only after Announce answers the new one.
func (b *Bridge) announcementChanged() uint64 {
	return b.revs.Advance()
}

// Announce answers the current announcement.
func (b *Bridge) Announce(context.Context) (announce.Announcement, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.cur.announcement, nil
}

// AnnouncementRevision is the revision of what Announce returns now.
func (b *Bridge) AnnouncementRevision() uint64 { return b.revs.AnnouncementRevision() }

// AnnouncementChanges delivers the new revision after each change until ctx ends.
func (b *Bridge) AnnouncementChanges(ctx context.Context) <-chan uint64 {
	return b.revs.AnnouncementChanges(ctx)
}

// Call answers one claimed row: the served name leads through the name table to its server
// and MCP name.
func (b *Bridge) Call(ctx context.Context, call toolprovider.Call) (toolprovider.Result, error) {
	b.mu.Lock()
	rt, ok := b.table[call.Tool]
	b.mu.Unlock()
	if !ok {
		return toolprovider.Result{}, toolprovider.ErrUnknownTool
	}
	s := b.byName[rt.server]
	if s == nil {
		return toolprovider.Result{}, toolprovider.ErrUnknownTool
	}
	return b.call(ctx, s, rt, call.Input)
}

// Close ends every server: in-flight calls are cancelled with their sessions, stdio servers'
// process groups are killed after the grace.
func (b *Bridge) Close() error {
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return nil
	}
	b.closed = true
	b.mu.Unlock()
	if b.cancel != nil {
		b.cancel()
	}
	done := make(chan struct{})
	go func() {
		b.wg.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(closeGrace):
		b.log.Warn("servers did not stop within the grace")
	}
	return nil
}
