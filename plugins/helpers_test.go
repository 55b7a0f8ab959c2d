package plugins

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/nexuskernel/nexus/sdk/announce"
	"github.com/nexuskernel/nexus/sdk/memory"
	"github.com/nexuskernel/nexus/sdk/memory/memorytest"
	"github.com/nexuskernel/nexus/sdk/plugin"
)

// fastTimings shorten the supervisor's clocks so crash and breaker tests run in seconds.
var fastTimings = Timings{
	ExitCheck: 20 * time.Millisecond, PingTimeout: 500 * time.Millisecond, BackoffBase: 20 * time.Millisecond,
	BackoffMax: 200 * time.Millisecond, InboxPoll: 100 * time.Millisecond, DrainTimeout: 2 * time.Second,
	ShutdownGrace: 2 * time.Second, BreakerWindow: time.Minute, BreakerCooldown: time.Minute,
	ReannounceSpacing: fastReannounceSpacing,
}

// testBinary is this test binary, which serves the scenarios.
func testBinary(t testing.TB) string {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return exe
}

// scenarioEntry is a catalog entry that runs a scenario of this binary.
func scenarioEntry(t testing.TB, name string, kind plugin.Kind, scenario string) Entry {
	t.Helper()
	return Entry{
		Name: name, Kind: kind, Command: testBinary(t), Enabled: true,
		// The race detector sleeps a second at exit by default; plugin processes exit often here.
		Env:            map[string]string{envScenario: scenario, envDir: t.TempDir(), "GORACE": "atexit_sleep_ms=0"},
		Config:         json.RawMessage(`{}`),
		MaxConcurrency: DefaultMaxConcurrency, HealthInterval: 200 * time.Millisecond, StartTimeout: 20 * time.Second,
	}
}

type testHost struct {
	*Host
	plane *recordingPlane
	logs  *logSink
}

// startHost runs the entries on a recording plane and shuts the host down when t ends.
func startHost(t testing.TB, entries ...Entry) *testHost {
	t.Helper()
	return startHostWith(t, newPlane(), fastTimings, entries...)
}

// startHostWith is startHost on a given plane with given timings.
func startHostWith(t testing.TB, plane *recordingPlane, timings Timings, entries ...Entry) *testHost {
	t.Helper()
	return startHostGuarded(t, plane, timings, nil, entries...)
}

// startHostGuarded is startHostWith with a storage guard (nil for none).
func startHostGuarded(t testing.TB, plane *recordingPlane, timings Timings, storage StorageGuard, entries ...Entry) *testHost {
	t.Helper()
	return startHostConfig(t, Config{Catalog: &Catalog{Entries: entries}, Plane: plane, Timings: timings, Storage: storage})
}

// startHostConfig starts a host on cfg, with a log sink and a temporary data directory.
func startHostConfig(t testing.TB, cfg Config) *testHost {
	t.Helper()
	logs := &logSink{}
	cfg.Logger, cfg.DataDir = logs.logger(), t.TempDir()
	plane := cfg.Plane.(*recordingPlane)
	h, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		if err := h.Shutdown(ctx); err != nil {
			t.Error(err)
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := h.Start(ctx); err != nil {
		t.Fatal(err)
	}
	return &testHost{Host: h, plane: plane, logs: logs}
}

func (th *testHost) status(t testing.TB, name string) Status {
	t.Helper()
	st, err := th.StatusOf(name)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// waitState waits until the entry reaches a state.
func (th *testHost) waitState(t testing.TB, name string, want State, timeout time.Duration) Status {
	t.Helper()
	end := time.Now().Add(timeout)
	for {
		st := th.status(t, name)
		if st.State == want {
			return st
		}
		if time.Now().After(end) {
			t.Fatalf("%s: state %s after %v, want %s (last_error %v)", name, st.State, timeout, want, deref(st.LastError))
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// waitGeneration waits until the entry is ready at a generation past gen.
func (th *testHost) waitGeneration(t testing.TB, name string, gen int, timeout time.Duration) Status {
	t.Helper()
	end := time.Now().Add(timeout)
	for {
		st := th.status(t, name)
		if st.State == StateReady && st.Generation > gen {
			return st
		}
		if time.Now().After(end) {
			t.Fatalf("%s: not ready past generation %d after %v: %+v", name, gen, timeout, st)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func (th *testHost) executor(t testing.TB, name string) string {
	t.Helper()
	st := th.status(t, name)
	if st.ExecutorPublicID == nil {
		t.Fatalf("%s has no executor", name)
	}
	return *st.ExecutorPublicID
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// killPlugin sends SIGKILL to the entry's process, read from the status.
func (th *testHost) killPlugin(t testing.TB, name string) int {
	t.Helper()
	st := th.status(t, name)
	if st.PID == nil {
		t.Fatalf("%s has no pid: %+v", name, st)
	}
	if err := syscall.Kill(*st.PID, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	return *st.PID
}

// waitStarted waits for a call to be in progress in a process of the entry's scenario.
func waitStarted(t testing.TB, e Entry, pid int, timeout time.Duration) {
	t.Helper()
	path := filepath.Join(e.Env[envDir], "started-"+strconv.Itoa(pid))
	end := time.Now().Add(timeout)
	for {
		if _, err := os.Stat(path); err == nil {
			return
		}
		if time.Now().After(end) {
			t.Fatalf("no call started in pid %d after %v", pid, timeout)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func setBlock(t testing.TB, e Entry, on bool) {
	t.Helper()
	path := filepath.Join(e.Env[envDir], "block")
	if on {
		if err := os.WriteFile(path, nil, 0o600); err != nil {
			t.Fatal(err)
		}
		return
	}
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
}

// memoryClaim is a row for a memory wire name under the kit's default bindings.
func memoryClaim(task, tool, input string) Claim {
	return Claim{
		RunID: "run-1", TaskKey: task, ToolName: tool, ToolInput: json.RawMessage(input),
		MemoryBindings: memorytest.DefaultBindings(), EffectProfile: profileOf(tool),
	}
}

func profileOf(tool string) *announce.EffectProfile {
	p, ok := memory.Profile(tool)
	if !ok {
		return nil
	}
	return &p
}

// toolClaim is a row for a tool-provider tool with a frozen profile.
func toolClaim(task, tool, input string, p *announce.EffectProfile) Claim {
	return Claim{RunID: "run-1", TaskKey: task, ToolName: tool, ToolInput: json.RawMessage(input), EffectProfile: p, WorkspaceID: memorytest.OwnerWorkspace}
}

// text reads a commit's content as a string.
func text(t testing.TB, b CommitBody) string {
	t.Helper()
	if b.Blocks != nil {
		t.Fatalf("content %+v is not a string", b.Blocks)
	}
	return b.Text
}

// syscallAlive reports nil when the process exists (and is not a zombie we reaped).
func syscallAlive(pid int) error {
	for range 100 {
		if err := syscall.Kill(pid, 0); err != nil {
			return err
		}
		time.Sleep(20 * time.Millisecond)
	}
	return nil
}
