package e2e

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/jmoiron/sqlx"
	_ "github.com/lib/pq" // the memory-postgres store's tables are read back over database/sql

	"github.com/nexuskernel/nexus/core/store"
	"github.com/nexuskernel/nexus/core/store/storetest"
	"github.com/nexuskernel/nexus/internal/testserver"
	"github.com/nexuskernel/nexus/plugins"
	"github.com/nexuskernel/nexus/sdk/client"
)

// pluginBinEnv names a directory holding already built plugin binaries (`make plugins`); without
// it the tests build them once from cmd/ into a temporary directory.
const pluginBinEnv = "NEXUS_PLUGIN_BIN_DIR"

var (
	pluginBinOnce sync.Once
	pluginBinDir  string
	pluginBinTemp string
	pluginBinErr  error
)

// pluginBinaries answers the directory of the plugin binaries.
func pluginBinaries(t testing.TB) string {
	t.Helper()
	pluginBinOnce.Do(func() {
		if d := os.Getenv(pluginBinEnv); d != "" {
			pluginBinDir, pluginBinErr = filepath.Abs(d)
			return
		}
		dir, err := os.MkdirTemp("", "nexus-e2e-plugins-")
		if err != nil {
			pluginBinErr = err
			return
		}
		pluginBinTemp = dir
		cmd := exec.Command("go", "build", "-o", dir+string(os.PathSeparator),
			"./cmd/nexus-memory-fs", "./cmd/nexus-memory-postgres", "./cmd/nexus-tools-example", "./cmd/nexus-mcp-bridge")
		cmd.Dir = filepath.Join("..", "..")
		if out, err := cmd.CombinedOutput(); err != nil {
			pluginBinErr = fmt.Errorf("building the plugins: %v\n%s", err, out)
			return
		}
		pluginBinDir = dir
	})
	if pluginBinErr != nil {
		t.Fatal(pluginBinErr)
	}
	return pluginBinDir
}

// removePluginBinaries deletes the binaries the tests built.
func removePluginBinaries() {
	if pluginBinTemp != "" {
		_ = os.RemoveAll(pluginBinTemp)
	}
}

// pgSchema names a fresh schema for the memory-postgres store, dropped when t ends.
func pgSchema(t *testing.T, url string) string {
	t.Helper()
	var b [6]byte
	_, _ = rand.Read(b[:])
	schema := "nexus_memory_test_" + hex.EncodeToString(b[:])
	t.Cleanup(func() {
		db, err := sqlx.Open("postgres", url)
		if err != nil {
			t.Error(err)
			return
		}
		defer func() { _ = db.Close() }()
		if _, err := db.Exec(`DROP SCHEMA IF EXISTS ` + schema + ` CASCADE`); err != nil {
			t.Error(err)
		}
	})
	return schema
}

// pluginServer is a server running plugins from the built binaries.
type pluginServer struct {
	*plane
	fsRoot   string
	pgSchema string
}

// pluginTimings keep the crash tests short: restarts after 20 ms, and a breaker that five
// kills in a row do not open (the loop proves restarts, not the breaker).
var pluginTimings = plugins.Timings{BackoffBase: 20 * time.Millisecond, BackoffMax: 200 * time.Millisecond,
	BreakerThreshold: 1000, InboxPoll: 200 * time.Millisecond, DrainTimeout: time.Second, ShutdownGrace: time.Second}

// startPlugins starts a server whose catalog runs memory-fs, tools-example and, with
// PostgreSQL configured, memory-postgres, and waits for each to be ready.
func startPlugins(t *testing.T, d store.Dialect, extra string) *pluginServer {
	t.Helper()
	return startPluginsWith(t, d, extra, pluginStart{level: hclog.Debug, timings: pluginTimings})
}

// pluginStart adjusts startPluginsWith.
type pluginStart struct {
	// level is the server's log level (a load test keeps its warnings and leaves out a line
	// per request).
	level hclog.Level
	// timings are the supervisors' clocks.
	timings plugins.Timings
	// memoryTimeoutMS, when set, is the memory plugins' timeout_ms.
	memoryTimeoutMS int64
}

// startPluginsWith is startPlugins with o.
func startPluginsWith(t *testing.T, d store.Dialect, extra string, o pluginStart) *pluginServer {
	t.Helper()
	memTimeout := ""
	if o.memoryTimeoutMS > 0 {
		memTimeout = fmt.Sprintf("\n  timeout_ms = %d", o.memoryTimeoutMS)
	}
	bins := pluginBinaries(t)
	ps := &pluginServer{fsRoot: filepath.Join(t.TempDir(), "memory-fs")}
	config := fmt.Sprintf(`
kernel {
  sweep_interval = "50ms"
}
plugin_dirs = [%q]

plugin "memory-fs" {
  kind    = "memory"
  command = "nexus-memory-fs"
  config  = { root = %q, fsync = false }%s
}

plugin "tools-example" {
  kind       = "tool_provider"
  command    = "nexus-tools-example"
  workspaces = ["default"]
}
`, bins, ps.fsRoot, memTimeout)
	if url := storetest.PostgresURL(); url != "" {
		ps.pgSchema = pgSchema(t, url)
		config += fmt.Sprintf(`
plugin "memory-pg" {
  kind    = "memory"
  command = "nexus-memory-postgres"
  config  = { dsn = %q, schema = %q, max_open_conns = 2 }%s
}
`, url, ps.pgSchema, memTimeout)
	}
	config += extra
	clock := testserver.NewClock()
	srv := testserver.Start(t, testserver.Options{Dialect: d, Now: clock.Now, Config: config, PluginTimings: o.timings, LogLevel: o.level})
	ps.plane = &plane{t: t, srv: srv, clock: clock, admin: srv.Client(), ctx: context.Background()}
	for _, name := range []string{"memory-fs", "tools-example"} {
		ps.waitPlugin(name, func(s plugins.Status) bool { return s.State == plugins.StateReady })
	}
	if ps.pgSchema != "" {
		ps.waitPlugin("memory-pg", func(s plugins.Status) bool { return s.State == plugins.StateReady })
	}
	return ps
}

// statuses reads GET /agent_api/v1/plugins.
func (p *pluginServer) statuses() map[string]plugins.Status {
	p.t.Helper()
	code, _, body := p.raw(http.MethodGet, "/agent_api/v1/plugins", p.srv.AdminToken, nil, nil)
	if code != http.StatusOK {
		p.t.Fatalf("GET plugins: %d %s", code, body)
	}
	var doc struct {
		Plugins []plugins.Status `json:"plugins"`
	}
	if err := json.Unmarshal(body, &doc); err != nil {
		p.t.Fatal(err)
	}
	out := map[string]plugins.Status{}
	for _, s := range doc.Plugins {
		out[s.Name] = s
	}
	return out
}

// waitPlugin waits until the plugin's status satisfies ok.
func (p *pluginServer) waitPlugin(name string, ok func(plugins.Status) bool) plugins.Status {
	p.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	var last plugins.Status
	for time.Now().Before(deadline) {
		last = p.statuses()[name]
		if ok(last) {
			return last
		}
		time.Sleep(10 * time.Millisecond)
	}
	p.t.Fatalf("plugin %s: %+v", name, last)
	return last
}

func (p *pluginServer) executorOf(name string) string {
	p.t.Helper()
	s := p.statuses()[name]
	if s.ExecutorPublicID == nil {
		p.t.Fatalf("plugin %s has no executor: %+v", name, s)
	}
	return *s.ExecutorPublicID
}

// putOverride sets the workspace's memory override (empty id clears it) and answers the new
// lock version.
func (p *pluginServer) putOverride(executorID string, lock int64) int64 {
	p.t.Helper()
	m := map[string]string{}
	if executorID != "" {
		m["nexus.memory"] = executorID
	}
	body, _ := json.Marshal(map[string]any{"tool_provider_overrides": m, "expected_lock_version": lock})
	code, _, out := p.raw(http.MethodPut, "/agent_api/v1/workspaces/default/tool_provider_overrides", p.srv.AdminToken, body, nil)
	if code != http.StatusOK {
		p.t.Fatalf("PUT override: %d %s", code, out)
	}
	var doc struct {
		Map         map[string]string `json:"tool_provider_overrides"`
		LockVersion int64             `json:"lock_version"`
	}
	if err := json.Unmarshal(out, &doc); err != nil {
		p.t.Fatal(err)
	}
	if doc.LockVersion != lock+1 || doc.Map["nexus.memory"] != executorID {
		p.t.Fatalf("PUT override answered %s", out)
	}
	return doc.LockVersion
}

func (p *pluginServer) workspaceID() string {
	p.t.Helper()
	ws, err := p.admin.Workspace(p.ctx, "default")
	if err != nil {
		p.t.Fatal(err)
	}
	return ws.Workspace.PublicID
}

// fsDocuments reads the memory-fs store's documents of one anchor: name → content.
func fsDocuments(t *testing.T, root, kind, owner string) map[string]string {
	t.Helper()
	out := map[string]string{}
	files, _ := filepath.Glob(filepath.Join(root, "anchors", kind, owner, "*.doc"))
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		header, content, _ := strings.Cut(string(b), "\n")
		var h struct {
			Name string `json:"name"`
		}
		if err := json.Unmarshal([]byte(header), &h); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		out[h.Name] = content
	}
	return out
}

// TestPluginMemoryOverrideSwitch switches the default workspace's memory from the kernel's
// built-in store to the memory-fs plugin and, with PostgreSQL configured, on to memory-postgres,
// then back: each run's memory calls land in the store the override names, with the built-in
// texts, and nowhere else.
func TestPluginMemoryOverrideSwitch(t *testing.T) {
	t.Parallel()
	for _, d := range storetest.Dialects() {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			p := startPlugins(t, d, "")
			ws := p.workspaceID()
			fsID := p.executorOf("memory-fs")
			st := p.statuses()["memory-fs"]
			if strings.Join(st.Tools, ",") != "memory_delete,memory_edit,memory_grep,memory_ls,memory_read,memory_write" || st.PID == nil {
				t.Fatalf("memory-fs status %+v", st)
			}
			code, _, body := p.raw(http.MethodGet, "/agent_api/v1/workspaces/default/tool_provider_overrides", p.srv.AdminToken, nil, nil)
			if code != http.StatusOK || strings.TrimSpace(string(body)) != `{"tool_provider_overrides":{},"lock_version":0}` {
				t.Fatalf("fresh override map: %d %s", code, body)
			}
			lock := p.putOverride(fsID, 0)

			c := p.admin
			created, err := c.CreateRun(p.ctx, "default", memoryRun(rounds), "")
			if err != nil {
				t.Fatal(err)
			}
			run := waitRun(t, c, created.Run.PublicID, 30*time.Second)
			if run.Status != "completed" || run.Answer == nil || !strings.Contains(*run.Answer, "workspace/plan.md  22 bytes  ") {
				t.Fatalf("run %s: %q", run.Status, deref(run.Answer))
			}
			read := p.task(run.PublicID, "r4t0")
			if deref(read.Task.Output) != "1. ship\n2. test twice\n" || deref(read.Task.Title) != "read workspace/plan.md" {
				t.Fatalf("read after edit: %s", read.Raw)
			}
			if !strings.Contains(string(read.Raw), fsID) {
				t.Fatalf("the read was not addressed to memory-fs %s: %s", fsID, read.Raw)
			}
			grep := p.task(run.PublicID, "r3t1")
			if deref(grep.Task.Output) != "workspace/notes.md:1: retry budget 5" {
				t.Fatalf("grep: %s", grep.Raw)
			}
			docs := fsDocuments(t, p.fsRoot, "workspace", ws)
			if docs["plan.md"] != "1. ship\n2. test twice\n" || docs["notes.md"] != "retry budget 5" || len(docs) != 2 {
				t.Fatalf("memory-fs workspace anchor: %v", docs)
			}
			// The member doors read memory-fs too (TestMemberMemoryThroughOverride); whether
			// anything reached the kernel's built-in store shows once the override is cleared.

			if p.pgSchema != "" {
				pgID := p.executorOf("memory-pg")
				lock = p.putOverride(pgID, lock)
				created, err := c.CreateRun(p.ctx, "default", memoryRun(`Switch.
!mock
round 1
call memory_write {"path":"workspace/pg.md","content":"in postgres"}
call memory_read {"path":"workspace/plan.md"}
round 2
say {{last_result}}`), "")
				if err != nil {
					t.Fatal(err)
				}
				run := waitRun(t, c, created.Run.PublicID, 30*time.Second)
				if run.Status != "completed" {
					t.Fatalf("run on memory-postgres: %s", run.Status)
				}
				// Documents are not migrated: the plan stays in memory-fs.
				if miss := p.task(run.PublicID, "r2t1"); miss.Task.IsError == nil || !*miss.Task.IsError {
					t.Fatalf("plan.md on memory-postgres: %s", miss.Raw)
				}
				db, err := sqlx.Open("postgres", storetest.PostgresURL())
				if err != nil {
					t.Fatal(err)
				}
				defer func() { _ = db.Close() }()
				var rows []struct {
					Name    string `db:"name"`
					Content string `db:"content"`
				}
				if err := db.Select(&rows, `SELECT name, content FROM `+p.pgSchema+`.documents WHERE owner_id = $1 ORDER BY name`, ws); err != nil {
					t.Fatal(err)
				}
				if len(rows) != 1 || rows[0].Name != "pg.md" || rows[0].Content != "in postgres" {
					t.Fatalf("memory-postgres documents: %+v", rows)
				}
				if _, ok := fsDocuments(t, p.fsRoot, "workspace", ws)["pg.md"]; ok {
					t.Fatal("pg.md reached memory-fs")
				}
			}

			// Clearing the map hands memory back to the kernel's store.
			p.putOverride("", lock)
			created, err = c.CreateRun(p.ctx, "default", memoryRun(`Back.
!mock
round 1
call memory_write {"path":"workspace/kernel.md","content":"built in"}
round 2
say done`), "")
			if err != nil {
				t.Fatal(err)
			}
			if run := waitRun(t, c, created.Run.PublicID, 30*time.Second); run.Status != "completed" {
				t.Fatalf("run on kernel memory: %s", run.Status)
			}
			code, _, body = p.raw(http.MethodGet, "/agent_api/v1/workspaces/default/memory", p.srv.AdminToken, nil, nil)
			if code != http.StatusOK || !strings.Contains(string(body), "kernel.md") || strings.Contains(string(body), "plan.md") {
				t.Fatalf("kernel memory after clearing: %d %s", code, body)
			}
			if _, ok := fsDocuments(t, p.fsRoot, "workspace", ws)["kernel.md"]; ok {
				t.Fatal("kernel.md reached memory-fs")
			}
		})
	}
}

// TestPluginToolsExample serves the example plugin's tools to a run: a declared example_echo and
// example_report, answered by the plugin through the claim and commit path, the report's capture
// staged and linked as an upload.
func TestPluginToolsExample(t *testing.T) {
	t.Parallel()
	p := startPlugins(t, store.SQLite, "")
	toolsID := p.executorOf("tools-example")
	ex, err := p.admin.Executor(p.ctx, toolsID)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(ex.Raw), `"example_echo"`) || !strings.Contains(string(ex.Raw), `"display_name":"plugin tools-example"`) ||
		!strings.Contains(string(ex.Raw), `"managed_by":{"plugin":"tools-example"}`) || !strings.Contains(string(ex.Raw), `"presence":"online"`) {
		t.Fatalf("the managed executor's read: %s", ex.Raw)
	}
	run := p.modelRun("mock/scripted", `Use the tools.
!mock
round 1
call example_echo {"text":"hi","repeat":2,"upper":true}
call example_report {"title":"Q1","rows":[{"name":"a","value":1},{"name":"b","value":2.5}]}
round 2
say done`, []any{plain("example_echo"), plain("example_report")}, nil, "bypass", nil)
	echo := p.waitTask(run, "r2t0", "completed", "failed")
	if echo.Task.Status != "completed" || deref(echo.Task.Output) != "HI\nHI" || deref(echo.Task.Title) != "echo (2×)" {
		t.Fatalf("example_echo: %s", echo.Raw)
	}
	if !strings.Contains(string(echo.Raw), `"length":5`) {
		t.Fatalf("example_echo structured content: %s", echo.Raw)
	}
	report := p.waitTask(run, "r2t1", "completed", "failed")
	if report.Task.Status != "completed" || !strings.Contains(string(report.Task.Content), `nexus://uploads/`) ||
		!strings.Contains(string(report.Task.Content), `"Report Q1: 2 rows."`) {
		t.Fatalf("example_report: %s", report.Raw)
	}
	p.waitRunStatus(run, "completed")
	st := p.statuses()["tools-example"]
	if st.Calls.Completed < 2 || st.InFlight != 0 {
		t.Fatalf("tools-example counts: %+v", st.Calls)
	}
}

// crashLoopRounds is how many times TestPluginCrashLoop kills the plugin: a short loop in every
// run of the suite, the hundred under `make soak` (NEXUS_SOAK=1).
func crashLoopRounds() int {
	if os.Getenv("NEXUS_SOAK") != "" {
		return 100
	}
	return 5
}

// TestPluginCrashLoop kills the tools-example plugin with SIGKILL in the middle of a call, again
// and again: each time the host restarts it, and the call in flight (a write without intrinsic
// idempotency, so not replayable) settles at once by the expiry rule, uncertain; none is lost
// and the next call is served by the new process.
func TestPluginCrashLoop(t *testing.T) {
	t.Parallel()
	p := startPlugins(t, store.SQLite, "")
	n := crashLoopRounds()
	pid := *p.statuses()["tools-example"].PID
	for i := range n {
		run := p.modelRun("mock/scripted", `Sleep.
!mock
round 1
call example_control {"mode":"sleep","sleep_ms":600000}
round 2
say done`, []any{plain("example_control")}, nil, "bypass", nil)
		p.waitPlugin("tools-example", func(s plugins.Status) bool { return s.InFlight == 1 })
		if err := killPID(pid); err != nil {
			t.Fatalf("round %d: %v", i, err)
		}
		tk := p.waitTask(run, "r2t0", "uncertain", "completed", "failed", "timed_out")
		if tk.Task.Status != "uncertain" || tk.Task.Error == nil || tk.Task.Error.Key != "tool_uncertain" {
			t.Fatalf("round %d: the call in flight settled %s", i, tk.Raw)
		}
		st := p.waitPlugin("tools-example", func(s plugins.Status) bool {
			return s.State == plugins.StateReady && s.PID != nil && *s.PID != pid
		})
		pid = *st.PID
		if st.Restarts < i+1 || st.Calls.Expired < i+1 {
			t.Fatalf("round %d: status %+v", i, st)
		}
	}
	// The restarted plugin serves the next call.
	run := p.modelRun("mock/scripted", `Echo.
!mock
round 1
call example_echo {"text":"alive"}
round 2
say done`, []any{plain("example_echo")}, nil, "bypass", nil)
	if tk := p.waitTask(run, "r2t0", "completed", "failed"); deref(tk.Task.Output) != "alive" {
		t.Fatalf("after the crashes: %s", tk.Raw)
	}
}

// TestPluginRoutes pins the plugin routes' standing and answers: a member owning no workspace is
// not_authorized, an agent not_user, an executor token unauthorized, an unknown plugin
// not_found; restart replaces the process and reload keeps an unchanged catalog running.
func TestPluginRoutes(t *testing.T) {
	t.Parallel()
	p := startPlugins(t, store.SQLite, "")
	member, err := p.admin.CreateUser(p.ctx, "default", &client.CreateUserRequest{Handle: "mia", DisplayName: "Mia", Role: "member"})
	if err != nil {
		t.Fatal(err)
	}
	tp := p.executor("tool_provider", "box")
	agent, err := p.admin.CreateAgent(p.ctx, "default", &client.CreateAgentRequest{Handle: "bot", DisplayName: "Bot"})
	if err != nil {
		t.Fatal(err)
	}
	for _, route := range [][2]string{
		{http.MethodGet, "/agent_api/v1/plugins"},
		{http.MethodGet, "/agent_api/v1/plugins/memory-fs"},
		{http.MethodPost, "/agent_api/v1/plugins/reload"},
		{http.MethodPost, "/agent_api/v1/plugins/memory-fs/restart"},
	} {
		if code, _, body := p.raw(route[0], route[1], member.Token, nil, nil); code != http.StatusForbidden || errorCode(body) != "not_authorized" {
			t.Errorf("%s %s as a member: %d %s", route[0], route[1], code, body)
		}
		if code, _, body := p.raw(route[0], route[1], tp.token, nil, nil); code != http.StatusUnauthorized || errorCode(body) != "unauthorized" {
			t.Errorf("%s %s as an executor: %d %s", route[0], route[1], code, body)
		}
		if code, _, body := p.raw(route[0], route[1], agent.Token, nil, nil); code != http.StatusForbidden || errorCode(body) != "not_user" {
			t.Errorf("%s %s as an agent: %d %s", route[0], route[1], code, body)
		}
	}
	for _, route := range [][2]string{{http.MethodGet, "/agent_api/v1/plugins/ghost"}, {http.MethodPost, "/agent_api/v1/plugins/ghost/restart"}} {
		if code, _, body := p.raw(route[0], route[1], p.srv.AdminToken, nil, nil); code != http.StatusNotFound || errorCode(body) != "not_found" {
			t.Errorf("%s %s: %d %s", route[0], route[1], code, body)
		}
	}
	before := p.statuses()["memory-fs"]
	code, _, body := p.raw(http.MethodPost, "/agent_api/v1/plugins/memory-fs/restart", p.srv.AdminToken, nil, nil)
	if code != http.StatusOK {
		t.Fatalf("restart: %d %s", code, body)
	}
	after := p.waitPlugin("memory-fs", func(s plugins.Status) bool {
		return s.State == plugins.StateReady && s.PID != nil && *s.PID != *before.PID
	})
	if *after.ExecutorPublicID != *before.ExecutorPublicID || after.Generation <= before.Generation {
		t.Fatalf("restart: before %+v after %+v", before, after)
	}
	code, _, body = p.raw(http.MethodPost, "/agent_api/v1/plugins/reload", p.srv.AdminToken, nil, nil)
	var reloaded struct {
		Reload plugins.ReloadReport `json:"reload"`
	}
	_ = json.Unmarshal(body, &reloaded)
	if code != http.StatusOK || len(reloaded.Reload.Added)+len(reloaded.Reload.Removed)+len(reloaded.Reload.Changed) != 0 ||
		!contains(reloaded.Reload.Unchanged, "memory-fs") || !contains(reloaded.Reload.Unchanged, "tools-example") {
		t.Fatalf("reload: %d %s", code, body)
	}
	if now := p.statuses()["memory-fs"]; now.PID == nil || *now.PID != *after.PID {
		t.Fatalf("an unchanged plugin was restarted by the reload: %+v", now)
	}
	// An invalid configuration changes nothing: 422 validation_failed with the file and line.
	conf, err := os.ReadFile(p.srv.ConfigPath())
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p.srv.ConfigPath(), append(conf, []byte("\nplugin \"broken\" {\n  kind = \"spaceship\"\n}\n")...), 0o600); err != nil {
		t.Fatal(err)
	}
	code, _, body = p.raw(http.MethodPost, "/agent_api/v1/plugins/reload", p.srv.AdminToken, nil, nil)
	var refused struct {
		Error struct {
			Code string `json:"code"`
			File string `json:"file"`
			Line int    `json:"line"`
		} `json:"error"`
	}
	_ = json.Unmarshal(body, &refused)
	if code != http.StatusUnprocessableEntity || refused.Error.Code != "validation_failed" || refused.Error.File != p.srv.ConfigPath() || refused.Error.Line == 0 {
		t.Fatalf("reload of an invalid configuration: %d %s", code, body)
	}
	if now := p.statuses(); len(now) != len(reloaded.Reload.Unchanged) || now["memory-fs"].PID == nil || *now["memory-fs"].PID != *after.PID {
		t.Fatalf("the refused reload changed the plugins: %+v", now)
	}
	// Stopping the server stops its plugins.
	pids := []int{*after.PID, *p.statuses()["tools-example"].PID}
	if err := p.srv.Stop(); err != nil {
		t.Fatal(err)
	}
	for _, pid := range pids {
		deadline := time.Now().Add(5 * time.Second)
		for processAlive(pid) {
			if time.Now().After(deadline) {
				t.Fatalf("plugin process %d outlived the server", pid)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
}

// processAlive reports whether a process still runs (a zombie not yet reaped counts as gone).
func processAlive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	_, rest, _ := strings.Cut(string(b), ") ")
	return !strings.HasPrefix(rest, "Z")
}

// killPID sends SIGKILL to a plugin process.
func killPID(pid int) error {
	proc, err := os.FindProcess(pid)
	if err != nil {
		return err
	}
	return proc.Kill()
}

// TestToolProviderOverrideRefusals pins the refusals (docs/api.md#the-memory-override), each with
// its status, code, path and word, and those of docs/api.md#the-memory-override: a row refused
// before dispatch fails at birth, and a revoked target fails the memory call tool_not_served
// without falling back to the kernel's store.
func TestToolProviderOverrideRefusals(t *testing.T) {
	t.Parallel()
	p := startPlugins(t, store.SQLite, "")
	fsID := p.executorOf("memory-fs")
	path := "/agent_api/v1/workspaces/default/tool_provider_overrides"
	put := func(token, body string) (int, []byte) {
		code, _, out := p.raw(http.MethodPut, path, token, []byte(body), nil)
		return code, out
	}
	type refusalDoc struct {
		Error struct {
			Code               string   `json:"code"`
			Path               string   `json:"path"`
			Word               string   `json:"word"`
			Missing            []string `json:"missing"`
			CurrentLockVersion *int64   `json:"current_lock_version"`
		} `json:"error"`
	}
	parse := func(b []byte) refusalDoc {
		var d refusalDoc
		if err := json.Unmarshal(b, &d); err != nil {
			t.Fatalf("%v: %s", err, b)
		}
		return d
	}
	runner := p.executor("runner", "laptop")
	partial := p.executor("tool_provider", "partial")
	p.announce(partial, tool("memory_read", 0), tool("memory_ls", 0))
	gone := p.executor("tool_provider", "gone")
	if _, err := p.admin.RevokeExecutor(p.ctx, gone.id); err != nil {
		t.Fatal(err)
	}
	// A plugin's executor whose catalog no longer names the workspace.
	ineligible := p.executor("tool_provider", "moved")
	err := p.srv.Server().Store().Write(p.ctx, func(tx *store.Tx) error {
		e, err := store.ExecutorByPublicID(p.ctx, tx, ineligible.id)
		if err != nil {
			return err
		}
		if _, err := tx.Exec(p.ctx, `UPDATE executors SET managed_by = 'moved' WHERE id = ?`, e.ID); err != nil {
			return err
		}
		return store.SetManagedEligible(p.ctx, tx, e.ID, false)
	})
	if err != nil {
		t.Fatal(err)
	}
	// Created before a second workspace exists, so p.executor needs no workspace.
	full := p.executor("tool_provider", "full")
	if _, err := p.admin.CreateWorkspace(p.ctx, &client.CreateWorkspaceRequest{Handle: "ops", Name: "Ops"}); err != nil {
		t.Fatal(err)
	}
	foreign, err := p.admin.CreateExecutor(p.ctx, &client.CreateExecutorRequest{Kind: "tool_provider", DisplayName: "elsewhere", WorkspacePublicID: "ops"})
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name, body string
		status     int
		code, at   string
		word       string
	}{
		{"lock version missing", `{"tool_provider_overrides":{}}`, 400, "parameter_missing", "expected_lock_version", ""},
		{"lock version negative", `{"tool_provider_overrides":{},"expected_lock_version":-1}`, 400, "parameter_invalid", "expected_lock_version", ""},
		{"lock version a string", `{"tool_provider_overrides":{},"expected_lock_version":"0"}`, 400, "parameter_invalid", "expected_lock_version", ""},
		{"map missing", `{"expected_lock_version":0}`, 400, "parameter_missing", "tool_provider_overrides", ""},
		{"map not an object", `{"tool_provider_overrides":[],"expected_lock_version":0}`, 400, "parameter_invalid", "tool_provider_overrides", ""},
		{"over the bound", `{"tool_provider_overrides":{"` + strings.Repeat("x", 2100) + `":"a"},"expected_lock_version":0}`, 422, "validation_failed", "tool_provider_overrides", ""},
		{"nexus.skill", `{"tool_provider_overrides":{"nexus.skill":"` + fsID + `"},"expected_lock_version":0}`, 422, "validation_failed", "tool_provider_overrides.nexus.skill", "not_overridable"},
		{"a reserved family", `{"tool_provider_overrides":{"nexus.graph":"` + fsID + `"},"expected_lock_version":0}`, 422, "validation_failed", "tool_provider_overrides.nexus.graph", "not_overridable"},
		{"not a UUID", `{"tool_provider_overrides":{"nexus.memory":"memory-fs"},"expected_lock_version":0}`, 422, "validation_failed", "tool_provider_overrides.nexus.memory", "invalid_value"},
		{"not a string", `{"tool_provider_overrides":{"nexus.memory":7},"expected_lock_version":0}`, 422, "validation_failed", "tool_provider_overrides.nexus.memory", "invalid_value"},
		{"no such executor", `{"tool_provider_overrides":{"nexus.memory":"01900000-0000-7000-8000-000000000999"},"expected_lock_version":0}`, 422, "validation_failed", "tool_provider_overrides.nexus.memory", "unknown_executor"},
		{"another workspace's executor", `{"tool_provider_overrides":{"nexus.memory":"` + foreign.Executor.PublicID + `"},"expected_lock_version":0}`, 422, "validation_failed", "tool_provider_overrides.nexus.memory", "unknown_executor"},
		{"a runner", `{"tool_provider_overrides":{"nexus.memory":"` + runner.id + `"},"expected_lock_version":0}`, 422, "validation_failed", "tool_provider_overrides.nexus.memory", "not_a_tool_provider"},
		{"revoked", `{"tool_provider_overrides":{"nexus.memory":"` + gone.id + `"},"expected_lock_version":0}`, 422, "validation_failed", "tool_provider_overrides.nexus.memory", "executor_revoked"},
		{"not eligible", `{"tool_provider_overrides":{"nexus.memory":"` + ineligible.id + `"},"expected_lock_version":0}`, 422, "validation_failed", "tool_provider_overrides.nexus.memory", "not_eligible"},
		{"incomplete family", `{"tool_provider_overrides":{"nexus.memory":"` + partial.id + `"},"expected_lock_version":0}`, 422, "validation_failed", "tool_provider_overrides.nexus.memory", "incomplete_family"},
		{"stale", `{"tool_provider_overrides":{"nexus.memory":"` + fsID + `"},"expected_lock_version":3}`, 409, "stale_object", "", ""},
	}
	for _, c := range cases {
		code, body := put(p.srv.AdminToken, c.body)
		d := parse(body)
		if code != c.status || d.Error.Code != c.code || d.Error.Path != c.at || d.Error.Word != c.word {
			t.Errorf("%s: %d %s", c.name, code, body)
		}
		switch c.word {
		case "incomplete_family":
			if strings.Join(d.Error.Missing, ",") != "memory_grep,memory_write,memory_edit,memory_delete" {
				t.Errorf("incomplete family: missing %v", d.Error.Missing)
			}
		}
		if c.code == "stale_object" && (d.Error.CurrentLockVersion == nil || *d.Error.CurrentLockVersion != 0) {
			t.Errorf("stale: %s", body)
		}
	}
	// Nothing changed.
	code, _, body := p.raw(http.MethodGet, path, p.srv.AdminToken, nil, nil)
	if code != http.StatusOK || strings.TrimSpace(string(body)) != `{"tool_provider_overrides":{},"lock_version":0}` {
		t.Fatalf("after the refusals: %d %s", code, body)
	}
	// Standing: a member is not_authorized on both doors, an executor unauthorized.
	member, err := p.admin.CreateUser(p.ctx, "default", &client.CreateUserRequest{Handle: "max", DisplayName: "Max", Role: "member"})
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range []string{http.MethodGet, http.MethodPut} {
		if code, _, body := p.raw(m, path, member.Token, []byte(`{"tool_provider_overrides":{},"expected_lock_version":0}`), nil); code != 403 || errorCode(body) != "not_authorized" {
			t.Errorf("%s as a member: %d %s", m, code, body)
		}
		if code, _, body := p.raw(m, path, partial.token, []byte(`{}`), nil); code != 401 || errorCode(body) != "unauthorized" {
			t.Errorf("%s as an executor: %d %s", m, code, body)
		}
	}

	// An HTTP tool provider announcing the six names may be the target; a pre-dispatch refusal
	// fails the row at birth, and once the target is revoked the memory calls fail
	// tool_not_served: nothing falls back to the kernel's store.
	p.announce(full, tool("memory_ls", 0), tool("memory_read", 0), tool("memory_grep", 0), tool("memory_write", 0),
		tool("memory_edit", 0), tool("memory_delete", 0))
	lock := p.putOverride(full.id, 0)
	run := p.modelRun("mock/scripted", `Refused.
!mock
round 1
call memory_read {"path":"conversation/a.md"}
round 2
say done`, nil, memoryImports, "bypass", nil)
	tk := p.waitTask(run, "r2t0", "failed")
	if tk.Task.Error == nil || tk.Task.Error.Key != "memory_scope_unavailable" || tk.Task.Error.Detail != "conversation/a.md" {
		t.Fatalf("pre-dispatch refusal: %s", tk.Raw)
	}
	if _, err := p.admin.RevokeExecutor(p.ctx, full.id); err != nil {
		t.Fatal(err)
	}
	run = p.modelRun("mock/scripted", `Not served.
!mock
round 1
call memory_write {"path":"workspace/a.md","content":"x"}
round 2
say done`, nil, memoryImports, "bypass", nil)
	tk = p.waitTask(run, "r2t0", "failed")
	if tk.Task.Error == nil || tk.Task.Error.Key != "tool_not_served" ||
		tk.Task.Error.Detail != "executor "+full.id+" serving nexus.memory is revoked" {
		t.Fatalf("revoked target: %s", tk.Raw)
	}
	// A memory plugin's target check passes, and clearing works at the current version.
	lock = p.putOverride(fsID, lock)
	p.putOverride("", lock)
	// The member doors read kernel memory again: the refused write never reached it.
	code, _, body = p.raw(http.MethodGet, "/agent_api/v1/workspaces/default/memory", p.srv.AdminToken, nil, nil)
	if code != http.StatusOK || strings.Contains(string(body), "a.md") {
		t.Fatalf("the refused write reached kernel memory: %d %s", code, body)
	}
}

// nexusCLI runs the nexus command line (this test binary re-executed) against the server.
func (p *pluginServer) nexusCLI(args ...string) (string, error) {
	p.t.Helper()
	cmd := exec.Command(os.Args[0], append(args, "--server", p.srv.URL, "--token", p.srv.AdminToken)...)
	cmd.Env = append(os.Environ(), "NEXUS_TESTSERVER_HELPER=1")
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// TestPluginsCLI drives nexus plugins and nexus memory override against a running server.
func TestPluginsCLI(t *testing.T) {
	t.Parallel()
	p := startPlugins(t, store.SQLite, "")
	fsID := p.executorOf("memory-fs")
	out, err := p.nexusCLI("plugins", "status")
	if err != nil || !strings.Contains(out, "memory-fs") || !strings.Contains(out, "tools-example") || !strings.Contains(out, fsID) {
		t.Fatalf("plugins status: %v\n%s", err, out)
	}
	out, err = p.nexusCLI("plugins", "status", "ghost")
	if err == nil || !strings.Contains(out, "not_found (404)") {
		t.Fatalf("plugins status ghost: %v\n%s", err, out)
	}
	out, err = p.nexusCLI("memory", "override", "set", "--plugin", "memory-fs", "--workspace", "default")
	if err != nil || !strings.Contains(out, fsID) || !strings.Contains(out, "lock version  1") {
		t.Fatalf("override set: %v\n%s", err, out)
	}
	out, err = p.nexusCLI("memory", "override", "clear", "--workspace", "default")
	if err != nil || !strings.Contains(out, "kernel memory (no override)") || !strings.Contains(out, "lock version  2") {
		t.Fatalf("override clear: %v\n%s", err, out)
	}
	out, err = p.nexusCLI("plugins", "restart", "tools-example")
	if err != nil || !strings.Contains(out, "tools-example") {
		t.Fatalf("plugins restart: %v\n%s", err, out)
	}
	out, err = p.nexusCLI("plugins", "reload")
	if err != nil || !strings.Contains(out, "unchanged    memory-fs, tools-example") || !strings.Contains(out, "not applied  -\n") {
		t.Fatalf("plugins reload: %v\n%s", err, out)
	}
	// Blocks a reload does not apply are named, not passed over as "changed -".
	conf, err := os.ReadFile(p.srv.ConfigPath())
	if err != nil {
		t.Fatal(err)
	}
	extra := "\nmodel_provider \"lab\" {\n  type = \"mock\"\n}\nmodel \"lab/x\" {}\n"
	if err := os.WriteFile(p.srv.ConfigPath(), append(conf, extra...), 0o600); err != nil {
		t.Fatal(err)
	}
	out, err = p.nexusCLI("plugins", "reload")
	if err != nil || !strings.Contains(out, "changed      -\n") || !strings.Contains(out, "unchanged    memory-fs, tools-example") ||
		!strings.Contains(out, `not applied  model_provider "lab", model "lab/x" (changed in the file; they apply at the next restart)`) {
		t.Fatalf("plugins reload after a model block was added: %v\n%s", err, out)
	}
	if !strings.Contains(p.srv.Logs(), "reload: settings outside the plugin blocks changed; they apply at the next restart") {
		t.Fatalf("the server did not log the blocks it left for a restart:\n%s", p.srv.Logs())
	}
	bin := filepath.Join(pluginBinaries(t), "nexus-memory-fs")
	want, err := plugins.FileDigest(bin)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "plugins", "hash", bin)
	cmd.Env = append(os.Environ(), "NEXUS_TESTSERVER_HELPER=1")
	got, err := cmd.Output()
	if err != nil || strings.TrimSpace(string(got)) != want {
		t.Fatalf("plugins hash: %v %q, want %s", err, got, want)
	}
	cmd = exec.Command(os.Args[0], "plugins", "discover", "--plugin-dir", pluginBinaries(t))
	cmd.Env = append(os.Environ(), "NEXUS_TESTSERVER_HELPER=1")
	got, err = cmd.Output()
	found := false
	for _, line := range strings.Split(string(got), "\n") {
		fields := strings.Fields(line)
		found = found || (len(fields) == 2 && fields[0] == bin && fields[1] == want)
	}
	if err != nil || !found || !strings.Contains(string(got), "nexus-tools-example") {
		t.Fatalf("plugins discover: %v\n%s", err, got)
	}
}

// TestPluginExecutorRevokedByHand revokes a plugin's managed executor through the member route:
// its tools stop being served (tool_not_served), and restarting the plugin reactivates the
// executor under the same public id.
func TestPluginExecutorRevokedByHand(t *testing.T) {
	t.Parallel()
	p := startPlugins(t, store.SQLite, "")
	id := p.executorOf("tools-example")
	if _, err := p.admin.RevokeExecutor(p.ctx, id); err != nil {
		t.Fatal(err)
	}
	echo := func() *client.TaskResponse {
		run := p.modelRun("mock/scripted", `Echo.
!mock
round 1
call example_echo {"text":"x"}
round 2
say done`, []any{plain("example_echo")}, nil, "bypass", nil)
		return p.waitTask(run, "r2t0", "completed", "failed")
	}
	if tk := echo(); tk.Task.Error == nil || tk.Task.Error.Key != "tool_not_served" {
		t.Fatalf("a revoked plugin executor's tool: %s", tk.Raw)
	}
	code, _, body := p.raw(http.MethodPost, "/agent_api/v1/plugins/tools-example/restart", p.srv.AdminToken, nil, nil)
	if code != http.StatusOK {
		t.Fatalf("restart: %d %s", code, body)
	}
	ex, err := p.admin.Executor(p.ctx, id)
	if err != nil || ex.Executor.Status != "active" {
		t.Fatalf("after the restart: %v %s", err, ex.Raw)
	}
	if tk := echo(); deref(tk.Task.Output) != "x" {
		t.Fatalf("after the restart: %s", tk.Raw)
	}
}

// TestPluginServesSeveralWorkspaces runs memory-fs for every workspace: after a second workspace
// exists and the plugin restarts, each workspace has its own managed executor, each opts in with
// its own, and each run's documents land under its own workspace's anchor.
func TestPluginServesSeveralWorkspaces(t *testing.T) {
	t.Parallel()
	p := startPlugins(t, store.SQLite, "")
	defaultID := p.executorOf("memory-fs")
	ops, err := p.admin.CreateWorkspace(p.ctx, &client.CreateWorkspaceRequest{Handle: "ops", Name: "Ops"})
	if err != nil {
		t.Fatal(err)
	}
	if code, _, body := p.raw(http.MethodPost, "/agent_api/v1/plugins/memory-fs/restart", p.srv.AdminToken, nil, nil); code != http.StatusOK {
		t.Fatalf("restart: %d %s", code, body)
	}
	list, err := p.admin.Executors(p.ctx, &client.ListExecutorsRequest{Workspace: "ops", Kind: "tool_provider"})
	if err != nil {
		t.Fatal(err)
	}
	opsID := ""
	for _, e := range list.Executors {
		if e.DisplayName == "plugin memory-fs" {
			opsID = e.PublicID
		}
	}
	if opsID == "" || opsID == defaultID || p.executorOf("memory-fs") != defaultID {
		t.Fatalf("executors in ops: %s (default's %s)", list.Raw, defaultID)
	}
	p.putOverride(defaultID, 0)
	// The default workspace's executor is not one of ops's.
	body := `{"tool_provider_overrides":{"nexus.memory":"` + defaultID + `"},"expected_lock_version":0}`
	if code, _, out := p.raw(http.MethodPut, "/agent_api/v1/workspaces/ops/tool_provider_overrides", p.srv.AdminToken, []byte(body), nil); code != 422 || !strings.Contains(string(out), `"word":"unknown_executor"`) {
		t.Fatalf("another workspace's plugin executor: %d %s", code, out)
	}
	body = `{"tool_provider_overrides":{"nexus.memory":"` + opsID + `"},"expected_lock_version":0}`
	if code, _, out := p.raw(http.MethodPut, "/agent_api/v1/workspaces/ops/tool_provider_overrides", p.srv.AdminToken, []byte(body), nil); code != http.StatusOK {
		t.Fatalf("ops override: %d %s", code, out)
	}
	write := func(ws, content string) {
		created, err := p.admin.CreateRun(p.ctx, ws, memoryRun(`Write.
!mock
round 1
call memory_write {"path":"workspace/where.md","content":"`+content+`"}
round 2
say done`), "")
		if err != nil {
			t.Fatal(err)
		}
		deadline := time.Now().Add(30 * time.Second)
		for {
			r, err := p.admin.Run(p.ctx, ws, created.Run.PublicID)
			if err != nil {
				t.Fatal(err)
			}
			if r.Run.Status == "completed" {
				return
			}
			if time.Now().After(deadline) || r.Run.Status == "needs_attention" || r.Run.Status == "canceled" {
				t.Fatalf("run in %s: %s", ws, r.Raw)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	write("default", "in default")
	write("ops", "in ops")
	if got := fsDocuments(t, p.fsRoot, "workspace", p.workspaceID())["where.md"]; got != "in default" {
		t.Fatalf("default's anchor: %q", got)
	}
	if got := fsDocuments(t, p.fsRoot, "workspace", ops.Workspace.PublicID)["where.md"]; got != "in ops" {
		t.Fatalf("ops's anchor: %q", got)
	}
}

// TestPluginRemovedByReload removes memory-fs from the catalog while a workspace names it: the
// reload revokes its executor, so the workspace's memory calls fail tool_not_served (never
// falling back to kernel memory); putting the block back reactivates the same executor.
func TestPluginRemovedByReload(t *testing.T) {
	t.Parallel()
	p := startPlugins(t, store.SQLite, "")
	fsID := p.executorOf("memory-fs")
	p.putOverride(fsID, 0)
	path := p.srv.ConfigPath()
	full, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	start := strings.Index(string(full), `plugin "memory-fs"`)
	end := strings.Index(string(full), `plugin "tools-example"`)
	if start < 0 || end < start {
		t.Fatalf("configuration:\n%s", full)
	}
	if err := os.WriteFile(path, append(full[:start:start], full[end:]...), 0o600); err != nil {
		t.Fatal(err)
	}
	reload := func() plugins.ReloadReport {
		code, _, body := p.raw(http.MethodPost, "/agent_api/v1/plugins/reload", p.srv.AdminToken, nil, nil)
		var doc struct {
			Reload plugins.ReloadReport `json:"reload"`
		}
		if err := json.Unmarshal(body, &doc); err != nil || code != http.StatusOK {
			t.Fatalf("reload: %d %s", code, body)
		}
		return doc.Reload
	}
	if rep := reload(); strings.Join(rep.Removed, ",") != "memory-fs" {
		t.Fatalf("reload removed %v", rep.Removed)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		ex, err := p.admin.Executor(p.ctx, fsID)
		if err != nil {
			t.Fatal(err)
		}
		if ex.Executor.Status == "revoked" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the removed plugin's executor: %s", ex.Raw)
		}
		time.Sleep(20 * time.Millisecond)
	}
	run := p.modelRun("mock/scripted", `Write.
!mock
round 1
call memory_write {"path":"workspace/a.md","content":"x"}
round 2
say done`, nil, memoryImports, "bypass", nil)
	tk := p.waitTask(run, "r2t0", "failed", "completed")
	if tk.Task.Error == nil || tk.Task.Error.Key != "tool_not_served" || tk.Task.Error.Detail != "executor "+fsID+" serving nexus.memory is revoked" {
		t.Fatalf("a memory call to the removed plugin: %s", tk.Raw)
	}
	if err := os.WriteFile(path, full, 0o600); err != nil {
		t.Fatal(err)
	}
	if rep := reload(); strings.Join(rep.Added, ",") != "memory-fs" {
		t.Fatalf("reload added %v", rep.Added)
	}
	if got := p.waitPlugin("memory-fs", func(s plugins.Status) bool { return s.State == plugins.StateReady }); *got.ExecutorPublicID != fsID {
		t.Fatalf("the plugin came back as %s, not %s", *got.ExecutorPublicID, fsID)
	}
	run = p.modelRun("mock/scripted", `Write.
!mock
round 1
call memory_write {"path":"workspace/a.md","content":"x"}
round 2
say done`, nil, memoryImports, "bypass", nil)
	if tk := p.waitTask(run, "r2t0", "completed", "failed"); tk.Task.Status != "completed" {
		t.Fatalf("after the block came back: %s", tk.Raw)
	}
	if got := fsDocuments(t, p.fsRoot, "workspace", p.workspaceID())["a.md"]; got != "x" {
		t.Fatalf("memory-fs after the block came back: %q", got)
	}
}
