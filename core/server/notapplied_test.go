package server

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// TestNotApplied: a reload names every setting outside the plugin blocks that changed in the file
// since the start, in a fixed order, and nothing when only plugin blocks changed.
func TestNotApplied(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	read := func(src string) Layer {
		t.Helper()
		path := filepath.Join(dir, "nexus.hcl")
		if err := os.WriteFile(path, []byte(src), 0o600); err != nil {
			t.Fatal(err)
		}
		l, err := FileLayerEnv(path, func(string) string { return "" })
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	base := `
listen = "127.0.0.1:7400"
kernel {
  workers = 4
}
model_provider "lab" {
  type = "mock"
}
model "lab/a" {}
model "lab/b" {
  display_name = "B"
}
plugin "tools" {
  kind    = "tool_provider"
  command = "nexus-tools-example"
}
`
	was := read(base)
	if got := notApplied(was, read(base)); len(got) != 0 {
		t.Fatalf("the same file: %q", got)
	}
	pluginOnly := read(base + `
plugin "more" {
  kind    = "tool_provider"
  command = "nexus-tools-example"
}
`)
	if got := notApplied(was, pluginOnly); len(got) != 0 {
		t.Fatalf("a plugin block added: %q", got)
	}
	changed := read(`
listen = "127.0.0.1:7401"
log_level = "debug"
default_model = "lab/c"
builtin_mock_models = false
kernel {
  workers = 8
}
model_provider "lab" {
  type = "mock"
}
model_provider "zoo" {
  type = "mock"
}
model "lab/b" {
  display_name = "Bee"
}
model "lab/c" {}
`)
	want := []string{"listen", "log_level", "kernel", "default_model", "builtin_mock_models", `model_provider "zoo"`,
		`model "lab/a"`, `model "lab/b"`, `model "lab/c"`}
	if got := notApplied(was, changed); !slices.Equal(got, want) {
		t.Fatalf("changed:\n got %q\nwant %q", got, want)
	}
	if got := notApplied(Layer{}, Layer{}); got == nil || len(got) != 0 {
		t.Fatalf("no file: %#v, want an empty list", got)
	}
}
