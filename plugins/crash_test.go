package plugins

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nexuskernel/nexus/sdk/announce"
	"github.com/nexuskernel/nexus/sdk/plugin"
)

// TestCrashMemoryWriteReplayed: a memory_write in flight when its plugin is killed is replayed
// on the restarted instance and committed once.
func TestCrashMemoryWriteReplayed(t *testing.T) {
	t.Parallel()
	e := scenarioEntry(t, "mem", plugin.KindMemory, "memory-slow")
	th := startHost(t, e)
	st := th.waitState(t, "mem", StateReady, 10*time.Second)
	id := th.executor(t, "mem")
	setBlock(t, e, true)
	th.plane.push(id, memoryClaim("w", "memory_write", `{"path":"workspace/a.md","content":"hello"}`))
	waitStarted(t, e, *st.PID, 10*time.Second)
	th.killPlugin(t, "mem")
	setBlock(t, e, false)
	th.plane.await(t, 15*time.Second, "the replayed write", func() bool { return len(th.plane.commits) == 1 })
	got := th.plane.commitsFor("w")
	if len(got) != 1 || text(t, got[0]) != "Wrote workspace/a.md (5 bytes)." {
		t.Fatalf("commits %+v", got)
	}
	after := th.status(t, "mem")
	if after.Generation <= st.Generation || after.Restarts < 1 || after.Calls.Replayed != 1 || len(th.plane.expired) != 0 {
		t.Errorf("after the crash: %+v, expired %d", after, len(th.plane.expired))
	}
	if !containsLine(th.logs.String(), "plugin exited: plugin=mem status=exited") {
		t.Error("no exit log line")
	}
}

// TestCrashMemoryEditExpires: a memory_edit is not replayable: the host applies the expiry rule
// at once (the row settles uncertain / tool_uncertain) and never re-runs it.
func TestCrashMemoryEditExpires(t *testing.T) {
	t.Parallel()
	e := scenarioEntry(t, "mem", plugin.KindMemory, "memory-slow")
	th := startHost(t, e)
	st := th.waitState(t, "mem", StateReady, 10*time.Second)
	id := th.executor(t, "mem")
	th.plane.push(id, memoryClaim("w", "memory_write", `{"path":"workspace/a.md","content":"hello"}`))
	th.plane.await(t, 10*time.Second, "the write", func() bool { return len(th.plane.commits) == 1 })
	setBlock(t, e, true)
	th.plane.push(id, memoryClaim("e", "memory_edit", `{"path":"workspace/a.md","old_text":"hello","new_text":"bye"}`))
	waitStarted(t, e, *st.PID, 10*time.Second)
	killedAt := time.Now()
	th.killPlugin(t, "mem")
	th.plane.await(t, 10*time.Second, "the expiry", func() bool { return len(th.plane.expired) == 1 })
	if d := time.Since(killedAt); d > 5*time.Second {
		t.Errorf("expiry took %v; it is applied at once", d)
	}
	setBlock(t, e, false)
	th.waitGeneration(t, "mem", st.Generation, 10*time.Second)
	time.Sleep(200 * time.Millisecond)
	if got := th.plane.commitsFor("e"); len(got) != 0 {
		t.Errorf("a non-replayable call was committed after the crash: %+v", got)
	}
	if th.plane.expired[0].TaskKey != "e" || th.status(t, "mem").Calls.Expired != 1 {
		t.Errorf("expired %+v", th.plane.expired)
	}
	th.plane.mu.Lock()
	cause := th.plane.causes["e"]
	th.plane.mu.Unlock()
	if cause != ExpiredPluginExited {
		t.Errorf("the settlement at once says %q, want %q", cause, ExpiredPluginExited)
	}
}

// crashLoops is how many kill -9 rounds TestCrashLoop runs: a short loop in make test, a long
// one under make soak.
func crashLoops() int {
	if os.Getenv("NEXUS_SOAK") != "" {
		return 100
	}
	return 5
}

// TestCrashLoop kills the tool plugin mid-call again and again: every replayable call is
// replayed and committed exactly once, every non-replayable one expired at once, none lost.
func TestCrashLoop(t *testing.T) {
	t.Parallel()
	e := scenarioEntry(t, "slow", plugin.KindToolProvider, "slow")
	th := startHost(t, e)
	id := th.executor(t, "slow")
	th.mu.Lock()
	th.sups["slow"].breaker.t.BreakerThreshold = 1 << 30 // this test counts kills, not the breaker
	th.mu.Unlock()
	n := crashLoops()
	for i := range n {
		st := th.waitState(t, "slow", StateReady, 20*time.Second)
		setBlock(t, e, true)
		pure, write := "p"+strconv.Itoa(i), "w"+strconv.Itoa(i)
		th.plane.push(id, toolClaim(pure, "slow_pure", `{}`, &announce.EffectPure))
		th.plane.push(id, toolClaim(write, "slow_write", `{}`, &announce.EffectWrite))
		th.plane.await(t, 10*time.Second, "both calls in flight", func() bool {
			return th.sups["slow"].inflightCount() == 2
		})
		waitStarted(t, e, *st.PID, 10*time.Second)
		time.Sleep(20 * time.Millisecond) // let the second call reach the plugin too
		th.killPlugin(t, "slow")
		setBlock(t, e, false)
		th.plane.await(t, 20*time.Second, "round "+strconv.Itoa(i)+" settled", func() bool {
			return countTask(th.plane.commits, pure) == 1 && countExpired(th.plane.expired, write) == 1
		})
		if got := th.plane.commitsFor(pure)[0]; text(t, got) != "echo {}" || *got.Title != "attempt 2" {
			t.Errorf("round %d: replay committed %q %q", i, text(t, got), *got.Title)
		}
		if len(th.plane.commitsFor(write)) != 0 {
			t.Errorf("round %d: the non-replayable call was committed", i)
		}
	}
	th.waitState(t, "slow", StateReady, 20*time.Second)
	// The plane hears a replay's commit before the supervisor counts the call completed, so the
	// counts are awaited, not read once.
	for end := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		st := th.status(t, "slow")
		if st.Calls.Replayed == n && st.Calls.Expired == n && st.Calls.Completed == n && st.Restarts >= n {
			break
		}
		if time.Now().After(end) {
			t.Fatalf("after %d kills: %+v", n, st)
		}
	}
}

func (s *supervisor) inflightCount() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.inflight)
}

func countTask(commits []commitRecord, task string) int {
	n := 0
	for _, c := range commits {
		if c.claim.TaskKey == task {
			n++
		}
	}
	return n
}

func countExpired(expired []Claim, task string) int {
	n := 0
	for _, c := range expired {
		if c.TaskKey == task {
			n++
		}
	}
	return n
}

// TestTakenOverClaimIsAReplay: a claim of a later generation follows claims of instances that
// died holding the call (docs/operations.md#instance-liveness-and-takeover): the plugin hears the
// call as a replay, its attempt counting the runs under those claims.
func TestTakenOverClaimIsAReplay(t *testing.T) {
	t.Parallel()
	e := scenarioEntry(t, "slow", plugin.KindToolProvider, "slow")
	th := startHost(t, e)
	id := th.executor(t, "slow")
	first, taken := toolClaim("first", "slow_pure", `{}`, &announce.EffectPure), toolClaim("taken", "slow_pure", `{}`, &announce.EffectPure)
	first.Generation, taken.Generation = 1, 3
	th.plane.push(id, first)
	th.plane.push(id, taken)
	th.plane.await(t, 10*time.Second, "both calls committed", func() bool {
		return countTask(th.plane.commits, "first") == 1 && countTask(th.plane.commits, "taken") == 1
	})
	if got := *th.plane.commitsFor("first")[0].Title; got != "attempt 1" {
		t.Errorf("a first claim's call: %q", got)
	}
	if got := *th.plane.commitsFor("taken")[0].Title; got != "attempt 3" {
		t.Errorf("a third claim's call: %q", got)
	}
	if st := th.status(t, "slow"); st.Calls.Replayed != 0 || st.Calls.Completed != 2 {
		t.Errorf("a claim taken over is no replay of this host's: %+v", st.Calls)
	}
}

// TestCrashInCallLapses: a replayable call whose plugin dies on every attempt runs at most
// three times, then its claim lapses (the sweep settles it timed_out); it is never committed.
func TestCrashInCallLapses(t *testing.T) {
	t.Parallel()
	th := startHost(t, scenarioEntry(t, "crashy", plugin.KindToolProvider, "crash-in-call"))
	th.waitState(t, "crashy", StateReady, 10*time.Second)
	th.plane.push(th.executor(t, "crashy"), toolClaim("c", "crash", `{}`, &announce.EffectPure))
	end := time.Now().Add(20 * time.Second)
	for th.status(t, "crashy").Generation < 3 && time.Now().Before(end) {
		time.Sleep(10 * time.Millisecond)
	}
	th.waitState(t, "crashy", StateReady, 10*time.Second)
	time.Sleep(300 * time.Millisecond)
	st := th.status(t, "crashy")
	if st.Calls.Replayed != 2 || st.InFlight != 0 || len(th.plane.commits) != 0 || len(th.plane.expired) != 0 {
		t.Errorf("after three crashing attempts: %+v, commits %d, expired %d", st, len(th.plane.commits), len(th.plane.expired))
	}
}

// TestBreakerOpensAndReloadCloses: five kills within the window open the breaker (no starts);
// a reload closes it and the plugin serves again.
func TestBreakerOpensAndReloadCloses(t *testing.T) {
	t.Parallel()
	e := scenarioEntry(t, "fragile", plugin.KindToolProvider, "tools-example")
	th := startHost(t, e)
	for i := range 5 {
		st := th.waitState(t, "fragile", StateReady, 20*time.Second)
		th.killPlugin(t, "fragile")
		if i < 4 {
			th.waitGeneration(t, "fragile", st.Generation, 20*time.Second)
		}
	}
	st := th.waitState(t, "fragile", StateOpen, 10*time.Second)
	if st.Breaker.State != BreakerOpen || st.Breaker.OpenUntil == nil || st.PID != nil {
		t.Fatalf("breaker: %+v", st)
	}
	gen := st.Generation
	time.Sleep(200 * time.Millisecond)
	if th.status(t, "fragile").Generation != gen {
		t.Fatal("a start happened while the breaker was open")
	}
	// Each scheduled delay is longer than the one before (doubling beats the ±20% jitter).
	var delays []time.Duration
	for _, m := range regexp.MustCompile(`restart scheduled: plugin=fragile delay=(\S+)`).FindAllStringSubmatch(th.logs.String(), -1) {
		d, err := time.ParseDuration(m[1])
		if err != nil {
			t.Fatal(err)
		}
		delays = append(delays, d)
	}
	if len(delays) != 4 {
		t.Fatalf("scheduled delays %v, want four", delays)
	}
	for i := 1; i < len(delays); i++ {
		if delays[i] <= delays[i-1] {
			t.Errorf("restarts did not back off: %v", delays)
		}
	}
	if !containsLine(th.logs.String(), "breaker opened: plugin=fragile") {
		t.Error("no breaker log line")
	}
	if _, err := th.Reload(context.Background(), &Catalog{Entries: []Entry{e}}); err != nil {
		t.Fatal(err)
	}
	after := th.waitGeneration(t, "fragile", gen, 20*time.Second)
	if after.Breaker.State != BreakerClosed {
		t.Errorf("breaker after reload: %+v", after.Breaker)
	}
}

func containsLine(logs, s string) bool { return strings.Contains(logs, s) }

// TestParentDeath: killing the host process makes its plugin exit within three seconds.
func TestParentDeath(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	host := exec.Command(testBinary(t))
	host.Env = append(os.Environ(), envScenario+"=host", envDir+"="+dir)
	if err := host.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = host.Process.Kill(); _ = host.Wait() }()
	pidFile := filepath.Join(dir, "plugin-pid")
	var pid int
	end := time.Now().Add(30 * time.Second)
	for pid == 0 {
		if b, err := os.ReadFile(pidFile); err == nil {
			pid, _ = strconv.Atoi(string(b))
		}
		if time.Now().After(end) {
			t.Fatal("the host helper never reported its plugin")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := syscall.Kill(pid, 0); err != nil {
		t.Fatalf("plugin %d is not running: %v", pid, err)
	}
	_ = host.Process.Signal(syscall.SIGKILL)
	_ = host.Wait()
	killed := time.Now()
	for syscall.Kill(pid, 0) == nil {
		if time.Since(killed) > 3*time.Second {
			t.Fatalf("plugin %d outlived its host by 3 s", pid)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// runHostHelper is the host side of TestParentDeath: a host with one plugin that reports the
// plugin's pid and then waits to be killed.
func runHostHelper() {
	dir := os.Getenv(envDir)
	exe, _ := os.Executable()
	e := Entry{
		Name: "orphan", Kind: plugin.KindToolProvider, Command: exe, Enabled: true, Config: []byte(`{}`),
		Env: map[string]string{envScenario: "tools-example", envDir: dir}, MaxConcurrency: 1,
		HealthInterval: time.Second, StartTimeout: 20 * time.Second,
	}
	h, err := New(Config{Catalog: &Catalog{Entries: []Entry{e}}, Plane: newPlane(), DataDir: dir})
	if err != nil {
		os.Exit(1)
	}
	if err := h.Start(context.Background()); err != nil {
		os.Exit(1)
	}
	st, _ := h.StatusOf("orphan")
	if st.PID == nil {
		os.Exit(1)
	}
	_ = os.WriteFile(filepath.Join(dir, "plugin-pid"), []byte(strconv.Itoa(*st.PID)), 0o600)
	select {}
}

// TestWorkCanceled: work_canceled for a claimed row cancels the call's context; nothing is
// committed and the plugin keeps serving.
func TestWorkCanceled(t *testing.T) {
	t.Parallel()
	e := scenarioEntry(t, "slow", plugin.KindToolProvider, "slow")
	th := startHost(t, e)
	st := th.waitState(t, "slow", StateReady, 10*time.Second)
	id := th.executor(t, "slow")
	setBlock(t, e, true)
	th.plane.push(id, toolClaim("c", "slow_pure", `{}`, &announce.EffectPure))
	waitStarted(t, e, *st.PID, 10*time.Second)
	th.plane.cancelRow(id, "run-1", "c")
	th.plane.await(t, 10*time.Second, "the cancelled call to end", func() bool { return th.sups["slow"].inflightCount() == 0 })
	setBlock(t, e, false)
	th.plane.push(id, toolClaim("d", "slow_pure", `{}`, &announce.EffectPure))
	th.plane.await(t, 10*time.Second, "the next call", func() bool { return len(th.plane.commits) == 1 })
	if len(th.plane.commitsFor("c")) != 0 || len(th.plane.expired) != 0 {
		t.Errorf("a cancelled call was settled by the host: %+v", th.plane.commits)
	}
	if after := th.status(t, "slow"); after.Generation != st.Generation {
		t.Errorf("cancelling restarted the plugin: %+v", after)
	}
}
