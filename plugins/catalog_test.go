package plugins

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/hashicorp/hcl/v2/hclparse"

	"github.com/nexuskernel/nexus/sdk/plugin"
)

func decode(t *testing.T, src string) (*Catalog, error) {
	t.Helper()
	f, diags := hclparse.NewParser().ParseHCL([]byte(src), "nexus.hcl")
	if diags.HasErrors() {
		return nil, configError("nexus.hcl", diags)
	}
	cat, rest, diags := DecodeCatalog(f.Body, "/etc/nexus")
	if diags.HasErrors() {
		return nil, configError("nexus.hcl", diags)
	}
	if rest == nil {
		t.Fatal("no rest body for other readers")
	}
	return cat, nil
}

// blk writes a plugin block, one attribute a line.
func blk(name string, attrs ...string) string {
	return "plugin \"" + name + "\" {\n  " + strings.Join(attrs, "\n  ") + "\n}\n"
}

func TestDecodeCatalog(t *testing.T) {
	t.Setenv("NEXUS_MEMORY_PG_DSN", "postgres://nexus@db/nexus")
	cat, err := decode(t, `
plugin "memory-fs" {
  kind    = "memory"
  command = "nexus-memory-fs"
  args    = ["-v"]
  sha256  = "3b1f0c0000000000000000000000000000000000000000000000000000000e9f"
  env     = { GOMAXPROCS = "2" }
  config  = {
    root  = "/var/lib/nexus/memory-fs"
    fsync = true
  }
  timeout_ms      = 10000
  max_concurrency = 4
  health_interval = "2s"
  start_timeout   = "10s"
}

plugin "memory-pg" {
  kind    = "memory"
  command = "nexus-memory-postgres"
  config  = { dsn = env("NEXUS_MEMORY_PG_DSN"), schema = "nexus_memory" }
}

plugin "tools-example" {
  kind       = "tool_provider"
  command    = "./bin/nexus-tools-example"
  workspaces = ["default"]
  enabled    = false
}
`)
	if err != nil {
		t.Fatal(err)
	}
	want := []Entry{{
		Name: "memory-fs", Kind: plugin.KindMemory, Command: "nexus-memory-fs", Args: []string{"-v"},
		SHA256: "3b1f0c0000000000000000000000000000000000000000000000000000000e9f", Env: map[string]string{"GOMAXPROCS": "2"},
		Config: json.RawMessage(`{"fsync":true,"root":"/var/lib/nexus/memory-fs"}`), Timeout: 10 * time.Second,
		MaxConcurrency: 4, HealthInterval: 2 * time.Second, StartTimeout: 10 * time.Second, Enabled: true, ConfigDir: "/etc/nexus",
	}, {
		Name: "memory-pg", Kind: plugin.KindMemory, Command: "nexus-memory-postgres",
		Config:         json.RawMessage(`{"dsn":"postgres://nexus@db/nexus","schema":"nexus_memory"}`),
		MaxConcurrency: 8, HealthInterval: 5 * time.Second, StartTimeout: 30 * time.Second, Enabled: true, ConfigDir: "/etc/nexus",
	}, {
		Name: "tools-example", Kind: plugin.KindToolProvider, Command: "./bin/nexus-tools-example", Workspaces: []string{"default"},
		Config: json.RawMessage(`{}`), MaxConcurrency: 8, HealthInterval: 5 * time.Second, StartTimeout: 30 * time.Second, ConfigDir: "/etc/nexus",
	}}
	if diff := cmp.Diff(want, cat.Entries); diff != "" {
		t.Error(diff)
	}
}

// TestCatalogRefusals: every bad block is refused with the file and the line of the block.
func TestCatalogRefusals(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ name, src, want string }{
		{"bad name", blk("Memory_FS", `kind = "memory"`, `command = "x"`), "must match"},
		{"bad kind", blk("a", `kind = "runner"`, `command = "x"`), `kind "runner" is not memory or tool_provider`},
		{"no command", blk("a", `kind = "memory"`), `"command" is required`},
		{"empty command", blk("a", `kind = "memory"`, `command = ""`), "command is empty"},
		{"bad sha256", blk("a", `kind = "memory"`, `command = "x"`, `sha256 = "ABC"`), "64 lowercase hex"},
		{"config not object", blk("a", `kind = "memory"`, `command = "x"`, `config = "x"`), "config must be an object"},
		{"timeout on a tool provider", blk("a", `kind = "tool_provider"`, `command = "x"`, `timeout_ms = 5`), "memory kind only"},
		{"zero concurrency", blk("a", `kind = "memory"`, `command = "x"`, `max_concurrency = 0`), "max_concurrency"},
		{"bad duration", blk("a", `kind = "memory"`, `command = "x"`, `health_interval = "often"`), "health_interval"},
		{"unknown attribute", blk("a", `kind = "memory"`, `command = "x"`, `colour = "red"`), "Unsupported argument"},
		{"duplicate", blk("a", `kind = "memory"`, `command = "x"`) + blk("a", `kind = "memory"`, `command = "y"`), "declared twice"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			_, err := decode(t, c.src)
			var ce *ConfigError
			if !errors.As(err, &ce) || !strings.Contains(ce.Message, c.want) || ce.File != "nexus.hcl" || ce.Line < 1 {
				t.Errorf("got %#v, want a ConfigError with %q and a line", err, c.want)
			}
		})
	}
	// The line is the offending block's.
	_, err := decode(t, blk("ok", `kind = "memory"`, `command = "x"`)+blk("bad", `kind = "x"`, `command = "x"`))
	var ce *ConfigError
	if !errors.As(err, &ce) || ce.Line != 5 {
		t.Errorf("line of the bad block: %+v", err)
	}
}

func TestParseCatalogFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "nexus.hcl")
	if err := os.WriteFile(path, []byte("listen = \"127.0.0.1:1\"\nplugin \"a\" {\n  kind = \"memory\"\n  command = \"x\"\n}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cat, err := ParseCatalogFile(path)
	if err != nil || len(cat.Entries) != 1 || cat.Entries[0].ConfigDir != dir {
		t.Fatalf("%+v %v", cat, err)
	}
	if err := os.WriteFile(path, []byte("plugin \"a\" {\n  kind = \"memory\"\n  command = \n}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err = ParseCatalogFile(path)
	var ce *ConfigError
	if !errors.As(err, &ce) || ce.Line != 3 || ce.File != path {
		t.Errorf("syntax error: %#v", err)
	}
}

func TestResolve(t *testing.T) {
	t.Parallel()
	flagDir, cfgDir, exeDir, confDir := t.TempDir(), t.TempDir(), t.TempDir(), t.TempDir()
	write := func(dir, name string, mode os.FileMode) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte("#!/bin/sh\n"), mode); err != nil {
			t.Fatal(err)
		}
		return p
	}
	inFlag := write(flagDir, "nexus-a", 0o755)
	write(cfgDir, "nexus-a", 0o755)
	inCfg := write(cfgDir, "nexus-b", 0o755)
	inExe := write(exeDir, "nexus-c", 0o755)
	write(flagDir, "nexus-noexec", 0o644)
	rel := write(confDir, "local-plugin", 0o755)
	r := Resolver{FlagDirs: []string{flagDir}, ConfigDirs: []string{cfgDir}, ExecutableDir: exeDir}
	for _, c := range []struct{ command, want string }{
		{"nexus-a", inFlag}, {"nexus-b", inCfg}, {"nexus-c", inExe}, {inCfg, inCfg}, {"./local-plugin", rel},
	} {
		got, refusal := r.Resolve(Entry{Name: "p", Command: c.command, ConfigDir: confDir})
		if refusal != nil || got != c.want {
			t.Errorf("%s: %q %v, want %q", c.command, got, refusal, c.want)
		}
	}
	for _, cmd := range []string{"nexus-noexec", "nexus-missing", filepath.Join(flagDir, "nope"), "./missing", "sh"} {
		_, refusal := r.Resolve(Entry{Name: "p", Command: cmd, ConfigDir: confDir})
		if refusal == nil || refusal.Code != CodeCommandNotFound {
			t.Errorf("%s resolved: %v", cmd, refusal)
		}
	}
	_, refusal := r.Resolve(Entry{Name: "p", Command: "nexus-missing"})
	for _, d := range []string{flagDir, cfgDir, exeDir} {
		if !strings.Contains(refusal.Message, d) {
			t.Errorf("the refusal does not name %s: %s", d, refusal.Message)
		}
	}
	found := Discover([]string{flagDir, cfgDir})
	if len(found) != 3 || found[0].Path != inFlag || len(found[0].SHA256) != 64 {
		t.Errorf("discover: %+v", found)
	}
}

func TestBreaker(t *testing.T) {
	t.Parallel()
	tm := Timings{BackoffBase: time.Second, BackoffMax: time.Minute, Jitter: 0.2, BreakerThreshold: 5, BreakerWindow: 10 * time.Minute,
		BreakerCooldown: 10 * time.Minute, BreakerMaxCooldown: time.Hour}
	b := newBreaker(tm)
	now := time.Unix(1_000_000, 0)
	for i, want := range []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second} {
		if b.failure(now) {
			t.Fatalf("opened after %d failures", i+1)
		}
		d := b.delay()
		if d < want*8/10 || d > want*12/10 {
			t.Errorf("delay %d: %v, want %v ±20%%", i+1, d, want)
		}
	}
	if !b.failure(now) || !b.open(now) || b.state(now) != BreakerOpen {
		t.Fatal("five failures within the window must open the breaker")
	}
	// After the cooldown: one trial; a failure reopens with the cooldown doubled.
	later := now.Add(10 * time.Minute)
	if b.open(later) || b.state(later) != BreakerHalfOpen {
		t.Fatal("the cooldown passed: a trial is allowed")
	}
	if !b.failure(later) || b.openUntil != later.Add(20*time.Minute) {
		t.Errorf("failed trial: open until %v", b.openUntil)
	}
	if b.open(later.Add(20*time.Minute)) || !b.ready() || b.state(later.Add(time.Hour)) != BreakerClosed {
		t.Error("a successful trial closes the breaker")
	}
	// Failures spread past the window do not open it; the cap holds.
	b.reset()
	for i := range 10 {
		if b.failure(now.Add(time.Duration(i) * 11 * time.Minute)) {
			t.Fatal("failures outside the window opened the breaker")
		}
	}
	if d := b.delay(); d > 72*time.Second {
		t.Errorf("delay past the cap: %v", d)
	}
	b.servedLong()
	if d := b.delay(); d > 1200*time.Millisecond {
		t.Errorf("a long ready spell resets the backoff: %v", d)
	}
}
