package mcpbridge

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nexuskernel/nexus/providers/mcp-bridge/mcpbridgetest"
	"github.com/nexuskernel/nexus/sdk/plugin"
	"github.com/nexuskernel/nexus/sdk/toolprovider"
	"github.com/nexuskernel/nexus/sdk/toolprovider/toolprovidertest"
)

const shortSupervision = `"supervision":{"backoff_initial":"100ms","backoff_max":"200ms","breaker_window":"1m"}`

// fixtureServer is a server entry that runs this test binary as the fixture.
func fixtureServer(t testing.TB, name, scenario string, extra map[string]string) string {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	env := map[string]string{mcpbridgetest.EnvScenario: scenario}
	for k, v := range extra {
		env[k] = v
	}
	e, _ := json.Marshal(env)
	c, _ := json.Marshal(exe)
	return fmt.Sprintf(`{"name":%q,"command":%s,"env":%s,"connect_timeout":"2s"}`, name, c, e)
}

func stdioBridge(t testing.TB, dataDir string, servers ...string) *Bridge {
	t.Helper()
	raw := `{` + shortSupervision + `,"servers":[` + strings.Join(servers, ",") + `]}`
	b, err := New(context.Background(), plugin.Config{PluginName: "mcp", DataDir: dataDir, Raw: json.RawMessage(raw)}, Options{ServerWait: 2 * time.Second})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() { b.Close() })
	return b
}

func TestStdioCrashIsALostAnswer(t *testing.T) {
	state := t.TempDir()
	b := stdioBridge(t, t.TempDir(), fixtureServer(t, "fx", "basic", map[string]string{mcpbridgetest.EnvState: state}))
	if r, err := call(t, b, "fx_echo", `{"message":"over stdio"}`); err != nil || texts(r)[0] != "over stdio" {
		t.Fatalf("echo: %v %v", texts(r), err)
	}
	before, _ := b.Announce(context.Background())
	start := time.Now()
	_, err := call(t, b, "fx_crash", `{}`)
	var lost *LostAnswerError
	if !errors.As(err, &lost) || lost.Server != "fx" || !errors.Is(err, toolprovider.ErrOutcomeUnknown) {
		t.Fatalf("crash: %v", err)
	}
	if time.Since(start) > 2*time.Second {
		t.Errorf("the lost answer took %s", time.Since(start))
	}
	_, err = call(t, b, "fx_crash_once", `{}`)
	if !errors.As(err, &lost) {
		t.Fatalf("crash_once attempt 1: %v", err)
	}
	r, err := call(t, b, "fx_crash_once", `{}`)
	if err != nil || texts(r)[0] != "survived" {
		t.Fatalf("crash_once attempt 2: %v %v", texts(r), err)
	}
	after, _ := b.Announce(context.Background())
	if len(after.Tools) != len(before.Tools) {
		t.Errorf("announcement changed across crashes: %d → %d tools", len(before.Tools), len(after.Tools))
	}
}

func TestStdioBreakerOpens(t *testing.T) {
	b := stdioBridge(t, t.TempDir(), fixtureServer(t, "fx", "basic", nil))
	rev := b.AnnouncementRevision()
	for i := 0; i < 5; i++ {
		if _, err := call(t, b, "fx_crash", `{}`); err == nil {
			t.Fatalf("crash %d answered", i+1)
		}
	}
	_, err := call(t, b, "fx_echo", `{"message":"x"}`)
	var fe *toolprovider.FailedError
	if !errors.As(err, &fe) || !strings.HasPrefix(fe.Detail, "mcp server fx is unavailable: circuit open until ") || !strings.HasSuffix(fe.Detail, " after 5 failures") {
		t.Fatalf("call during open: %v", err)
	}
	if b.AnnouncementRevision() != rev {
		t.Errorf("revision moved from %d to %d", rev, b.AnnouncementRevision())
	}
}

func TestStdioDeadServerAndTheCache(t *testing.T) {
	data := t.TempDir()
	flag := filepath.Join(t.TempDir(), "dead")
	entry := fixtureServer(t, "fx", "basic", map[string]string{mcpbridgetest.EnvExitIf: flag})
	first := stdioBridge(t, data, entry)
	a1, _ := first.Announce(context.Background())
	first.Close()
	if len(a1.Tools) == 0 {
		t.Fatal("no tools listed")
	}
	if st, err := os.Stat(cachePath(data, "fx")); err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("cache: %v", err)
	}
	body, _ := os.ReadFile(cachePath(data, "fx"))
	if strings.Contains(string(body), flag) {
		t.Error("the cache holds an env value")
	}
	if err := os.WriteFile(flag, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	// Same configuration, dead server: the cached tools are announced.
	cached := stdioBridge(t, data, entry)
	a2, _ := cached.Announce(context.Background())
	if len(a2.Tools) != len(a1.Tools) {
		t.Errorf("cached announcement has %d tools, want %d", len(a2.Tools), len(a1.Tools))
	}
	_, err := call(t, cached, "fx_echo", `{}`)
	var fe *toolprovider.FailedError
	if !errors.As(err, &fe) || !strings.HasPrefix(fe.Detail, "mcp server fx is unavailable: ") {
		t.Errorf("call to a dead server: %v", err)
	}
	cached.Close()
	// A changed configuration ignores the cache: a dead server contributes nothing.
	changed := stdioBridge(t, data, strings.Replace(entry, `"connect_timeout":"2s"`, `"connect_timeout":"1s"`, 1))
	a3, _ := changed.Announce(context.Background())
	if len(a3.Tools) != 0 {
		t.Errorf("stale cache used: %d tools", len(a3.Tools))
	}
	if _, err := call(t, changed, "fx_echo", `{}`); !errors.Is(err, toolprovider.ErrUnknownTool) {
		t.Errorf("call to a never-listed server: %v", err)
	}
	if st := changed.byName["fx"].describeState(); !strings.HasPrefix(st, "never connected: ") && !strings.HasPrefix(st, "circuit open") {
		t.Errorf("state %q", st)
	}
}

func TestStdioProtocolTrouble(t *testing.T) {
	b := stdioBridge(t, t.TempDir(),
		fixtureServer(t, "fxraw", "raw-bad-content", nil),
		fixtureServer(t, "fxg", "stdout-garbage", nil),
		fixtureServer(t, "fxdead", "exit-at-start", nil))
	a, _ := b.Announce(context.Background())
	if len(a.Tools) != 1 || a.Tools[0].Name != "fxraw_bad" {
		t.Fatalf("tools %v", a.Tools)
	}
	if !strings.Contains(string(a.Environment), `{"name":"fxraw","transport":"stdio","protocol_version":"2025-06-18"`) ||
		!strings.Contains(string(a.Environment), `{"name":"fxdead","transport":"stdio"}`) {
		t.Errorf("environment %s", a.Environment)
	}
	_, err := call(t, b, "fxraw_bad", `{}`)
	var fe *toolprovider.FailedError
	if !errors.As(err, &fe) || !strings.HasPrefix(fe.Detail, "mcp server fxraw sent a result that cannot be read: ") {
		t.Errorf("bad content: %v", err)
	}
	if r, err := call(t, b, "fxraw_bad", `{}`); err == nil {
		t.Errorf("second call answered %+v", r)
	}
}

func TestStdioEnvironmentIsExactly(t *testing.T) {
	t.Setenv("NEXUS_PLUGIN_NAME", "leak")
	t.Setenv("SECRET_OF_THE_BRIDGE", "leak")
	b := stdioBridge(t, t.TempDir(), fixtureServer(t, "fx", "basic", map[string]string{"GREETING": "hi"}))
	r, err := call(t, b, "fx_env", `{}`)
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, line := range strings.Split(texts(r)[0], "\n") {
		k, _, _ := strings.Cut(line, "=")
		keys = append(keys, k)
	}
	allowed := map[string]bool{"PATH": true, "HOME": true, "TMPDIR": true, "TZ": true, "LANG": true, "GREETING": true, mcpbridgetest.EnvScenario: true}
	for _, k := range keys {
		if !allowed[k] {
			t.Errorf("the server sees %s", k)
		}
	}
	if !sort.StringsAreSorted(keys) || !strings.Contains(texts(r)[0], "GREETING=hi") {
		t.Errorf("environment %q", texts(r)[0])
	}
}

func TestStdioCloseEndsTheProcessGroup(t *testing.T) {
	b := stdioBridge(t, t.TempDir(), fixtureServer(t, "fx", "basic", nil))
	s := b.byName["fx"]
	s.mu.Lock()
	pid := s.pid
	s.mu.Unlock()
	if pid == 0 {
		t.Fatal("no pid")
	}
	b.Close()
	deadline := time.Now().Add(3 * time.Second)
	for syscall.Kill(-pid, 0) == nil {
		if time.Now().After(deadline) {
			t.Fatal("the fixture's process group outlived Close by 3 s")
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func TestStdioSlowStart(t *testing.T) {
	entry := fixtureServer(t, "fx", "slow-start", map[string]string{mcpbridgetest.EnvState: t.TempDir(), mcpbridgetest.EnvDelay: "5s"})
	entry = strings.Replace(entry, `"connect_timeout":"2s"`, `"connect_timeout":"1s"`, 1)
	start := time.Now()
	b := stdioBridge(t, t.TempDir(), entry)
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("New took %s", d)
	}
	a, _ := b.Announce(context.Background())
	rev := b.AnnouncementRevision()
	if len(a.Tools) != 0 {
		t.Fatalf("%d tools before the server listed", len(a.Tools))
	}
	waitFor(t, func() bool { a, _ := b.Announce(context.Background()); return toolNamed(a, "fx_echo") != nil })
	// The list is stored before its revision is advanced (a host that reads the revision first
	// and the list after misses nothing), so the rise may come just after the tools appear.
	waitFor(t, func() bool { return b.AnnouncementRevision() > rev })
}

func TestStdioLostAnswerOverGRPC(t *testing.T) {
	b := stdioBridge(t, t.TempDir(), fixtureServer(t, "fx", "basic", nil))
	c := toolprovidertest.OverGRPC(t, b)
	_, err := c.Call(context.Background(), toolprovider.Call{Tool: "fx_crash", Input: json.RawMessage(`{}`)})
	if !errors.Is(err, toolprovider.ErrOutcomeUnknown) {
		t.Errorf("a lost answer over gRPC: %v", err)
	}
}

// A result over the bound on one message (16 MiB) fails its call, tool_failed saying the bound,
// and costs nothing else: the server is not restarted (its process serves on), the call is no
// lost answer (so never replayed), and the breaker counts nothing.
func TestStdioOversizeResultFailsTheCall(t *testing.T) {
	b := stdioBridge(t, t.TempDir(), fixtureServer(t, "fx", "raw-oversize", nil))
	if r, err := call(t, b, "fx_bad", `{}`); err != nil || texts(r)[0] != "fine" {
		t.Fatalf("first call: %v %v", texts(r), err)
	}
	s := b.servers[0]
	s.mu.Lock()
	pid := s.pid
	s.mu.Unlock()
	_, err := call(t, b, "fx_huge", `{}`)
	var fe *toolprovider.FailedError
	if !errors.As(err, &fe) || fe.Detail != oversizeMessage("fx") || errors.Is(err, toolprovider.ErrOutcomeUnknown) {
		t.Fatalf("an oversize result: %v, want tool_failed %q", err, oversizeMessage("fx"))
	}
	if r, err := call(t, b, "fx_bad", `{}`); err != nil || texts(r)[0] != "fine" {
		t.Fatalf("the next call: %v %v", texts(r), err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.pid != pid || len(s.failures) != 0 || s.state != stateReady {
		t.Errorf("the server after an oversize result: pid %d (was %d), %d failures, state %v", s.pid, pid, len(s.failures), s.state)
	}
}

// The id scanner finds a message's top-level id however it is split, and whether it is a
// request of the server's.
func TestIDScanner(t *testing.T) {
	for _, c := range []struct {
		msg, id string
		method  bool
	}{
		{`{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"x"}]}}`, `7`, false},
		{`{"result":{"id":1,"text":"\"id\":9"},"jsonrpc":"2.0","id":"abc\"d"}`, `"abc\"d"`, false},
		{`{"jsonrpc":"2.0","method":"sampling/createMessage","id":3,"params":{}}`, `3`, true},
		{`{"jsonrpc":"2.0","method":"notifications/progress","params":{"id":4}}`, ``, true},
		{`{ "id" : 12 , "result" : {} }`, `12`, false},
		{`{"result":{"text":"ends in a backslash\\","more":"\"id\":1"},"id":5}`, `5`, false},
	} {
		for split := 0; split <= len(c.msg); split++ {
			var s idScanner
			s.feed([]byte(c.msg[:split]))
			s.feed([]byte(c.msg[split:]))
			if string(s.id) != c.id || s.method != c.method {
				t.Fatalf("%s split at %d: id %s method %v, want %s %v", c.msg, split, s.id, s.method, c.id, c.method)
			}
		}
	}
}
