package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/nexuskernel/nexus/core/store"
	"github.com/nexuskernel/nexus/plugins"
	"github.com/nexuskernel/nexus/providers/mcp-bridge/mcpbridgetest"
)

// TestPluginMCPBridge runs nexus-mcp-bridge under the real plugin host with the fixture MCP
// server (this test binary, over stdio): its tools are announced under the server's prefix, a
// model's parallel round reaches them, an image becomes an upload that rides to the model as an
// attachment, a protocol error fails the row
// with the server's words, and a kernel name is never announced.
func TestPluginMCPBridge(t *testing.T) {
	t.Parallel()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd, _ := json.Marshal(exe)
	p := startPlugins(t, store.SQLite, fmt.Sprintf(`
plugin "mcp" {
  kind       = "tool_provider"
  command    = "nexus-mcp-bridge"
  workspaces = ["default"]
  config = {
    servers = [
      { name = "fx", command = %s, env = { %s = "basic", %s = %q }, deny = ["no_annotations"] },
    ]
  }
}
`, cmd, mcpbridgetest.EnvScenario, mcpbridgetest.EnvState, t.TempDir()))
	p.waitPlugin("mcp", func(s plugins.Status) bool { return s.State == plugins.StateReady })
	ex, err := p.admin.Executor(p.ctx, p.executorOf("mcp"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"fx_echo"`, `"fx_image"`, `"fx_files__2fread"`, `"fx_delegate_task"`, `"mcp_bridge"`} {
		if !strings.Contains(string(ex.Raw), want) {
			t.Errorf("the executor read lacks %s: %s", want, ex.Raw)
		}
	}
	if strings.Contains(string(ex.Raw), `"fx_no_annotations"`) {
		t.Error("a denied tool is announced")
	}
	run := p.modelRun("mock/scripted", `Use the tools.
!mock
round 1
call fx_echo {"message":"hello through the bridge"}
call fx_image {}
call fx_fail_protocol {}
call fx_files__2fread {}
round 2
say {{attachments}}`, []any{plain("fx_echo"), plain("fx_image"), plain("fx_fail_protocol"), plain("fx_files__2fread")}, nil, "bypass", nil)
	echo := p.waitTask(run, "r2t0", "completed", "failed")
	if echo.Task.Status != "completed" || deref(echo.Task.Output) != "hello through the bridge" || deref(echo.Task.Title) != "fx: echo" {
		t.Fatalf("fx_echo: %s", echo.Raw)
	}
	img := p.waitTask(run, "r2t1", "completed", "failed")
	if img.Task.Status != "completed" || !strings.Contains(string(img.Task.Content), `nexus://uploads/`) || !strings.Contains(string(img.Task.Content), `"image-1.png"`) {
		t.Fatalf("fx_image: %s", img.Raw)
	}
	fail := p.waitTask(run, "r2t2", "completed", "failed")
	if fail.Task.Status != "failed" || fail.Task.Error == nil || fail.Task.Error.Key != "tool_failed" || fail.Task.Error.Detail != "fixture protocol failure" {
		t.Fatalf("fx_fail_protocol: %s", fail.Raw)
	}
	named := p.waitTask(run, "r2t3", "completed", "failed")
	if named.Task.Status != "completed" || deref(named.Task.Output) != "files/read" {
		t.Fatalf("fx_files__2fread: %s", named.Raw)
	}
	// The image rides to the (vision) mock model as an attachment of the next request.
	if final := p.waitRunStatus(run, "completed"); !strings.Contains(deref(final.Answer), "image-1.png") {
		t.Errorf("answer %q names no image-1.png", deref(final.Answer))
	}

	// A server that dies mid-call: a lost answer (protocol 1.1). Not replayable: uncertain at
	// once, long before the 120 s deadline; read-only: replayed, and answered on attempt 2. The
	// plugin itself is never restarted.
	before := p.statuses()["mcp"]
	crash := p.modelRun("mock/scripted", `Crash.
!mock
round 1
call fx_crash {}
round 2
say done`, []any{plain("fx_crash")}, nil, "bypass", nil)
	tk := p.waitTask(crash, "r2t0", "uncertain", "failed", "completed")
	if tk.Task.Status != "uncertain" || tk.Task.Error == nil || tk.Task.Error.Key != "tool_uncertain" {
		t.Fatalf("fx_crash: %s", tk.Raw)
	}
	once := p.modelRun("mock/scripted", `Crash once.
!mock
round 1
call fx_crash_once {}
round 2
say done`, []any{plain("fx_crash_once")}, nil, "bypass", nil)
	tk = p.waitTask(once, "r2t0", "completed", "failed", "uncertain")
	if tk.Task.Status != "completed" || deref(tk.Task.Output) != "survived" {
		t.Fatalf("fx_crash_once: %s", tk.Raw)
	}
	if after := p.statuses()["mcp"]; after.State != plugins.StateReady || after.Generation != before.Generation {
		t.Errorf("the plugin was restarted: %+v → %+v", before, after)
	}
}

// TestPluginMCPBridgeListChange: a server's list change reaches the kernel without a plugin
// restart: after fx_grow the executor read lists fx_grown within 2 s, a new run calls it, and
// after fx_shrink a new call to it is born tool_not_served.
func TestPluginMCPBridgeListChange(t *testing.T) {
	t.Parallel()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd, _ := json.Marshal(exe)
	p := startPlugins(t, store.SQLite, fmt.Sprintf(`
plugin "mcp" {
  kind       = "tool_provider"
  command    = "nexus-mcp-bridge"
  workspaces = ["default"]
  config     = { servers = [ { name = "fx", command = %s, env = { %s = "basic" } } ] }
}
`, cmd, mcpbridgetest.EnvScenario))
	p.waitPlugin("mcp", func(s plugins.Status) bool { return s.State == plugins.StateReady })
	read := func() string {
		ex, err := p.admin.Executor(p.ctx, p.executorOf("mcp"))
		if err != nil {
			t.Fatal(err)
		}
		return string(ex.Raw)
	}
	if strings.Contains(read(), `"fx_grown"`) {
		t.Fatal("fx_grown announced before the change")
	}
	grow := p.modelRun("mock/scripted", "!mock\nround 1\ncall fx_grow {}\nround 2\nsay done", []any{plain("fx_grow")}, nil, "bypass", nil)
	p.waitRunStatus(grow, "completed")
	deadline := time.Now().Add(2 * time.Second)
	for !strings.Contains(read(), `"fx_grown"`) {
		if time.Now().After(deadline) {
			t.Fatalf("fx_grown not announced within 2 s: %s", read())
		}
		time.Sleep(50 * time.Millisecond)
	}
	use := p.modelRun("mock/scripted", "!mock\nround 1\ncall fx_grown {}\nround 2\nsay done", []any{plain("fx_grown")}, nil, "bypass", nil)
	if tk := p.waitTask(use, "r2t0", "completed", "failed"); tk.Task.Status != "completed" || deref(tk.Task.Output) != "grown" {
		t.Fatalf("fx_grown: %s", tk.Raw)
	}
	shrink := p.modelRun("mock/scripted", "!mock\nround 1\ncall fx_shrink {}\nround 2\nsay done", []any{plain("fx_shrink")}, nil, "bypass", nil)
	p.waitRunStatus(shrink, "completed")
	deadline = time.Now().Add(3 * time.Second)
	for strings.Contains(read(), `"fx_grown"`) {
		if time.Now().After(deadline) {
			t.Fatal("fx_grown still announced after fx_shrink")
		}
		time.Sleep(50 * time.Millisecond)
	}
	gone := p.modelRun("mock/scripted", "!mock\nround 1\ncall fx_grown {}\nround 2\nsay done", []any{plain("fx_grown")}, nil, "bypass", nil)
	if tk := p.waitTask(gone, "r2t0", "failed", "completed"); tk.Task.Status != "failed" || tk.Task.Error == nil || tk.Task.Error.Key != "tool_not_served" {
		t.Fatalf("fx_grown after the shrink: %s", tk.Raw)
	}
}
