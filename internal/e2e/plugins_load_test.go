package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/nexuskernel/nexus/core/executors"
	"github.com/nexuskernel/nexus/core/store"
	"github.com/nexuskernel/nexus/core/store/storetest"
	"github.com/nexuskernel/nexus/plugins"
	"github.com/nexuskernel/nexus/sdk/client"
)

// loadPhase is how long each phase of TestPluginMemoryUnderLoad keeps its runs going: thirty
// seconds in every run of the suite, ten times that under `make soak` (NEXUS_SOAK=1).
func loadPhase() time.Duration {
	if os.Getenv("NEXUS_SOAK") != "" {
		return 300 * time.Second
	}
	return 30 * time.Second
}

// loadCallRate is the memory calls a second the load phases start on each store, shared by its
// plugins under load: a run of loadScript every loadCallsPerRun/loadCallRate seconds, started on
// time whether the runs before it finished or not, so that a server slower than the rate piles
// its calls up, and a call that waits 30 s for its claim ends tool_timeout and fails the test.
// Fifty a second is what a team's memory traffic at its busiest looks like (docs/development.md#where-the-time-goes).
const loadCallRate = 50

// raceSlowdown divides loadCallRate under the race detector, which multiplies the server's
// cost of each call several times over (its claim, the plugin's answer, the commit, and the
// model rounds around them): the race build checks the same law (every call settles, none ends
// tool_timeout, the poll finds nothing) at a fifth of the rate, and `make test-e2e` runs the
// test at the full rate without it.
const raceSlowdown = 5

// loadRate answers the calls a second this build starts (raceSlowdown).
func loadRate() int {
	if raceDetector {
		return loadCallRate / raceSlowdown
	}
	return loadCallRate
}

// loadCallsPerRound is how many memory calls each round of loadScript makes at once.
const loadCallsPerRound = 5

// loadRounds is how many rounds of calls loadScript makes.
const loadRounds = 3

// loadCallsPerRun is how many memory calls one run of loadScript makes.
const loadCallsPerRun = loadCallsPerRound * loadRounds

// loadKillEvery is how long each plugin instance serves in the second phase before it is
// killed: each restarts several times a phase, and a call a kill interrupts is replayed on the
// next instance long before that one is killed too (three kills during one call would lapse it,
// which is the replay bound working, not a lost call).
const loadKillEvery = 4 * time.Second

// loadRunWait is how long a load run is waited for: far past the memory call's 30-second
// budget, three rounds of which a run makes; a run still going then is a failure of its own.
const loadRunWait = 4 * time.Minute

// loadRunPoll spaces the reads of a run's state: each read carries the run's trace, and the
// dozens of runs in flight reading it fast would load the server more than their runs do.
const loadRunPoll = 100 * time.Millisecond

// loadTarget is one memory plugin under load: the workspace whose override names it.
type loadTarget struct {
	plugin    string
	workspace string
	calls     atomic.Int64
	// timeouts counts the calls of the phase that ended tool_timeout, each reported at the end.
	timeouts atomic.Int64
}

// TestPluginMemoryUnderLoad floods the plugins' feeds on purpose (flood), then keeps memory
// plugins busy at loadRate memory calls a second, loadCallsPerRound at once, for a sustained
// phase and then for another while the plugins are killed now and then.
// memory-fs serves the default workspace and, with PostgreSQL configured, memory-postgres serves
// a second one at the same time, each taking its share of the rate; the test runs on each store.
// Every call settles (completed, or uncertain for a memory_edit a kill interrupted) within the
// memory family's default 30-second budget, none ends tool_timeout, and the inbox poll, which
// ticks five times a second here, found nothing a wake-up should have announced.
//
// One server per store carries both plugins at once, so that each (store, plugin) pair gets the
// whole phase while the suite pays for one phase per store, and the stores run in parallel.
func TestPluginMemoryUnderLoad(t *testing.T) {
	t.Parallel()
	for _, d := range storetest.Dialects() {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			p := startPluginsWith(t, d, "", pluginStart{level: hclog.Info, timings: pluginTimings})
			targets := []*loadTarget{{plugin: "memory-fs", workspace: "default"}}
			p.putOverride(p.executorOf("memory-fs"), 0)
			if p.pgSchema != "" {
				targets = append(targets, p.secondWorkspaceFor(t, "memory-pg", "ops"))
			}
			p.flood(t, targets)
			phase := loadPhase()
			p.loadPhase(t, targets, phase, false)
			p.checkPollFound(t, targets, "after the sustained load")
			p.loadPhase(t, targets, phase, true)
			p.checkPollFound(t, targets, "after the load with kills")
			for _, tg := range targets {
				t.Logf("%s on %s: %d memory calls settled", tg.plugin, d, tg.calls.Load())
			}
		})
	}
}

// flood fills each target's feed on purpose before the load: thousands of wake-ups and
// cancellations for rows that do not exist, far past any buffer, in one burst. A feed that closed
// for it would leave the calls that follow to the poll, which poll_found would count; the load
// phase asserts it stays 0, and nothing may log a feed reopened or a stream closed for falling
// behind.
func (p *pluginServer) flood(t *testing.T, targets []*loadTarget) {
	t.Helper()
	hub := p.srv.Server().Push()
	st := p.statuses()
	for _, tg := range targets {
		ids := []string{*st[tg.plugin].ExecutorPublicID}
		for i := range 100 * executors.StreamBuffer {
			run := store.NewPublicID()
			hub.WorkAvailable(run, fmt.Sprintf("r%dt0", i), "memory_read", ids)
			hub.WorkCanceled(run, fmt.Sprintf("r%dt0", i), ids, executors.ReasonRunCanceled)
		}
	}
	t.Cleanup(func() {
		if logs := p.srv.Logs(); strings.Contains(logs, "work feed ended") || strings.Contains(logs, "closing an event stream that fell behind") {
			t.Errorf("the flood closed a feed or a stream:\n%s", logs)
		}
	})
}

// secondWorkspaceFor creates a workspace, restarts the plugin so that it registers an executor
// there, and points the workspace's memory override at it.
func (p *pluginServer) secondWorkspaceFor(t *testing.T, plugin, handle string) *loadTarget {
	t.Helper()
	if _, err := p.admin.CreateWorkspace(p.ctx, &client.CreateWorkspaceRequest{Handle: handle, Name: handle}); err != nil {
		t.Fatal(err)
	}
	before := p.statuses()[plugin]
	if code, _, body := p.raw(http.MethodPost, "/agent_api/v1/plugins/"+plugin+"/restart", p.srv.AdminToken, nil, nil); code != http.StatusOK {
		t.Fatalf("restart: %d %s", code, body)
	}
	p.waitPlugin(plugin, func(s plugins.Status) bool { return s.State == plugins.StateReady && s.Generation > before.Generation })
	list, err := p.admin.Executors(p.ctx, &client.ListExecutorsRequest{Workspace: handle, Kind: "tool_provider"})
	if err != nil {
		t.Fatal(err)
	}
	id := ""
	for _, e := range list.Executors {
		if e.DisplayName == "plugin "+plugin {
			id = e.PublicID
		}
	}
	if id == "" {
		t.Fatalf("no executor of %s in %s: %s", plugin, handle, list.Raw)
	}
	body := `{"tool_provider_overrides":{"nexus.memory":"` + id + `"},"expected_lock_version":0}`
	if code, _, out := p.raw(http.MethodPut, "/agent_api/v1/workspaces/"+handle+"/tool_provider_overrides", p.srv.AdminToken, []byte(body), nil); code != http.StatusOK {
		t.Fatalf("override in %s: %d %s", handle, code, out)
	}
	return &loadTarget{plugin: plugin, workspace: handle}
}

// loadDocs is how many pairs of documents a target's runs take turns on: run n writes the pair
// n mod loadDocs, so two runs share a pair only when one outlasts loadDocs starts (seven
// seconds at the rate), and 48 documents stay inside an anchor's 64.
const loadDocs = 24

// loadScript is one run of the load: loadRounds rounds of loadCallsPerRound memory calls at once,
// on its pair of documents (loadDocs).
func loadScript(worker, n int) string {
	a, b := fmt.Sprintf("workspace/load-%d-%d-a.md", worker, n%loadDocs), fmt.Sprintf("workspace/load-%d-%d-b.md", worker, n%loadDocs)
	return fmt.Sprintf(`Load.
!mock
round 1
call memory_write {"path":%[1]q,"content":"run %[3]d"}
call memory_write {"path":%[2]q,"content":"draft %[3]d"}
call memory_ls {}
call memory_grep {"pattern":"load"}
call memory_ls {}
round 2
call memory_read {"path":%[1]q}
call memory_edit {"path":%[2]q,"old_text":"draft","new_text":"final"}
call memory_grep {"pattern":"run %[3]d"}
call memory_ls {}
call memory_read {"path":%[1]q}
round 3
call memory_ls {}
call memory_read {"path":%[2]q}
call memory_write {"path":%[1]q,"content":"done %[3]d"}
call memory_grep {"pattern":"final"}
call memory_read {"path":%[2]q}
round 4
say done`, a, b, n)
}

// loadCalls are the memory calls of loadScript by task key.
var loadCalls = []string{"r2t0", "r2t1", "r2t2", "r2t3", "r2t4", "r3t0", "r3t1", "r3t2", "r3t3", "r3t4", "r4t0", "r4t1", "r4t2", "r4t3", "r4t4"}

// loadPhase starts runs of loadScript at loadRate calls a second, shared by the targets,
// for the phase's length, and waits for every run it started; with kills, a killer SIGKILLs
// each plugin every loadKillEvery.
func (p *pluginServer) loadPhase(t *testing.T, targets []*loadTarget, length time.Duration, kills bool) {
	t.Helper()
	end := time.Now().Add(length)
	// Each target's runs start every interval.
	interval := time.Duration(len(targets)) * time.Second * loadCallsPerRun / time.Duration(loadRate())
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for k, tg := range targets {
		wg.Add(1)
		go func() {
			defer wg.Done()
			tick := time.NewTicker(interval)
			defer tick.Stop()
			for n := 0; time.Now().Before(end); n++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					if err := p.loadRun(tg, k, n, kills); err != nil {
						select {
						case errs <- fmt.Errorf("%s run %d: %w", tg.plugin, n, err):
						default:
						}
					}
				}()
				<-tick.C
			}
		}()
	}
	killed := 0
	if kills {
		wg.Add(1)
		go func() {
			defer wg.Done()
			killed = p.killer(targets, end)
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	for _, tg := range targets {
		if n := tg.timeouts.Swap(0); n > 0 {
			t.Errorf("%s: %d memory calls ended tool_timeout in the phase (kills %v)", tg.plugin, n, kills)
		}
	}
	if t.Failed() {
		t.FailNow()
	}
	if kills && killed == 0 {
		t.Fatal("no plugin was killed during the phase")
	}
	for _, tg := range targets {
		p.waitPlugin(tg.plugin, func(s plugins.Status) bool { return s.State == plugins.StateReady && s.InFlight == 0 })
	}
}

// killer SIGKILLs each target's plugin once it has been ready for loadKillEvery and completed
// a call on its current instance, until end; it answers the number of kills.
func (p *pluginServer) killer(targets []*loadTarget, end time.Time) int {
	type seen struct {
		pid       int
		since     time.Time
		completed int
	}
	last := map[string]seen{}
	killed := 0
	for time.Now().Before(end) {
		time.Sleep(100 * time.Millisecond)
		for _, tg := range targets {
			st := p.statusOrNil(tg.plugin)
			if st == nil || st.State != plugins.StateReady || st.PID == nil {
				continue
			}
			s, ok := last[tg.plugin]
			if !ok || s.pid != *st.PID {
				last[tg.plugin] = seen{pid: *st.PID, since: time.Now(), completed: st.Calls.Completed}
				continue
			}
			if time.Since(s.since) < loadKillEvery || st.Calls.Completed == s.completed {
				continue
			}
			if killPID(*st.PID) == nil {
				killed++
			}
		}
	}
	return killed
}

// statusOrNil reads one plugin's status without failing the test (a killer goroutine's read).
func (p *pluginServer) statusOrNil(name string) *plugins.Status {
	code, _, body := p.raw(http.MethodGet, "/agent_api/v1/plugins/"+name, p.srv.AdminToken, nil, nil)
	if code != http.StatusOK {
		return nil
	}
	var doc struct {
		Plugin plugins.Status `json:"plugin"`
	}
	if err := json.Unmarshal(body, &doc); err != nil {
		return nil
	}
	return &doc.Plugin
}

// loadRun runs one script to its end and checks every memory call: settled, never timed out,
// and (without kills) completed with the texts the writes imply.
func (p *pluginServer) loadRun(tg *loadTarget, worker, n int, kills bool) error {
	ctx := context.Background()
	created, err := p.admin.CreateRun(ctx, tg.workspace, memoryRun(loadScript(worker, n)), "")
	if err != nil {
		return err
	}
	id := created.Run.PublicID
	deadline := time.Now().Add(loadRunWait)
	var run *client.RunResponse
	for {
		run, err = p.admin.Run(ctx, tg.workspace, id)
		if err != nil {
			return err
		}
		if s := run.Run.Status; s == "completed" || s == "needs_attention" || s == "canceled" {
			break
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("run %s still %s after %v", id, run.Run.Status, loadRunWait)
		}
		time.Sleep(loadRunPoll)
	}
	byKey := map[string]client.Task{}
	for _, tk := range run.Run.Tasks {
		byKey[tk.Key] = tk
	}
	uncertain := false
	var timedOut []string
	for _, key := range loadCalls {
		if tk, ok := byKey[key]; ok && tk.Error != nil && tk.Error.Key == "tool_timeout" {
			timedOut = append(timedOut, key+" "+tk.ToolName)
		}
	}
	if len(timedOut) > 0 {
		tg.timeouts.Add(int64(len(timedOut)))
		return fmt.Errorf("run %s: %d calls ended tool_timeout: %v", id, len(timedOut), timedOut)
	}
	for _, key := range loadCalls {
		tk, ok := byKey[key]
		if !ok {
			return fmt.Errorf("run %s (%s) has no task %s: %s", id, run.Run.Status, key, run.Raw)
		}
		switch {
		case tk.Status == "completed" && tk.IsError != nil && *tk.IsError:
			return fmt.Errorf("run %s: %s %s answered an error: %s", id, key, tk.ToolName, run.Raw)
		case tk.Status == "completed":
		case kills && tk.Status == "uncertain" && tk.ToolName == "memory_edit" && tk.Error != nil && tk.Error.Key == "tool_uncertain":
			uncertain = true // a kill interrupted a call that is not replayed
		default:
			return fmt.Errorf("run %s: %s %s settled %s (%+v)", id, key, tk.ToolName, tk.Status, tk.Error)
		}
	}
	tg.calls.Add(int64(len(loadCalls)))
	if run.Run.Status != "completed" && !uncertain {
		return fmt.Errorf("run %s ended %s: %s", id, run.Run.Status, run.Raw)
	}
	if kills {
		return nil
	}
	read, err := p.admin.Task(ctx, tg.workspace, id, "r3t0")
	if err != nil {
		return err
	}
	if got, want := deref(read.Task.Output), fmt.Sprintf("run %d", n); got != want || read.Task.IsError == nil || *read.Task.IsError {
		return fmt.Errorf("run %s: read %q, want %q: %s", id, got, want, read.Raw)
	}
	read, err = p.admin.Task(ctx, tg.workspace, id, "r4t1")
	if err != nil {
		return err
	}
	if got, want := deref(read.Task.Output), fmt.Sprintf("final %d", n); got != want {
		return fmt.Errorf("run %s: read after the edit %q, want %q", id, got, want)
	}
	return nil
}

// checkPollFound asserts that no target's poll found work a wake-up should have announced.
func (p *pluginServer) checkPollFound(t *testing.T, targets []*loadTarget, when string) {
	t.Helper()
	st := p.statuses()
	for _, tg := range targets {
		if n := st[tg.plugin].PollFound; n != 0 {
			t.Errorf("%s %s: poll_found %d", tg.plugin, when, n)
		}
	}
	if logs := p.srv.Logs(); strings.Contains(logs, "the inbox poll found work no wake-up announced") {
		t.Errorf("%s: the poll's warning was logged", when)
	}
	if t.Failed() {
		t.FailNow()
	}
}
