package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nexuskernel/nexus/core/store"
	"github.com/nexuskernel/nexus/core/store/storetest"
	"github.com/nexuskernel/nexus/internal/testserver"
	"github.com/nexuskernel/nexus/plugins"
	"github.com/nexuskernel/nexus/sdk/announce"
	"github.com/nexuskernel/nexus/sdk/plugin"
	"github.com/nexuskernel/nexus/sdk/toolprovider"
)

// The takeover of a dead instance's plugin claims (docs/operations.md#instance-liveness-and-takeover):
// this test binary serves a tool provider whose two tools take as long as a call asks, one
// replayable and one not, to the servers of these tests.
const (
	// takeoverPluginName is the plugin's catalog name, and the value of e2ePluginEnv that makes
	// this binary serve it (TestMain).
	takeoverPluginName = "takeover"
	// takeoverCallsEnv names the file the plugin appends a line to as each call starts and ends
	// ("start|done <tool> <tag> <pid>"), shared by the plugins of every instance of a test.
	takeoverCallsEnv = "NEXUS_E2E_TAKEOVER_CALLS"
	// takeoverClaimDeadline is the tools' timeout_ms, and the runs': the claims' deadline, ten
	// minutes, which no test here may wait for.
	takeoverClaimDeadline = 10 * time.Minute
	// slowRead is replayable (read_only); slowWrite is not (a write without intrinsic
	// idempotency).
	slowRead  = "e2e_slow_read"
	slowWrite = "e2e_slow_write"
	// slowKey is the key of a run's one tool step.
	slowKey = "s1-tool-1"
)

// takeoverTools is the plugin: each call sleeps its input's ms, then answers
// "<tool> <tag> by <pid>, attempt <n>".
type takeoverTools struct{ calls string }

func (takeoverTools) Announce(context.Context) (announce.Announcement, error) {
	timeout := takeoverClaimDeadline.Milliseconds()
	schema := json.RawMessage(`{"type":"object","properties":{"tag":{"type":"string"},"ms":{"type":"integer"}},"required":["tag","ms"]}`)
	a := announce.Announcement{}
	for name, profile := range map[string]announce.EffectProfile{slowRead: announce.EffectReadOnly, slowWrite: announce.EffectWrite} {
		d := "Take ms milliseconds, then answer."
		a.Tools = append(a.Tools, announce.Tool{Name: name, Description: &d, InputSchema: schema,
			EffectProfile: announce.Announced(profile), TimeoutMS: &timeout})
	}
	return a, nil
}

func (p takeoverTools) Call(ctx context.Context, call toolprovider.Call) (toolprovider.Result, error) {
	if call.Tool != slowRead && call.Tool != slowWrite {
		return toolprovider.Result{}, toolprovider.ErrUnknownTool
	}
	var in struct {
		Tag string `json:"tag"`
		MS  int64  `json:"ms"`
	}
	if err := call.Decode(&in); err != nil {
		return toolprovider.Result{}, toolprovider.Failed(err.Error())
	}
	p.record("start", call.Tool, in.Tag)
	select {
	case <-time.After(time.Duration(in.MS) * time.Millisecond):
	case <-ctx.Done():
		return toolprovider.Result{}, ctx.Err()
	}
	p.record("done", call.Tool, in.Tag)
	return toolprovider.Result{Text: fmt.Sprintf("%s %s by %d, attempt %d", call.Tool, in.Tag, os.Getpid(), call.Claim.Attempt)}, nil
}

// record appends one line to the calls file: a line is one small append, whole in the file
// whichever plugin process wrote it.
func (p takeoverTools) record(event, tool, tag string) {
	f, err := os.OpenFile(p.calls, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		return
	}
	defer f.Close()
	fmt.Fprintf(f, "%s %s %s %d\n", event, tool, tag, os.Getpid())
}

func serveTakeoverPlugin() {
	toolprovider.Serve(toolprovider.ServeConfig{
		Info: plugin.Info{Name: "e2e-takeover", Version: "0.0.1"},
		Configure: func(context.Context, plugin.Config) (toolprovider.Provider, error) {
			return takeoverTools{calls: os.Getenv(takeoverCallsEnv)}, nil
		},
	})
	os.Exit(0)
}

// takeoverConfig is base (the kernel block of several instances) with the takeover plugin,
// recording its calls into calls.
func takeoverConfig(t testing.TB, base, calls string) string {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return base + fmt.Sprintf(`
plugin %q {
  kind    = "tool_provider"
  command = %q
  env     = { %s = %q, %s = %q, GORACE = "atexit_sleep_ms=0" }
}
`, takeoverPluginName, exe, e2ePluginEnv, takeoverPluginName, takeoverCallsEnv, calls)
}

// slowRun is a run of one tool step calling tool for ms milliseconds, with the ten-minute claim
// deadline.
func slowRun(tool, tag string, ms int) map[string]any {
	return map[string]any{
		"steps": []any{map[string]any{"tool": map[string]any{
			"name": tool, "input": map[string]any{"tag": tag, "ms": ms}, "timeout_ms": takeoverClaimDeadline.Milliseconds(),
		}}},
		"approval_mode": "bypass",
	}
}

// pluginHeldBy lists the rows of tool that a plugin of instance id holds claims of.
func pluginHeldBy(t testing.TB, st *store.Store, id, tool string) []heldRow {
	t.Helper()
	var rows []heldRow
	if err := st.Reader().Select(context.Background(), &rows, `SELECT id, claim_generation FROM tasks
WHERE claimed_instance = ? AND claimed_at IS NOT NULL AND status = 'dispatched' AND tool_name = ?`, id, tool); err != nil {
		t.Fatal(err)
	}
	return rows
}

// claimRow is what a row says of its claim and settlement.
type claimRow struct {
	Status     string  `db:"status"`
	Generation int64   `db:"claim_generation"`
	Instance   *string `db:"claimed_instance"`
	ErrorKey   *string `db:"error_key"`
	Detail     *string `db:"error_detail"`
	Output     *string `db:"output"`
}

func readClaimRow(t testing.TB, st *store.Store, id int64) claimRow {
	t.Helper()
	var r claimRow
	if err := st.Reader().Get(context.Background(), &r, `SELECT status, claim_generation, claimed_instance, error_key, error_detail, output
FROM tasks WHERE id = ?`, id); err != nil {
		t.Fatal(err)
	}
	return r
}

// pluginPID is the process id of the takeover plugin on in.
func pluginPID(t *testing.T, in *testserver.Instance) int {
	t.Helper()
	st, err := in.Client().Plugin(context.Background(), takeoverPluginName)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Plugin plugins.Status `json:"plugin"`
	}
	if err := json.Unmarshal(st.Raw, &doc); err != nil || doc.Plugin.PID == nil {
		t.Fatalf("the takeover plugin's status: %s %v", st.Raw, err)
	}
	return *doc.Plugin.PID
}

// callLines reads the calls file's lines.
func callLines(t testing.TB, calls string) []string {
	t.Helper()
	b, err := os.ReadFile(calls)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	return strings.Split(strings.TrimSpace(string(b)), "\n")
}

// waitCallLine waits until the calls file holds line.
func waitCallLine(t testing.TB, calls, line string, within time.Duration) {
	t.Helper()
	for deadline := time.Now().Add(within); ; time.Sleep(20 * time.Millisecond) {
		for _, l := range callLines(t, calls) {
			if l == line {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("the plugins never recorded %q: %q", line, callLines(t, calls))
		}
	}
}

// TestInstanceKilledHoldingPluginClaims: two instances on one PostgreSQL, each running its copy of
// the takeover plugin, two clients creating runs of one plugin call each through both, alternately
// a replayable read and a write; one instance is killed with SIGKILL while its plugin holds claims
// of both, and not restarted. Every run an instance acknowledged reaches a final state on the
// survivor within a minute, though the claims had ten minutes to their deadline: the survivor
// declared the dead instance dead when its heartbeat lapsed, released the reads its plugin held for
// the survivor's copy of the plugin, which called them again (attempt 2) and completed them, and
// settled the writes uncertain, tool_uncertain, naming the instance.
func TestInstanceKilledHoldingPluginClaims(t *testing.T) {
	// Not parallel, as the other several-instances tests (TestInstanceKilledUnderLoad).
	if storetest.PostgresURL() == "" {
		t.Log("several instances share PostgreSQL; SQLite serves one (TestTakeoverOfADeadInstancesPluginClaims covers the rule on both stores)")
		return
	}
	calls := filepath.Join(t.TempDir(), "calls")
	config := takeoverConfig(t, instancesConfig, calls)
	one := testserver.Start(t, testserver.Options{Dialect: store.Postgres, Subprocess: true, Config: config})
	two := testserver.Start(t, testserver.Options{Peer: one, Subprocess: true, Config: config})
	st := openStore(t, one.DatabaseURL)
	oneID, twoID := selfID(t, one), selfID(t, two)
	load, _ := loadTimes()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var (
		mu    sync.Mutex
		acked = map[string]string{} // run → tool
		wg    sync.WaitGroup
	)
	start := time.Now()
	for w := 0; w < 2; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := 0; ctx.Err() == nil && time.Since(start) < load; i++ {
				in, tool := one, slowRead
				if (w+i)%2 == 1 {
					in = two
				}
				if i%2 == 1 {
					tool = slowWrite
				}
				created, err := in.Client().CreateRun(ctx, "default", slowRun(tool, fmt.Sprintf("w%di%d", w, i), 1500), "")
				if err != nil {
					continue // refused by a dead instance: never acknowledged
				}
				mu.Lock()
				acked[created.Run.PublicID] = tool
				mu.Unlock()
				time.Sleep(250 * time.Millisecond)
			}
		}(w)
	}
	// The kill comes while the first instance's plugin holds a read and a write.
	for deadline := time.Now().Add(30 * time.Second); len(pluginHeldBy(t, st, oneID, slowRead)) == 0 || len(pluginHeldBy(t, st, oneID, slowWrite)) == 0; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the first instance's plugin never held a read and a write under the load")
		}
	}
	one.Kill()
	killed := time.Now()
	reads, writes := pluginHeldBy(t, st, oneID, slowRead), pluginHeldBy(t, st, oneID, slowWrite)
	wg.Wait()
	if len(reads) == 0 || len(writes) == 0 {
		t.Fatalf("the killed instance's plugin held %d reads and %d writes: the kill missed them", len(reads), len(writes))
	}
	taken, took := takeoverTime(t, st, reads, killed, takeoverWithin, "dispatched")
	if taken == 0 {
		var rows []claimRow
		for _, h := range reads {
			rows = append(rows, readClaimRow(t, st, h.ID))
		}
		t.Fatalf("no read the dead instance's plugin held was claimed again: %+v", rows)
	}
	c := two.Client()
	for id, tool := range acked {
		run := waitRun(t, c, id, takeoverWithin-time.Since(killed))
		tk, err := c.Task(context.Background(), "default", id, slowKey)
		if err != nil {
			t.Fatal(err)
		}
		switch {
		case run.Status == "completed" && tk.Task.Status == "completed":
		case tool == slowWrite && run.Status == "needs_attention" && tk.Task.Status == "uncertain" && tk.Task.Error != nil && tk.Task.Error.Key == "tool_uncertain":
		default:
			t.Fatalf("%s run %s on the survivor: %s, its call %s", tool, id, run.Status, tk.Raw)
		}
	}
	if since := time.Since(killed); since >= takeoverWithin {
		t.Fatalf("the survivor took %v, as if it waited for the claims' deadline", since)
	}
	// The reads the dead plugin held were claimed again by the survivor's plugin and called again
	// as a replay; the writes settled uncertain, naming the claim's instance.
	for _, h := range reads {
		r := readClaimRow(t, st, h.ID)
		if r.Generation == h.Generation && r.Status == "completed" {
			continue // its last commit reached the database before the kill did
		}
		if r.Status != "completed" || r.Generation != h.Generation+1 || deref(r.Instance) != twoID || !strings.HasSuffix(deref(r.Output), ", attempt 2") {
			t.Errorf("a read the dead instance's plugin held: %+v (%s)", r, deref(r.Output))
		}
	}
	uncertain := 0
	for _, h := range writes {
		r := readClaimRow(t, st, h.ID)
		if r.Generation == h.Generation && r.Status == "completed" {
			continue
		}
		if r.Status != "uncertain" || r.Generation != h.Generation || deref(r.ErrorKey) != "tool_uncertain" ||
			!strings.Contains(deref(r.Detail), " on instance "+oneID+" ended with that instance's heartbeat; the tool may have run") {
			t.Errorf("a write the dead instance's plugin held: %+v (%s)", r, deref(r.Detail))
		}
		uncertain++
	}
	if uncertain == 0 {
		t.Error("no write the dead instance's plugin held was settled by the takeover")
	}
	waitLog(t, two, "released the plugin claims of a dead instance", 10*time.Second)
	t.Logf("%d acknowledged runs final; %d of the %d reads the dead plugin held claimed again %v after the kill, %d writes settled uncertain (heartbeat timeout %v)",
		len(acked), taken, len(reads), took, uncertain, instancesHeartbeatTimeout)
}

// TestPausedInstancePluginCommitRefused: an instance stopped with SIGSTOP while its plugin holds a
// replayable read and a write is declared dead; the survivor's copy of the plugin calls the read
// again and completes its run, and the write settles uncertain. The paused instance's plugin
// finishes both calls meanwhile (it is a process of its own); continued with SIGCONT, the
// instance's late commit of the read is refused by the claim fence: the read's result is the
// survivor's, committed once, and the write, never called again, stays uncertain.
func TestPausedInstancePluginCommitRefused(t *testing.T) {
	// Not parallel, as the other several-instances tests (TestInstanceKilledUnderLoad).
	if storetest.PostgresURL() == "" {
		t.Log("several instances share PostgreSQL; SQLite serves one (TestTakeoverOfADeadInstancesPluginClaims covers the rule on both stores)")
		return
	}
	calls := filepath.Join(t.TempDir(), "calls")
	config := takeoverConfig(t, instancesConfig, calls)
	one := testserver.Start(t, testserver.Options{Dialect: store.Postgres, Subprocess: true, Config: config})
	st := openStore(t, one.DatabaseURL)
	oneID, onePID := selfID(t, one), pluginPID(t, one)
	c := one.Client()
	ctx := context.Background()
	const callMS = 2500
	runs := map[string]string{}
	for _, tool := range []string{slowRead, slowWrite} {
		created, err := c.CreateRun(ctx, "default", slowRun(tool, "paused", callMS), "")
		if err != nil {
			t.Fatal(err)
		}
		runs[tool] = created.Run.PublicID
	}
	// The pause lands while the plugin runs both calls.
	for _, tool := range []string{slowRead, slowWrite} {
		waitCallLine(t, calls, fmt.Sprintf("start %s paused %d", tool, onePID), 30*time.Second)
	}
	held := map[string][]heldRow{slowRead: pluginHeldBy(t, st, oneID, slowRead), slowWrite: pluginHeldBy(t, st, oneID, slowWrite)}
	if len(held[slowRead]) != 1 || len(held[slowWrite]) != 1 {
		t.Fatalf("the first instance's plugin holds %+v", held)
	}
	one.Pause()
	paused := true
	defer func() {
		if paused {
			one.Resume()
		}
	}()
	two := testserver.Start(t, testserver.Options{Peer: one, Subprocess: true, Config: config})
	twoPID := pluginPID(t, two)
	c2 := two.Client()
	read := waitRun(t, c2, runs[slowRead], takeoverWithin)
	want := fmt.Sprintf("%s paused by %d, attempt 2", slowRead, twoPID)
	if read.Status != "completed" || deref(read.Answer) != want {
		t.Fatalf("the read's run on the survivor: %s %q, want %q", read.Status, deref(read.Answer), want)
	}
	write := waitRun(t, c2, runs[slowWrite], takeoverWithin)
	if write.Status != "needs_attention" {
		t.Fatalf("the write's run on the survivor: %s", write.Status)
	}
	// The paused instance's plugin finished both calls; its host has their results to commit.
	for _, tool := range []string{slowRead, slowWrite} {
		waitCallLine(t, calls, fmt.Sprintf("done %s paused %d", tool, onePID), 30*time.Second)
	}
	one.Resume()
	paused = false
	waitLog(t, one, "this instance had been declared dead", 30*time.Second)
	// The read's late commit is refused by the claim fence: the host's outcome for the call.
	waitLogLine(t, one, 30*time.Second, "plugin call", "run="+runs[slowRead], "tool="+slowRead, "outcome=claim_lost")
	r := readClaimRow(t, st, held[slowRead][0].ID)
	if r.Status != "completed" || deref(r.Output) != want || r.Generation != held[slowRead][0].Generation+1 || deref(r.Instance) != selfID(t, two) {
		t.Fatalf("the read after the late commit: %+v (%s)", r, deref(r.Output))
	}
	w := readClaimRow(t, st, held[slowWrite][0].ID)
	if w.Status != "uncertain" || deref(w.ErrorKey) != "tool_uncertain" || w.Generation != held[slowWrite][0].Generation {
		t.Fatalf("the write after the late commit: %+v", w)
	}
	// Each call started once on each plugin that claimed it: the read on both, the write on the
	// paused instance's alone.
	starts := map[string]int{}
	for _, l := range callLines(t, calls) {
		if strings.HasPrefix(l, "start ") {
			starts[strings.TrimPrefix(l, "start ")]++
		}
	}
	wantStarts := map[string]int{
		fmt.Sprintf("%s paused %d", slowRead, onePID): 1, fmt.Sprintf("%s paused %d", slowRead, twoPID): 1,
		fmt.Sprintf("%s paused %d", slowWrite, onePID): 1,
	}
	if fmt.Sprint(starts) != fmt.Sprint(wantStarts) {
		t.Fatalf("calls started: %v, want %v", starts, wantStarts)
	}
	for tool, id := range runs {
		got, err := c2.Run(ctx, "default", id)
		if err != nil {
			t.Fatal(err)
		}
		if len(got.Run.Tasks) != 1 {
			t.Fatalf("%s's run after the late commit: %s", tool, got.Raw)
		}
	}
	if got, err := c2.Run(ctx, "default", runs[slowRead]); err != nil || got.Run.Status != "completed" || deref(got.Run.Answer) != want {
		t.Fatalf("the read's run after the late commit: %v %s", err, got.Raw)
	}
}

// waitLogLine waits until one line of in's log holds every part.
func waitLogLine(t testing.TB, in *testserver.Instance, within time.Duration, parts ...string) {
	t.Helper()
	for deadline := time.Now().Add(within); ; time.Sleep(20 * time.Millisecond) {
		for _, l := range strings.Split(in.Logs(), "\n") {
			all := true
			for _, p := range parts {
				all = all && strings.Contains(l, p)
			}
			if all {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s never logged a line with %q", in, parts)
		}
	}
}

// TestRestartedInstanceTakesOverPluginClaims: SQLite serves one instance; killed with SIGKILL
// while its plugin holds a read and a write, and started again on the same store, it is a new
// instance, which declares its predecessor dead once the heartbeat lapsed and takes its plugin
// claims over as a survivor does: the read is called again by the new plugin process and
// completes, the write settles uncertain, both well before the claims' ten-minute deadline.
func TestRestartedInstanceTakesOverPluginClaims(t *testing.T) {
	t.Parallel()
	calls := filepath.Join(t.TempDir(), "calls")
	in := testserver.Start(t, testserver.Options{Dialect: store.SQLite, Subprocess: true, Config: takeoverConfig(t, instancesConfig, calls)})
	c := in.Client()
	ctx := context.Background()
	runs := map[string]string{}
	for _, tool := range []string{slowRead, slowWrite} {
		created, err := c.CreateRun(ctx, "default", slowRun(tool, "restart", 3000), "")
		if err != nil {
			t.Fatal(err)
		}
		runs[tool] = created.Run.PublicID
	}
	pid := pluginPID(t, in)
	for _, tool := range []string{slowRead, slowWrite} {
		waitCallLine(t, calls, fmt.Sprintf("start %s restart %d", tool, pid), 30*time.Second)
	}
	in.Kill()
	killed := time.Now()
	in.Restart()
	c = in.Client()
	write := waitRun(t, c, runs[slowWrite], takeoverWithin)
	tk, err := c.Task(ctx, "default", runs[slowWrite], slowKey)
	if err != nil {
		t.Fatal(err)
	}
	if write.Status != "needs_attention" || tk.Task.Status != "uncertain" || tk.Task.Error == nil || tk.Task.Error.Key != "tool_uncertain" ||
		!strings.HasSuffix(tk.Task.Error.Detail, "ended with that instance's heartbeat; the tool may have run") {
		t.Fatalf("the write after the restart: %s %s", write.Status, tk.Raw)
	}
	read := waitRun(t, c, runs[slowRead], takeoverWithin)
	if want := fmt.Sprintf("%s restart by %d, attempt 2", slowRead, pluginPID(t, in)); read.Status != "completed" || deref(read.Answer) != want {
		t.Fatalf("the read after the restart: %s %q, want %q", read.Status, deref(read.Answer), want)
	}
	if since := time.Since(killed); since >= takeoverWithin {
		t.Fatalf("the restarted instance took %v, as if it waited for the claims' deadline", since)
	}
	for _, l := range callLines(t, calls) {
		if strings.HasPrefix(l, "start "+slowWrite+" ") && l != fmt.Sprintf("start %s restart %d", slowWrite, pid) {
			t.Fatalf("the write was called again: %q", callLines(t, calls))
		}
	}
}
