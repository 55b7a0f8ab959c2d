package e2e

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/nexuskernel/nexus/core/store/storetest"
)

// runnerTools is a tool file for `nexus runner`: four shell commands that echo their input,
// write a capture, fail with an exit status, and cannot start.
const runnerTools = `{
  "environment": {"os": "test"},
  "tools": [
    {"name": "echo_input", "description": "Echo the input.", "input_schema": {"type": "object"},
     "effect_profile": {"kind": "pure", "destructive": false, "effect_scope": "closed", "idempotency": "intrinsic", "reconciliation": "none"},
     "command": ["sh", "-c", "cat; printf ' %s' \"$NEXUS_TOOL_NAME\""]},
    {"name": "shot", "description": "Take a picture.", "input_schema": {"type": "object"},
     "effect_profile": {"kind": "read_only", "destructive": false, "effect_scope": "open", "idempotency": "intrinsic", "reconciliation": "none"},
     "timeout_ms": 60000,
     "command": ["sh", "-c", "printf '\\211PNG\\r\\n\\032\\n0000' > \"$NEXUS_CAPTURE_DIR/page.png\"; echo captured"]},
    {"name": "fails", "description": "Fail.", "input_schema": {"type": "object"},
     "effect_profile": {"kind": "read_only", "destructive": false, "effect_scope": "closed", "idempotency": "intrinsic", "reconciliation": "none"},
     "command": ["sh", "-c", "echo partial; echo oops >&2; exit 3"]},
    {"name": "missing", "description": "Cannot start.", "input_schema": {"type": "object"},
     "effect_profile": {"kind": "read_only", "destructive": false, "effect_scope": "closed", "idempotency": "intrinsic", "reconciliation": "none"},
     "command": ["/nonexistent/nexus-test-program"]}
  ]
}`

// lockedBuffer collects a subprocess's output.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestNexusRunner runs the real `nexus runner` command against a real server: it announces the
// file's tools, is pushed the calls of a model round, runs each command and commits what it
// printed, with the capture as an image the next round reads, an exit status as an error result
// and a program that cannot start as a failed call.
func TestNexusRunner(t *testing.T) {
	t.Parallel()
	for _, d := range storetest.Dialects() {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			p := newPlane(t, d)
			r := p.executor("runner", "box")
			file := filepath.Join(t.TempDir(), "tools.json")
			if err := os.WriteFile(file, []byte(runnerTools), 0o600); err != nil {
				t.Fatal(err)
			}
			cmd := exec.Command(os.Args[0], "runner", "--tools", file, "--server", p.srv.URL)
			cmd.Env = append(os.Environ(), "NEXUS_TESTSERVER_HELPER=1", "NEXUS_EXECUTOR_TOKEN="+r.token)
			var logs lockedBuffer
			cmd.Stdout, cmd.Stderr = &logs, &logs
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			exited := make(chan error, 1)
			go func() { exited <- cmd.Wait() }()
			t.Cleanup(func() {
				_ = cmd.Process.Signal(syscall.SIGTERM)
				select {
				case <-exited:
				case <-time.After(10 * time.Second):
					_ = cmd.Process.Kill()
				}
				if t.Failed() {
					t.Logf("runner log:\n%s", logs.String())
				}
			})
			// The announcement lands before any call can be routed to it.
			deadline := time.Now().Add(30 * time.Second)
			for {
				got, err := p.admin.Executor(p.ctx, r.id)
				if err == nil && len(got.Executor.ServedTools) == 4 {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("the runner never announced: %s", logs.String())
				}
				time.Sleep(20 * time.Millisecond)
			}
			var tools []any
			for _, n := range []string{"echo_input", "shot", "fails", "missing"} {
				tools = append(tools, routed(n, r.id))
			}
			script := "!mock\nround 1\ncall echo_input {\"x\":1}\ncall shot {}\ncall fails {}\ncall missing {}\nround 2\nsay {{attachments}}"
			run := p.modelRun("mock/scripted", script, tools, nil, "bypass", nil)
			final := p.waitRunStatus(run, "completed")
			if deref(final.Answer) != "page.png" {
				t.Fatalf("answer %q", deref(final.Answer))
			}
			if out := deref(p.task(run, "r2t0").Task.Output); out != `{"x":1} echo_input` {
				t.Fatalf("echo %q", out)
			}
			shot := p.task(run, "r2t1")
			if deref(shot.Task.Output) != "captured\n" || !strings.Contains(string(shot.Task.Content), `"name":"page.png"`) {
				t.Fatalf("shot %s", shot.Raw)
			}
			fails := p.task(run, "r2t2")
			if fails.Task.Status != "completed" || !deref(fails.Task.IsError) || deref(fails.Task.Output) != "partial\noops\n(exit status 3)" {
				t.Fatalf("fails %s", fails.Raw)
			}
			missing := p.task(run, "r2t3")
			if missing.Task.Status != "failed" || missing.Task.Error == nil || missing.Task.Error.Key != "tool_failed" ||
				!strings.Contains(missing.Task.Error.Detail, "could not run") {
				t.Fatalf("missing %s", missing.Raw)
			}
		})
	}
}
