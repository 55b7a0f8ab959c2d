//go:build e2e

package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nexuskernel/nexus/core/store/storetest"
	"github.com/nexuskernel/nexus/plugins"
	"github.com/nexuskernel/nexus/providers/mcp-bridge/mcpbridgetest"
)

// TestPluginMCPBridgePublicFilesystem is what an operator does with the public server-filesystem
// (installed from npm at the pinned version): a plugin block for nexus-mcp-bridge lists it over
// stdio with a root holding a file, and an agent's run reads the file through the real plugin
// host end to end; in the same server a read outside the root is completed with is_error and the
// run still completes. On each store.
func TestPluginMCPBridgePublicFilesystem(t *testing.T) {
	t.Parallel()
	ps := mcpbridgetest.InstallPublicServers(t)
	for _, d := range storetest.Dialects() {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			root := t.TempDir()
			const content = "hello from nexus through server-filesystem\n"
			file := filepath.Join(root, "notes.txt")
			if err := os.WriteFile(file, []byte(content), 0o600); err != nil {
				t.Fatal(err)
			}
			node, _ := json.Marshal(ps.Node)
			args, _ := json.Marshal([]string{ps.Filesystem, root})
			p := startPlugins(t, d, fmt.Sprintf(`
plugin "mcp" {
  kind       = "tool_provider"
  command    = "nexus-mcp-bridge"
  workspaces = ["default"]
  config = {
    servers = [ { name = "fs", command = %s, args = %s } ]
  }
}
`, node, args))
			p.waitPlugin("mcp", func(s plugins.Status) bool { return s.State == plugins.StateReady })
			ex, err := p.admin.Executor(p.ctx, p.executorOf("mcp"))
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(string(ex.Raw), `"fs_read_text_file"`) {
				t.Fatalf("the executor read lacks fs_read_text_file: %s", ex.Raw)
			}

			inside, _ := json.Marshal(map[string]string{"path": file})
			outside, _ := json.Marshal(map[string]string{"path": "/etc/hostname"})
			run := p.modelRun("mock/scripted", fmt.Sprintf(`Read the notes.
!mock
round 1
call fs_read_text_file %s
call fs_read_text_file %s
round 2
say done`, inside, outside), []any{plain("fs_read_text_file")}, nil, "bypass", nil)

			read := p.waitTask(run, "r2t0", "completed", "failed", "uncertain")
			if read.Task.Status != "completed" || deref(read.Task.IsError) || !strings.Contains(deref(read.Task.Output), content) {
				t.Fatalf("fs_read_text_file inside the root: %s", read.Raw)
			}
			if !strings.HasPrefix(deref(read.Task.Title), "fs: ") {
				t.Errorf("title %q lacks the server's prefix", deref(read.Task.Title))
			}
			denied := p.waitTask(run, "r2t1", "completed", "failed", "uncertain")
			if denied.Task.Status != "completed" || !deref(denied.Task.IsError) || !strings.Contains(deref(denied.Task.Output), "Access denied - path outside allowed directories") {
				t.Fatalf("fs_read_text_file outside the root: %s", denied.Raw)
			}
			if final := p.waitRunStatus(run, "completed"); deref(final.Answer) != "done" {
				t.Errorf("answer %q, want done", deref(final.Answer))
			}
		})
	}
}

// TestImportsFromPluginAndBridgedServer is an agent taking whole servers' tools in one line each: a
// run imports the example plugin's tools and the bridged public server-filesystem's read tools by
// pattern (tool_provider_tools), with their announced descriptions and schemas, and calls one of
// each end to end. On each store.
func TestImportsFromPluginAndBridgedServer(t *testing.T) {
	t.Parallel()
	ps := mcpbridgetest.InstallPublicServers(t)
	for _, d := range storetest.Dialects() {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			root := t.TempDir()
			const content = "imported by pattern\n"
			file := filepath.Join(root, "notes.txt")
			if err := os.WriteFile(file, []byte(content), 0o600); err != nil {
				t.Fatal(err)
			}
			node, _ := json.Marshal(ps.Node)
			args, _ := json.Marshal([]string{ps.Filesystem, root})
			p := startPlugins(t, d, fmt.Sprintf(`
plugin "mcp" {
  kind       = "tool_provider"
  command    = "nexus-mcp-bridge"
  workspaces = ["default"]
  config = {
    servers = [ { name = "fs", command = %s, args = %s } ]
  }
}
`, node, args))
			p.waitPlugin("mcp", func(s plugins.Status) bool { return s.State == plugins.StateReady })
			inside, _ := json.Marshal(map[string]string{"path": file})
			run, err := p.importRun(fmt.Sprintf(`Read the notes and echo.
!mock
round 1
call example_echo {"text":"hi"}
call fs_read_text_file %s
round 2
say done`, inside), []string{"example_*", "fs_read_*"}, []string{"example_echo"})
			if err != nil {
				t.Fatal(err)
			}
			if echo := p.waitTask(run, "r2t0", "completed", "failed"); echo.Task.Status != "completed" || !strings.Contains(deref(echo.Task.Output), "hi") {
				t.Fatalf("example_echo: %s", echo.Raw)
			}
			if read := p.waitTask(run, "r2t1", "completed", "failed"); read.Task.Status != "completed" || !strings.Contains(deref(read.Task.Output), content) {
				t.Fatalf("fs_read_text_file: %s", read.Raw)
			}
			p.waitRunStatus(run, "completed")
			r1 := string(p.task(run, "s1-model-1").Raw)
			for _, want := range []string{`"name":"example_stats"`, `"name":"fs_read_text_file"`, `"source":"tool_provider"`} {
				if !strings.Contains(r1, want) {
					t.Fatalf("r1 lacks %s: %s", want, r1)
				}
			}
			if strings.Contains(r1, `"name":"fs_write_file"`) {
				t.Fatalf("fs_read_* imported fs_write_file: %s", r1)
			}
		})
	}
}
