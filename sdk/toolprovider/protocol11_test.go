package toolprovider_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	goplugin "github.com/hashicorp/go-plugin"

	"github.com/nexuskernel/nexus/sdk/announce"
	"github.com/nexuskernel/nexus/sdk/plugin"
	"github.com/nexuskernel/nexus/sdk/toolprovider"
	"github.com/nexuskernel/nexus/sdk/toolprovider/toolprovidertest"
)

// changing is a provider whose tool list changes: grow adds a tool and advances the revision.
// Its tool "lost" answers ErrOutcomeUnknown, "failed" a Result with Failed.
type changing struct {
	*toolprovider.Revisions
	mu    sync.Mutex
	tools []string
}

var _ toolprovider.Reannouncer = (*changing)(nil)

func newChanging() *changing {
	return &changing{Revisions: toolprovider.NewRevisions(), tools: []string{"one"}}
}

func (c *changing) Announce(context.Context) (announce.Announcement, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	var a announce.Announcement
	for _, n := range c.tools {
		a.Tools = append(a.Tools, announce.Tool{Name: n, EffectProfile: announce.Announced(announce.EffectPure)})
	}
	return a, nil
}

func (c *changing) Call(_ context.Context, call toolprovider.Call) (toolprovider.Result, error) {
	switch call.Tool {
	case "lost":
		return toolprovider.Result{}, fmt.Errorf("server exited mid-call: %w", toolprovider.ErrOutcomeUnknown)
	case "failed":
		return toolprovider.Result{Text: "ignored", Failed: true, FailureDetail: "mcp server fx is unavailable: starting"}, nil
	}
	return toolprovider.Result{Text: call.Tool}, nil
}

func (c *changing) grow(name string) {
	c.mu.Lock()
	c.tools = append(c.tools, name)
	c.mu.Unlock()
	c.Advance()
}

// overGRPCAt is toolprovidertest.OverGRPC with the server speaking the given protocol minor.
func overGRPCAt(t *testing.T, p toolprovider.Provider, minor int) toolprovider.Client {
	t.Helper()
	key := plugin.KindToolProvider.PluginSetKey()
	client, _ := goplugin.TestPluginGRPCConn(t, false, map[string]goplugin.Plugin{key: toolprovider.ServerPluginAtMinor(toolprovider.ServeConfig{
		Info:      plugin.Info{Name: "old", Version: "1.0.0"},
		Configure: func(context.Context, plugin.Config) (toolprovider.Provider, error) { return p, nil },
	}, minor)})
	t.Cleanup(func() { _ = client.Close() })
	raw, err := client.Dispense(key)
	if err != nil {
		t.Fatal(err)
	}
	c := raw.(toolprovider.Client)
	if err := c.Configure(t.Context(), plugin.Config{PluginName: "old"}); err != nil {
		t.Fatal(err)
	}
	return c
}

// watch runs WatchAnnouncement in the background and delivers its revisions and its end.
func watch(ctx context.Context, c toolprovider.Client) (<-chan uint64, <-chan error) {
	revs := make(chan uint64, 16)
	done := make(chan error, 1)
	go func() { done <- c.WatchAnnouncement(ctx, func(r uint64) { revs <- r }) }()
	return revs, done
}

func nextRevision(t *testing.T, revs <-chan uint64) uint64 {
	t.Helper()
	select {
	case r := <-revs:
		return r
	case <-time.After(10 * time.Second):
		t.Fatal("no revision arrived")
		return 0
	}
}

// TestReannouncement: Describe carries the revision of the announcement it answers; the stream
// sends the current revision at once, then each change, and Describe then answers the new list.
func TestReannouncement(t *testing.T) {
	t.Parallel()
	p := newChanging()
	c := toolprovidertest.OverGRPC(t, p)
	info, a, rev, err := c.DescribeRevision(t.Context())
	if err != nil || rev != 1 || len(a.Tools) != 1 || info.ProtocolMinor != plugin.ProtocolMinor || plugin.ProtocolMinor != 3 {
		t.Fatalf("describe: minor %d, revision %d, %d tools, %v", info.ProtocolMinor, rev, len(a.Tools), err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	revs, done := watch(ctx, c)
	if r := nextRevision(t, revs); r != 1 {
		t.Fatalf("first revision %d, want the current 1", r)
	}
	p.grow("two")
	if r := nextRevision(t, revs); r != 2 {
		t.Fatalf("after a change: revision %d, want 2", r)
	}
	_, a, rev, err = c.DescribeRevision(t.Context())
	if err != nil || rev != 2 || len(a.Tools) != 2 || a.Tools[1].Name != "two" {
		t.Fatalf("describe after the change: revision %d, %+v, %v", rev, a.Tools, err)
	}
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Errorf("a watch whose context ended answered %v", err)
	}
}

// TestWatchUnsupported: a provider that never changes its announcement answers Unimplemented,
// which the client reads as errors.ErrUnsupported; its Describe reports revision 0.
func TestWatchUnsupported(t *testing.T) {
	t.Parallel()
	c := toolprovidertest.OverGRPC(t, newMux())
	if _, _, rev, err := c.DescribeRevision(t.Context()); err != nil || rev != 0 {
		t.Fatalf("revision %d, %v", rev, err)
	}
	if err := c.WatchAnnouncement(t.Context(), func(uint64) { t.Error("a revision arrived") }); !errors.Is(err, errors.ErrUnsupported) {
		t.Errorf("watch answered %v, want errors.ErrUnsupported", err)
	}
}

// TestLostAnswer: ErrOutcomeUnknown crosses the wire and comes back as the same sentinel.
func TestLostAnswer(t *testing.T) {
	t.Parallel()
	c := toolprovidertest.OverGRPC(t, newChanging())
	_, err := c.Call(t.Context(), toolprovider.Call{Tool: "lost"})
	var ce *toolprovider.CallError
	if !errors.Is(err, toolprovider.ErrOutcomeUnknown) || !errors.As(err, &ce) || ce.Kind != "outcome_unknown" {
		t.Fatalf("a lost answer came back as %v", err)
	}
	if ce.Message != "server exited mid-call: toolprovider: outcome unknown" {
		t.Errorf("message %q", ce.Message)
	}
}

// TestResultFailed: a Result with Failed is the failed outcome with the exact detail.
func TestResultFailed(t *testing.T) {
	t.Parallel()
	for name, c := range map[string]toolprovider.Client{
		"grpc": toolprovidertest.OverGRPC(t, newChanging()), "minor 0": overGRPCAt(t, newChanging(), 0),
	} {
		_, err := c.Call(t.Context(), toolprovider.Call{Tool: "failed"})
		var f *toolprovider.FailedError
		if !errors.As(err, &f) || f.Detail != "mcp server fx is unavailable: starting" {
			t.Errorf("%s: a failed result came back as %v", name, err)
		}
	}
}

// TestMinor0: the adapter speaking minor 0 is what an older plugin is on the wire: it reports
// minor 0 and no revision, has no WatchAnnouncement (even for a provider that would answer it),
// and knows no lost-answer kind, so the host reads one as an internal failure.
func TestMinor0(t *testing.T) {
	t.Parallel()
	c := overGRPCAt(t, newChanging(), 0)
	info, a, rev, err := c.DescribeRevision(t.Context())
	if err != nil || info.ProtocolMinor != 0 || rev != 0 || len(a.Tools) != 1 {
		t.Fatalf("describe: minor %d, revision %d, %+v, %v", info.ProtocolMinor, rev, a, err)
	}
	if err := c.WatchAnnouncement(t.Context(), func(uint64) { t.Error("a revision arrived") }); !errors.Is(err, errors.ErrUnsupported) {
		t.Errorf("watch answered %v, want errors.ErrUnsupported", err)
	}
	_, err = c.Call(t.Context(), toolprovider.Call{Tool: "lost"})
	var ce *toolprovider.CallError
	if errors.Is(err, toolprovider.ErrOutcomeUnknown) || !errors.As(err, &ce) || ce.Kind != "internal" {
		t.Errorf("minor 0 sent a lost answer as %v", err)
	}
	if res, err := c.Call(t.Context(), toolprovider.Call{Tool: "one"}); err != nil || res.Text != "one" {
		t.Errorf("a call: %+v, %v", res, err)
	}
}

// TestWatchWithoutDescribe: before any Describe the client does not know the plugin's minor
// and asks; a minor-0 plugin's missing method still reads as unsupported.
func TestWatchWithoutDescribe(t *testing.T) {
	t.Parallel()
	key := plugin.KindToolProvider.PluginSetKey()
	client, _ := goplugin.TestPluginGRPCConn(t, false, map[string]goplugin.Plugin{key: toolprovider.ServerPluginAtMinor(toolprovider.ServeConfig{
		Configure: func(context.Context, plugin.Config) (toolprovider.Provider, error) { return newChanging(), nil },
	}, 0)})
	t.Cleanup(func() { _ = client.Close() })
	raw, err := client.Dispense(key)
	if err != nil {
		t.Fatal(err)
	}
	c := raw.(toolprovider.Client)
	if err := c.Configure(t.Context(), plugin.Config{}); err != nil {
		t.Fatal(err)
	}
	if err := c.WatchAnnouncement(t.Context(), func(uint64) {}); !errors.Is(err, errors.ErrUnsupported) {
		t.Errorf("watch answered %v, want errors.ErrUnsupported", err)
	}
}

// TestRevisions: every watcher hears each change; a slow one at least the latest; an ended
// one's channel closes.
func TestRevisions(t *testing.T) {
	t.Parallel()
	r := toolprovider.NewRevisions()
	if r.AnnouncementRevision() != 1 {
		t.Fatalf("start at %d", r.AnnouncementRevision())
	}
	ctx, cancel := context.WithCancel(t.Context())
	fast, slow := r.AnnouncementChanges(ctx), r.AnnouncementChanges(ctx)
	if got := r.Advance(); got != 2 || <-fast != 2 {
		t.Fatalf("advance answered %d", got)
	}
	r.Advance()
	r.Advance()
	if got := <-slow; got != 4 {
		t.Errorf("a slow watcher read %d, want the latest 4", got)
	}
	if got := <-fast; got != 4 {
		t.Errorf("the fast watcher read %d, want 4", got)
	}
	cancel()
	deadline := time.After(5 * time.Second)
	for _, ch := range []<-chan uint64{fast, slow} {
		select {
		case _, open := <-ch:
			if open {
				t.Error("a value after the end")
			}
		case <-deadline:
			t.Fatal("an ended watcher's channel stayed open")
		}
	}
	r.Advance() // no watchers left: never blocks
}
