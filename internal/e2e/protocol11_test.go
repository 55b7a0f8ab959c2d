package e2e

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nexuskernel/nexus/core/store"
	"github.com/nexuskernel/nexus/plugins"
	"github.com/nexuskernel/nexus/sdk/announce"
	"github.com/nexuskernel/nexus/sdk/plugin"
	"github.com/nexuskernel/nexus/sdk/toolprovider"
)

// e2ePluginEnv, when set, makes this test binary serve a plugin process: the takeover tests'
// (takeoverPluginName), or changingTools for any other value.
const e2ePluginEnv = "NEXUS_E2E_PLUGIN"

// lostTimeout is the lost-answer tools' timeout_ms: far past what the tests wait, so a row that
// settles is settled by the lost answer, not by its deadline.
const lostTimeout = 10 * time.Minute

// changingTools is a protocol 1.1 tool provider: e2e_grow adds e2e_grown to its announcement,
// e2e_lost (a write) and e2e_lost_read (read-only) lose every answer.
type changingTools struct {
	*toolprovider.Revisions
	mu    sync.Mutex
	grown bool
}

func (c *changingTools) Announce(context.Context) (announce.Announcement, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	names := []string{"e2e_grow", "e2e_lost", "e2e_lost_read"}
	if c.grown {
		names = append(names, "e2e_grown")
	}
	a := announce.Announcement{}
	timeout := lostTimeout.Milliseconds()
	for _, n := range names {
		profile := announce.EffectWrite
		if n == "e2e_lost_read" {
			profile = announce.EffectReadOnly
		}
		a.Tools = append(a.Tools, announce.Tool{Name: n, EffectProfile: announce.Announced(profile), TimeoutMS: &timeout})
	}
	return a, nil
}

func (c *changingTools) Call(_ context.Context, call toolprovider.Call) (toolprovider.Result, error) {
	switch call.Tool {
	case "e2e_grow":
		c.mu.Lock()
		c.grown = true
		c.mu.Unlock()
		return toolprovider.Result{Text: "revision " + strconv.FormatUint(c.Advance(), 10)}, nil
	case "e2e_grown":
		return toolprovider.Result{Text: "grown, attempt " + strconv.Itoa(call.Claim.Attempt)}, nil
	case "e2e_lost", "e2e_lost_read":
		return toolprovider.Result{}, fmt.Errorf("attempt %d: the answer was lost: %w", call.Claim.Attempt, toolprovider.ErrOutcomeUnknown)
	}
	return toolprovider.Result{}, toolprovider.ErrUnknownTool
}

func serveChangingPlugin() {
	toolprovider.Serve(toolprovider.ServeConfig{
		Info: plugin.Info{Name: "e2e-changing", Version: "0.0.1"},
		Configure: func(context.Context, plugin.Config) (toolprovider.Provider, error) {
			return &changingTools{Revisions: toolprovider.NewRevisions()}, nil
		},
	})
	os.Exit(0)
}

// changingPluginBlock is the catalog block that runs this binary as the changing plugin.
func changingPluginBlock(t *testing.T) string {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf(`
plugin "changing" {
  kind    = "tool_provider"
  command = %q
  env     = { %s = "1", GORACE = "atexit_sleep_ms=0" }
}
`, exe, e2ePluginEnv)
}

// TestPluginReannouncement: a 1.1 plugin's new tool reaches runs accepted after its
// re-announcement, on the real server; a call born before it was tool_not_served, and the
// plugin was never restarted.
func TestPluginReannouncement(t *testing.T) {
	t.Parallel()
	p := startPlugins(t, store.SQLite, changingPluginBlock(t))
	st := p.waitPlugin("changing", func(s plugins.Status) bool { return s.State == plugins.StateReady })
	if st.Announcement.Revision != 1 || slices.Contains(st.Tools, "e2e_grown") {
		t.Fatalf("at load: %+v", st)
	}
	call := func(tool string) string {
		return p.modelRun("mock/scripted", "Call it.\n!mock\nround 1\ncall "+tool+" {}\nround 2\nsay done", []any{plain(tool)}, nil, "bypass", nil)
	}
	before := call("e2e_grown")
	if tk := p.waitTask(before, "r2t0", "failed", "completed"); tk.Task.Error == nil || tk.Task.Error.Key != "tool_not_served" {
		t.Fatalf("before the change: %s", tk.Raw)
	}
	grow := call("e2e_grow")
	if tk := p.waitTask(grow, "r2t0", "completed", "failed"); deref(tk.Task.Output) != "revision 2" {
		t.Fatalf("e2e_grow: %s", tk.Raw)
	}
	st = p.waitPlugin("changing", func(s plugins.Status) bool { return s.Announcement.Revision == 2 })
	if !slices.Contains(st.Tools, "e2e_grown") || st.Restarts != 0 || st.Announcement.Refusal != nil || st.Announcement.AnnouncedAt == nil {
		t.Fatalf("after the change: %+v", st)
	}
	read, err := p.admin.Plugin(p.ctx, "changing")
	if err != nil || read.Plugin.Announcement.Revision != 2 || read.Plugin.Announcement.AnnouncedAt == nil || read.Plugin.Announcement.Refusal != nil {
		t.Fatalf("the client's read of the status: %s %v", read.Raw, err)
	}
	ex, err := p.admin.Executor(p.ctx, *st.ExecutorPublicID)
	if err != nil || !strings.Contains(string(ex.Raw), `"e2e_grown"`) {
		t.Fatalf("the executor read after the change: %s %v", ex.Raw, err)
	}
	after := call("e2e_grown")
	if tk := p.waitTask(after, "r2t0", "completed", "failed"); deref(tk.Task.Output) != "grown, attempt 1" {
		t.Fatalf("after the change: %s", tk.Raw)
	}
	// The run born before the change keeps what it was born with.
	if tk := p.task(before, "r2t0"); tk.Task.Status != "failed" || tk.Task.Error.Key != "tool_not_served" {
		t.Fatalf("the earlier call changed: %s", tk.Raw)
	}
}

// TestPluginLostAnswer: on the real server a lost answer settles a write uncertain at once and a
// read-only call, replayed to the attempt bound, timed_out, both long before their deadlines,
// without a restart.
func TestPluginLostAnswer(t *testing.T) {
	t.Parallel()
	p := startPlugins(t, store.SQLite, changingPluginBlock(t))
	st := p.waitPlugin("changing", func(s plugins.Status) bool { return s.State == plugins.StateReady })
	start := time.Now()
	run := p.modelRun("mock/scripted", "Lose them.\n!mock\nround 1\ncall e2e_lost {}\ncall e2e_lost_read {}\nround 2\nsay done",
		[]any{plain("e2e_lost"), plain("e2e_lost_read")}, nil, "bypass", nil)
	write := p.waitTask(run, "r2t0", "uncertain", "completed", "failed", "timed_out")
	if write.Task.Status != "uncertain" || write.Task.Error == nil || write.Task.Error.Key != "tool_uncertain" {
		t.Fatalf("the lost write: %s", write.Raw)
	}
	read := p.waitTask(run, "r2t1", "timed_out", "uncertain", "completed", "failed")
	if read.Task.Status != "timed_out" || read.Task.Error == nil || read.Task.Error.Key != "tool_timeout" {
		t.Fatalf("the lost read: %s", read.Raw)
	}
	if d := time.Since(start); d > lostTimeout/2 {
		t.Errorf("the lost calls settled after %v", d)
	}
	p.waitRunStatus(run, "completed")
	after := p.statuses()["changing"]
	if after.Generation != st.Generation || after.Restarts != 0 || after.Calls.Replayed != 2 || after.Calls.Expired != 2 {
		t.Fatalf("after the lost answers: %+v", after)
	}
}
