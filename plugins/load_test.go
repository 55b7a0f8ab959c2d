package plugins

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/nexuskernel/nexus/sdk/announce"
	"github.com/nexuskernel/nexus/sdk/memory"
	"github.com/nexuskernel/nexus/sdk/plugin"
)

func TestToolsExampleServesRows(t *testing.T) {
	t.Parallel()
	e := scenarioEntry(t, "tools-example", plugin.KindToolProvider, "tools-example")
	e.Workspaces = []string{"default"}
	th := startHost(t, e)
	st := th.waitState(t, "tools-example", StateReady, 10*time.Second)
	id := th.executor(t, "tools-example")
	if diff := cmp.Diff([]string{"example_control", "example_echo", "example_report", "example_stats"}, st.Tools); diff != "" {
		t.Errorf("status tools: %s", diff)
	}
	if st.Info == nil || st.Info.Name != "test-tools-example" || st.Info.ProtocolVersions[0] != 1 || st.PID == nil || st.SHA256 == "" || st.ChecksumPinned {
		t.Errorf("status: %+v", st)
	}
	th.plane.mu.Lock()
	m := th.plane.managed[id]
	th.plane.mu.Unlock()
	if m.RegistrationKey != "plugin:tools-example" || m.DisplayName != "plugin tools-example" || m.ManagedBy["plugin"] != "tools-example" || m.Workspaces[0] != "default" {
		t.Errorf("managed executor: %+v", m)
	}
	a, _ := th.plane.lastAnnouncement(id)
	if r := announce.ValidatePlugin("tool_provider", a); r != nil || len(a.Documents) != 1 || string(a.Environment) != `{"deterministic":true,"provider":"tools-example"}` {
		t.Errorf("announcement: %+v (%v)", a, r)
	}

	pure := &announce.EffectPure
	th.plane.push(id, toolClaim("echo", "example_echo", `{"text":"hi","repeat":2}`, pure))
	th.plane.push(id, toolClaim("stats", "example_stats", `{"numbers":[1,2]}`, pure))
	th.plane.push(id, toolClaim("report", "example_report", `{"title":"Q","rows":[{"name":"a","value":1}]}`, pure))
	th.plane.push(id, toolClaim("failed", "example_control", `{"mode":"failed"}`, &announce.EffectWrite))
	th.plane.push(id, toolClaim("error", "example_control", `{"mode":"error"}`, &announce.EffectWrite))
	th.plane.push(id, toolClaim("unknown", "example_nope", `{}`, pure))
	th.plane.await(t, 10*time.Second, "six commits", func() bool { return len(th.plane.commits) == 6 })

	echo := th.plane.commitsFor("echo")[0]
	if text(t, echo) != "hi\nhi" || *echo.Title != "echo (2×)" || string(echo.StructuredContent) != `{"text":"hi\nhi","repeat":2,"length":5}` || echo.Outcome != OutcomeCompleted {
		t.Errorf("echo: %+v", echo)
	}
	stats := th.plane.commitsFor("stats")[0]
	if stats.Blocks != nil || stats.Text != "" || string(stats.StructuredContent) != `{"count":2,"sum":3,"min":1,"max":2,"mean":1.5}` {
		t.Errorf("stats is structure only: %+v", stats)
	}
	report := th.plane.commitsFor("report")[0]
	blocks := report.Blocks
	if len(blocks) != 2 || blocks[0].Text == nil || blocks[1].Link == nil {
		t.Fatalf("report content %+v", blocks)
	}
	upload, linked := strings.CutPrefix(blocks[1].Link.URI, "nexus://uploads/")
	if !linked {
		t.Fatalf("report link %q names no upload", blocks[1].Link.URI)
	}
	th.plane.mu.Lock()
	staged := th.plane.staged[upload]
	th.plane.mu.Unlock()
	if string(staged.data) != "name,value\na,1\n" || staged.filename != "report.csv" || staged.executor != id {
		t.Errorf("staged capture: %+v", staged)
	}
	if *blocks[0].Text != "Report Q: 1 rows." || blocks[1].Link.Name != "report.csv" || blocks[1].Link.Size != 15 {
		t.Errorf("report blocks: %+v %+v", *blocks[0].Text, *blocks[1].Link)
	}
	if f := th.plane.commitsFor("failed")[0]; f.Outcome != OutcomeFailed || f.FailureDetail != "example failure requested" {
		t.Errorf("failed: %+v", f)
	}
	if e := th.plane.commitsFor("error")[0]; !e.IsError || text(t, e) != "example failure requested" {
		t.Errorf("error: %+v", e)
	}
	if u := th.plane.commitsFor("unknown")[0]; u.Outcome != OutcomeFailed || u.FailureDetail != "plugin tools-example does not serve example_nope" {
		t.Errorf("unknown tool: %+v", u)
	}
	// The host counts a call once its commit has returned, just after the plane recorded it.
	want := CallCounts{Completed: 4, Errors: 1, Failed: 2}
	th.plane.await(t, 10*time.Second, "the call counts", func() bool {
		st := th.status(t, "tools-example")
		return st.Calls == want && st.InFlight == 0
	})
}

func TestMemoryPluginServesRows(t *testing.T) {
	t.Parallel()
	e := scenarioEntry(t, "memory-main", plugin.KindMemory, "memory-inmem")
	e.Timeout = 12 * time.Second
	th := startHost(t, e)
	th.waitState(t, "memory-main", StateReady, 10*time.Second)
	id := th.executor(t, "memory-main")
	a, _ := th.plane.lastAnnouncement(id)
	want := memory.KernelAnnouncement(12 * time.Second).Normalize()
	if diff := cmp.Diff(want, a); diff != "" {
		t.Errorf("a memory plugin's announcement is the kernel's (-want +got):\n%s", diff)
	}
	th.plane.push(id, memoryClaim("w", "memory_write", `{"path":"workspace/notes.md","content":"héllo"}`))
	th.plane.await(t, 10*time.Second, "the write", func() bool { return len(th.plane.commits) == 1 })
	th.plane.push(id, memoryClaim("r", "memory_read", `{"path":"workspace/notes.md"}`))
	th.plane.push(id, memoryClaim("m", "memory_read", `{"path":"workspace/missing.md"}`))
	th.plane.push(id, memoryClaim("s", "memory_write", `{"path":"workspace/skills/x","content":"a"}`))
	th.plane.await(t, 10*time.Second, "four commits", func() bool { return len(th.plane.commits) == 4 })
	for task, want := range map[string]struct {
		text, title string
		isError     bool
	}{
		"w": {"Wrote workspace/notes.md (6 bytes).", "wrote workspace/notes.md", false},
		"r": {"héllo", "read workspace/notes.md", false},
		"m": {"memory_not_found: workspace/missing.md", "memory refused", true},
		"s": {"memory_reserved_prefix: workspace/skills/x", "memory refused", true},
	} {
		got := th.plane.commitsFor(task)[0]
		if text(t, got) != want.text || *got.Title != want.title || got.IsError != want.isError {
			t.Errorf("%s: %q %q %v, want %+v", task, text(t, got), *got.Title, got.IsError, want)
		}
	}
}

// TestLoadRefusals: each load-refusal word with its name and its log line
// (docs/plugins.md#what-the-host-checks).
func TestLoadRefusals(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		scenario string
		kind     plugin.Kind
		mutate   func(*Entry)
		code     string
		name     string
		path     string
		state    State
	}{
		{"tools-example", plugin.KindToolProvider, func(e *Entry) { e.Command = "nexus-no-such-plugin" }, CodeCommandNotFound, "", "", StateRefused},
		{"tools-example", plugin.KindToolProvider, func(e *Entry) { e.SHA256 = strings.Repeat("0", 64) }, CodeChecksumMismatch, "", "", StateRefused},
		{"protocol-2", plugin.KindToolProvider, nil, CodeProtocolUnsupported, "", "", StateRefused},
		{"wrong-kind", plugin.KindMemory, nil, CodeKindMismatch, "", "", StateRefused},
		{"configure-invalid", plugin.KindToolProvider, nil, CodeConfigRefused, "", "", StateRefused},
		{"reserved-name", plugin.KindToolProvider, nil, CodeReservedNamespace, "delegate_task", "tools[1].name", StateRefused},
		{"kernel-name", plugin.KindToolProvider, nil, CodeInvalidAnnouncement, "skill", "tools[1].name", StateRefused},
		{"memory-seven-tools", plugin.KindMemory, nil, CodeInvalidAnnouncement, "memory_export", "tools[6].name", StateRefused},
		{"tools-example", plugin.KindMemory, nil, CodeKindMismatch, "", "", StateRefused},
		{"too-many-tools", plugin.KindToolProvider, nil, CodeValidationFailed, "", "tools", StateRefused},
	} {
		t.Run(c.code+"/"+c.scenario, func(t *testing.T) {
			t.Parallel()
			e := scenarioEntry(t, "p-"+c.scenario, c.kind, c.scenario)
			if c.mutate != nil {
				c.mutate(&e)
			}
			th := startHost(t, e)
			st := th.waitState(t, e.Name, c.state, 15*time.Second)
			if st.Refusal == nil || st.Refusal.Code != c.code || st.Refusal.Name != c.name || st.Refusal.Path != c.path {
				t.Fatalf("refusal %+v, want code %s name %q path %q", st.Refusal, c.code, c.name, c.path)
			}
			if st.PID != nil {
				t.Errorf("a refused plugin has a pid: %d", *st.PID)
			}
			line := "plugin refused: plugin=" + e.Name + " code=" + c.code
			if c.name != "" {
				line += " name=" + c.name
			}
			if logs := th.logs.String(); !strings.Contains(logs, "[ERROR] nexus.plugins: "+line) {
				t.Errorf("no log line %q in:\n%s", line, logs)
			}
			// Deterministic refusals are not retried until a reload.
			time.Sleep(100 * time.Millisecond)
			if again := th.status(t, e.Name); again.Generation != st.Generation {
				t.Errorf("retried: generation %d → %d", st.Generation, again.Generation)
			}
		})
	}
}

// TestStartFailuresRetry: a failed handshake or an unavailable dependency is retried with
// backoff, its word in last_error.
func TestStartFailuresRetry(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ scenario, code string }{
		{"bad-cookie", CodeHandshakeFailed},
		{"stdout-noise", CodeHandshakeFailed},
		{"configure-unavailable", CodeStartFailed},
	} {
		t.Run(c.scenario, func(t *testing.T) {
			t.Parallel()
			e := scenarioEntry(t, "p-"+c.scenario, plugin.KindToolProvider, c.scenario)
			th := startHost(t, e)
			end := time.Now().Add(15 * time.Second)
			for th.status(t, e.Name).Restarts < 2 && time.Now().Before(end) {
				time.Sleep(10 * time.Millisecond)
			}
			st := th.status(t, e.Name)
			if st.Restarts < 2 || st.Refusal != nil || !strings.HasPrefix(deref(st.LastError), c.code+": ") {
				t.Errorf("status %+v, want retries with last_error %s", st, c.code)
			}
			if logs := th.logs.String(); !strings.Contains(logs, "plugin start failed: plugin="+e.Name+" code="+c.code) {
				t.Errorf("no start-failure log line for %s", c.code)
			}
		})
	}
}

func TestPanicInHandler(t *testing.T) {
	t.Parallel()
	e := scenarioEntry(t, "panicky", plugin.KindToolProvider, "panic-in-handler")
	th := startHost(t, e)
	st := th.waitState(t, "panicky", StateReady, 10*time.Second)
	id := th.executor(t, "panicky")
	th.plane.push(id, toolClaim("boom", "boom", `{}`, &announce.EffectPure))
	th.plane.await(t, 10*time.Second, "the panic's commit", func() bool { return len(th.plane.commits) == 1 })
	if got := th.plane.commitsFor("boom")[0]; got.Outcome != OutcomeFailed || got.FailureDetail != "internal: handler panic: handler bug" {
		t.Errorf("panic committed as %+v", got)
	}
	th.plane.push(id, toolClaim("after", "echo", `{"a":1}`, &announce.EffectPure))
	th.plane.await(t, 10*time.Second, "a call after the panic", func() bool { return len(th.plane.commits) == 2 })
	if after := th.status(t, "panicky"); *after.PID != *st.PID || after.Generation != st.Generation {
		t.Errorf("the plugin died of one handler's panic: %+v", after)
	}
}

func TestOversizedCapture(t *testing.T) {
	t.Parallel()
	th := startHost(t, scenarioEntry(t, "big", plugin.KindToolProvider, "oversized-capture"))
	th.waitState(t, "big", StateReady, 10*time.Second)
	th.plane.push(th.executor(t, "big"), toolClaim("big", "big", `{}`, &announce.EffectPure))
	th.plane.await(t, 10*time.Second, "the commit", func() bool { return len(th.plane.commits) == 1 })
	if got := th.plane.commitsFor("big")[0]; got.Outcome != OutcomeFailed || got.FailureDetail != "captures over the bound: at most 16 files and 8 MiB" {
		t.Errorf("oversized capture committed as %+v", got)
	}
	th.plane.mu.Lock()
	defer th.plane.mu.Unlock()
	if len(th.plane.staged) != 0 {
		t.Errorf("staged %d captures over the bound", len(th.plane.staged))
	}
}

// TestEnvironment: the plugin does not inherit the host's environment.
func TestEnvironment(t *testing.T) {
	t.Setenv("NEXUS_BOOTSTRAP_TOKEN", "secret-of-the-host")
	e := scenarioEntry(t, "env", plugin.KindToolProvider, "env")
	e.Env["GOMAXPROCS"] = "2"
	th := startHost(t, e)
	th.waitState(t, "env", StateReady, 10*time.Second)
	th.plane.push(th.executor(t, "env"), toolClaim("env", "env", `{}`, &announce.EffectPure))
	th.plane.await(t, 10*time.Second, "the commit", func() bool { return len(th.plane.commits) == 1 })
	got := text(t, th.plane.commitsFor("env")[0])
	if strings.Contains(got, "secret-of-the-host") || strings.Contains(got, "NEXUS_BOOTSTRAP_TOKEN") {
		t.Errorf("a host secret reached the plugin: %s", got)
	}
	for _, want := range []string{"NEXUS_PLUGIN_NAME=env", "GOMAXPROCS=2", "PATH="} {
		if !strings.Contains(got, want) {
			t.Errorf("plugin environment lacks %s: %s", want, got)
		}
	}
	wd, _ := os.Getwd()
	if strings.Contains(got, "PWD="+wd) {
		t.Errorf("the plugin runs in the host's directory")
	}
}
