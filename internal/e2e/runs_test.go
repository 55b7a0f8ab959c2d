package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/nexuskernel/nexus/core/store/storetest"
	"github.com/nexuskernel/nexus/internal/testserver"
	"github.com/nexuskernel/nexus/providers/mcp-bridge/mcpbridgetest"
	"github.com/nexuskernel/nexus/sdk/client"
)

// TestMain serves as a plugin or as the MCP fixture when this binary is started as one (a test
// server's plugin; the bridge's stdio servers in TestPluginMCPBridge), else runs the suite.
func TestMain(m *testing.M) {
	switch os.Getenv(e2ePluginEnv) {
	case "":
	case takeoverPluginName:
		serveTakeoverPlugin() // this binary is the takeover tests' plugin
	case oldMemoryPluginName:
		serveOldMemoryPlugin() // this binary is a memory plugin built before protocol 1.3
	default:
		serveChangingPlugin() // this binary is a plugin of a test's server
	}
	mcpbridgetest.MaybeServe()
	testserver.MainThen(m, removePluginBinaries)
}

var memoryImports = []string{"nexus.memory.ls", "nexus.memory.read", "nexus.memory.grep", "nexus.memory.write",
	"nexus.memory.edit", "nexus.memory.delete"}

func memoryRun(script string) map[string]any {
	return map[string]any{
		"steps": []any{map[string]any{"model": map[string]any{
			"model": "mock/scripted", "prompt": script, "instructions": "You keep notes.", "kernel_tools": memoryImports,
		}}},
		"approval_mode":  "rules",
		"approval_rules": []any{map[string]any{"tool": "memory_*", "verdict": "allow"}},
	}
}

// rounds is a four-round script: writes, an edit and a grep, reads and a listing, then the
// final answer quoting the last result.
const rounds = `Keep the plan.
!mock
round 1
call memory_write {"path":"workspace/plan.md","content":"1. ship\n2. test\n"}
call memory_write {"path":"user/prefs.md","content":"terse"}
call memory_write {"path":"workspace/notes.md","content":"retry budget 5"}
round 2
call memory_edit {"path":"workspace/plan.md","old_text":"2. test","new_text":"2. test twice"}
call memory_grep {"pattern":"retry"}
round 3
call memory_read {"path":"workspace/plan.md"}
call memory_ls {}
round 4
say {{last_result}}`

func waitRun(t *testing.T, c *client.Client, id string, within time.Duration) *client.Run {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		r, err := c.Run(context.Background(), "default", id)
		if err != nil {
			t.Fatal(err)
		}
		if r.Run.Status == "completed" || r.Run.Status == "canceled" || r.Run.Status == "needs_attention" {
			return &r.Run
		}
		if time.Now().After(deadline) {
			t.Fatalf("run %s still %s after %v: %s", id, r.Run.Status, within, r.Raw)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestRunOverHTTP drives a run through four rounds of memory calls over real HTTP on each store
// and reads back every task and every sealed request.
func TestRunOverHTTP(t *testing.T) {
	t.Parallel()
	for _, d := range storetest.Dialects() {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			srv := testserver.Start(t, testserver.Options{Dialect: d})
			c := srv.Client()
			ctx := context.Background()
			created, err := c.CreateRun(ctx, "default", memoryRun(rounds), "")
			if err != nil {
				t.Fatal(err)
			}
			run := waitRun(t, c, created.Run.PublicID, 30*time.Second)
			if run.Status != "completed" {
				t.Fatalf("run %s", run.Status)
			}
			if run.Answer == nil || !strings.Contains(*run.Answer, "user/prefs.md  5 bytes  ") || !strings.Contains(*run.Answer, "workspace/plan.md  22 bytes  ") {
				t.Fatalf("answer %q", deref(run.Answer))
			}
			var keys []string
			var prev []json.RawMessage
			for _, tr := range run.Tasks {
				keys = append(keys, tr.Key)
				tk, err := c.Task(ctx, "default", run.PublicID, tr.Key)
				if err != nil {
					t.Fatal(err)
				}
				if tk.Task.Status != "completed" || tk.Task.Output == nil {
					t.Fatalf("%s: %s", tr.Key, tk.Raw)
				}
				if tk.Task.Kind == "tool_task" {
					if tk.Task.IsError == nil || *tk.Task.IsError || tk.Task.Title == nil || tk.Task.EffectProfile == nil {
						t.Fatalf("tool %s: %s", tr.Key, tk.Raw)
					}
					continue
				}
				req, err := c.SealedRequest(ctx, "default", run.PublicID, tr.Key)
				if err != nil {
					t.Fatal(err)
				}
				if int64(len(req)) != *tk.Task.RequestBytes {
					t.Fatalf("%s: served %d bytes, request_bytes %d", tr.Key, len(req), *tk.Task.RequestBytes)
				}
				var sealed struct {
					Request struct {
						Entries        []json.RawMessage `json:"entries"`
						RequestOptions struct {
							Tools      []json.RawMessage `json:"tools"`
							ToolChoice string            `json:"tool_choice"`
						} `json:"request_options"`
					} `json:"request"`
				}
				if err := json.Unmarshal(req, &sealed); err != nil {
					t.Fatalf("%s: %v", tr.Key, err)
				}
				if len(sealed.Request.RequestOptions.Tools) != 6 || sealed.Request.RequestOptions.ToolChoice != "auto" {
					t.Fatalf("%s: offered %d tools", tr.Key, len(sealed.Request.RequestOptions.Tools))
				}
				for i := range prev {
					if string(prev[i]) != string(sealed.Request.Entries[i]) {
						t.Fatalf("%s: entry %d is not the previous round's", tr.Key, i)
					}
				}
				prev = sealed.Request.Entries
			}
			want := "s1-model-1,r2t0,r2t1,r2t2,r2,r3t0,r3t1,r3,r4t0,r4t1,r4"
			if strings.Join(keys, ",") != want {
				t.Fatalf("tasks %s, want %s", strings.Join(keys, ","), want)
			}
			read, _ := c.Task(ctx, "default", run.PublicID, "r4t0")
			if *read.Task.Output != "1. ship\n2. test twice\n" || *read.Task.Title != "read workspace/plan.md" {
				t.Fatalf("read after edit: %q", *read.Task.Output)
			}
			grep, _ := c.Task(ctx, "default", run.PublicID, "r3t1")
			if *grep.Task.Output != "workspace/notes.md:1: retry budget 5" {
				t.Fatalf("grep: %q", *grep.Task.Output)
			}
		})
	}
}

// TestCrashRecovery kills the server (SIGKILL) while a model round is mid-call, restarts it on
// the same store, and shows that every accepted task settles and the run completes: the
// sweeper releases the lost claim at its deadline and another worker replays the sealed
// request.
func TestCrashRecovery(t *testing.T) {
	t.Parallel()
	for _, d := range storetest.Dialects() {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			srv := testserver.Start(t, testserver.Options{Dialect: d, Subprocess: true, Config: `
kernel {
  workers        = 4
  model_timeout  = "3s"
  sweep_interval = "100ms"
}
`})
			c := srv.Client()
			ctx := context.Background()
			script := "Survive a crash.\n!mock\nround 1\ncall memory_write {\"path\":\"workspace/a.md\",\"content\":\"a\"}\ncall memory_ls {}\n" +
				"round 2\nsleep 1500\ncall memory_read {\"path\":\"workspace/a.md\"}\ncall memory_ls {}\nround 3\nsay done {{round}}"
			var ids []string
			for i := 0; i < 3; i++ {
				created, err := c.CreateRun(ctx, "default", memoryRun(script), fmt.Sprintf("crash-%d", i))
				if err != nil {
					t.Fatal(err)
				}
				ids = append(ids, created.Run.PublicID)
			}
			// Wait until every run's second round is claimed and sleeping in the provider.
			deadline := time.Now().Add(30 * time.Second)
			for _, id := range ids {
				for {
					tk, err := c.Task(ctx, "default", id, "r2")
					if err == nil && tk.Task.Attempts != nil && *tk.Task.Attempts >= 1 && tk.Task.Status == "running" {
						break
					}
					if time.Now().After(deadline) {
						t.Fatalf("round 2 of %s never started", id)
					}
					time.Sleep(10 * time.Millisecond)
				}
			}
			srv.Kill()
			srv.Restart()
			c = srv.Client()
			for _, id := range ids {
				run := waitRun(t, c, id, 60*time.Second)
				if run.Status != "completed" || run.Answer == nil || *run.Answer != "done 3" {
					t.Fatalf("run %s after the crash: %s %v", id, run.Status, run.Answer)
				}
				for _, tr := range run.Tasks {
					if tr.Status != "completed" {
						t.Fatalf("%s %s: %s", id, tr.Key, tr.Status)
					}
				}
				r2, err := c.Task(ctx, "default", id, "r2")
				if err != nil {
					t.Fatal(err)
				}
				// One attempt was lost with the process; a loaded machine may lose another to the
				// claim deadline, which the budget of three allows.
				if *r2.Task.Attempts < 2 {
					t.Fatalf("round 2 attempts %d, want at least 2 (one lost with the process)", *r2.Task.Attempts)
				}
				// Kernel memory is in the store: what round 1 wrote before the crash is read after it.
				read, err := c.Task(ctx, "default", id, "r3t0")
				if err != nil || read.Task.Output == nil || *read.Task.Output != "a" {
					t.Fatalf("read after restart: %s %v", read.Raw, err)
				}
			}
			// The replayed key answers the same run.
			again, err := c.CreateRun(ctx, "default", memoryRun(script), "crash-0")
			if err != nil || !again.Replayed || again.Run.PublicID != ids[0] {
				t.Fatalf("replay after restart: %+v %v", again, err)
			}
		})
	}
}

func deref[T any](p *T) T {
	var z T
	if p == nil {
		return z
	}
	return *p
}
