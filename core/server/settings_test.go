package server

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/nexuskernel/nexus/core/model"
)

func TestResolveDefaults(t *testing.T) {
	t.Parallel()
	s, err := Resolve()
	if err != nil {
		t.Fatal(err)
	}
	want := Settings{Listen: "127.0.0.1:7400", DataDir: "./nexus-data", LogLevel: "info", LogFormat: "text"}
	if diff := cmp.Diff(want, s, cmpopts.IgnoreUnexported(Settings{})); diff != "" {
		t.Fatal(diff)
	}
	if got := s.Database(); got != filepath.Join("nexus-data", "nexus.db") {
		t.Errorf("default database = %q", got)
	}
}

func TestResolvePrecedence(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	file := filepath.Join(dir, "nexus.hcl")
	if err := os.WriteFile(file, []byte(`
listen       = "127.0.0.1:1111"
data_dir     = "data"
database_url = "postgres://file/db"
plugin_dirs  = ["plugins", "/abs/plugins"]
log_level    = "debug"
log_format   = "json"
`), 0o600); err != nil {
		t.Fatal(err)
	}
	fl, err := FileLayer(file)
	if err != nil {
		t.Fatal(err)
	}
	env := EnvLayer(func(k string) string {
		return map[string]string{EnvListen: "127.0.0.1:2222", EnvLogLevel: "warn", EnvPluginDir: "/e1" + string(os.PathListSeparator) + "/e2"}[k]
	})
	flagListen := "127.0.0.1:3333"
	flags := Layer{Listen: &flagListen}

	s, err := Resolve(fl, env, flags)
	if err != nil {
		t.Fatal(err)
	}
	want := Settings{
		Listen:      "127.0.0.1:3333",           // flag beats env and file
		DataDir:     filepath.Join(dir, "data"), // file, relative to the file
		DatabaseURL: "postgres://file/db",       // file
		ConfigFile:  file,                       // the file a reload reads again
		PluginDirs:  []string{"/e1", "/e2"},     // env comes first
		// the file's plugin_dirs are searched after them
		FilePluginDirs: []string{filepath.Join(dir, "plugins"), "/abs/plugins"},
		LogLevel:       "warn", // env beats file
		LogFormat:      "json", // file beats default
	}
	// The file's layer, kept for a reload to compare (notApplied), is TestNotApplied's.
	if diff := cmp.Diff(want, s, cmpopts.IgnoreUnexported(Settings{})); diff != "" {
		t.Fatal(diff)
	}
	// Without the flag, the environment wins; without both, the file.
	s, _ = Resolve(fl, env)
	if s.Listen != "127.0.0.1:2222" {
		t.Errorf("env listen: got %q", s.Listen)
	}
	s, _ = Resolve(fl)
	if s.Listen != "127.0.0.1:1111" || s.LogLevel != "debug" {
		t.Errorf("file: got %+v", s)
	}
	if fl.FilePluginDirs[0] != filepath.Join(dir, "plugins") || fl.FilePluginDirs[1] != "/abs/plugins" {
		t.Errorf("file plugin dirs = %v", fl.FilePluginDirs)
	}
}

func TestResolveRefusesBadValues(t *testing.T) {
	t.Parallel()
	bad := "loud"
	fmtBad := "xml"
	empty := ""
	_, err := Resolve(Layer{LogLevel: &bad, LogFormat: &fmtBad, Listen: &empty})
	if err == nil {
		t.Fatal("want an error")
	}
	for _, want := range []string{`log_level "loud"`, `log_format "xml"`, "listen is empty"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %s", err, want)
		}
	}
}

func TestFileLayerRefusesUnknownSettings(t *testing.T) {
	t.Parallel()
	file := filepath.Join(t.TempDir(), "nexus.hcl")
	if err := os.WriteFile(file, []byte("lisen = \"x\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := FileLayer(file)
	if err == nil || !strings.Contains(err.Error(), "lisen") || !strings.Contains(err.Error(), "nexus.hcl:1") {
		t.Fatalf("got %v, want an error naming the attribute and its position", err)
	}
	if err := os.WriteFile(file, []byte("listen = \n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := FileLayer(file); err == nil {
		t.Fatal("a syntax error was accepted")
	}
}

func TestFileLayerReadsTheModelsCatalog(t *testing.T) {
	t.Parallel()
	file := filepath.Join(t.TempDir(), "nexus.hcl")
	if err := os.WriteFile(file, []byte(`
listen        = "127.0.0.1:1111"
default_model = "lab/small"

model_provider "lab" {
  type = "mock"
}

model "lab/small" {
  display_name = "Small"
  capabilities {
    tools = true
  }
}
`), 0o600); err != nil {
		t.Fatal(err)
	}
	fl, err := FileLayer(file)
	if err != nil {
		t.Fatal(err)
	}
	s, err := Resolve(fl)
	if err != nil {
		t.Fatal(err)
	}
	if s.Listen != "127.0.0.1:1111" {
		t.Errorf("listen = %q", s.Listen)
	}
	want := &model.Config{
		DefaultModel: "lab/small",
		Providers:    []model.ProviderConfig{{Name: "lab", Type: "mock"}},
		Models: []model.Model{{Ref: "lab/small", Provider: "lab", Name: "small", DisplayName: "Small",
			Capabilities: model.Capabilities{Tools: true}}},
	}
	if diff := cmp.Diff(want, s.Models); diff != "" {
		t.Error(diff)
	}
}

func TestFileLayerReadsThePluginCatalog(t *testing.T) {
	t.Setenv("NEXUS_TEST_PG_DSN", "postgres://nexus@db/nexus")
	dir := t.TempDir()
	file := filepath.Join(dir, "nexus.hcl")
	if err := os.WriteFile(file, []byte(`
plugin_dirs = ["plugins"]

model_provider "lab" {
  type = "mock"
}

plugin "memory-pg" {
  kind    = "memory"
  command = "nexus-memory-postgres"
  config  = { dsn = env("NEXUS_TEST_PG_DSN") }
}
`), 0o600); err != nil {
		t.Fatal(err)
	}
	fl, err := FileLayer(file)
	if err != nil {
		t.Fatal(err)
	}
	flagDirs := Layer{PluginDirs: []string{"/flag"}}
	s, err := Resolve(fl, flagDirs)
	if err != nil {
		t.Fatal(err)
	}
	if s.Plugins == nil || len(s.Plugins.Entries) != 1 {
		t.Fatalf("plugins = %+v", s.Plugins)
	}
	e := s.Plugins.Entries[0]
	if e.Name != "memory-pg" || string(e.Config) != `{"dsn":"postgres://nexus@db/nexus"}` || e.ConfigDir != dir {
		t.Errorf("entry %+v", e)
	}
	// A file without plugin blocks runs no plugin.
	if err := os.WriteFile(file, []byte("listen = \"127.0.0.1:1\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	fl, err = FileLayer(file)
	if err != nil || fl.Plugins != nil {
		t.Errorf("no blocks: %+v, %v", fl.Plugins, err)
	}
	// A bad block refuses the file with its line.
	if err := os.WriteFile(file, []byte("plugin \"x\" {\n  kind = \"runner\"\n  command = \"x\"\n}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := FileLayer(file); err == nil || !strings.Contains(err.Error(), "nexus.hcl:1") || !strings.Contains(err.Error(), "kind") {
		t.Errorf("bad block: %v", err)
	}
}

func TestFileLayerRefusesUnknownsBesideTheCatalog(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, src string
		want      []string
	}{
		{"unknown attribute", "model_provider \"mock\" {\n  type = \"mock\"\n}\nlisen = \"x\"\n", []string{"lisen", "nexus.hcl:4"}},
		{"unknown block", "default_model = \"mock/scripted\"\nplugins \"x\" {\n}\n", []string{"plugins", "nexus.hcl:2"}},
		{"catalog error", "model_provider \"oa\" {\n  type = \"openai-responses\"\n}\n", []string{"nexus.hcl:2", `type "openai-responses" is reserved`}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			file := filepath.Join(t.TempDir(), "nexus.hcl")
			if err := os.WriteFile(file, []byte(c.src), 0o600); err != nil {
				t.Fatal(err)
			}
			_, err := FileLayer(file)
			if err == nil {
				t.Fatal("accepted")
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
		})
	}
}
