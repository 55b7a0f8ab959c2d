package memoryfs_test

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	memoryfs "github.com/nexuskernel/nexus/providers/memory-fs"
	"github.com/nexuskernel/nexus/sdk/memory/memorytest"
	"github.com/nexuskernel/nexus/sdk/plugin"
)

func TestConfigure(t *testing.T) {
	t.Parallel()
	data := t.TempDir()
	p, err := memoryfs.Configure(t.Context(), plugin.Config{DataDir: data, Raw: []byte(`{}`)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(data, "FORMAT")); err != nil {
		t.Errorf("root did not default to the data dir: %v", err)
	}
	_ = p.(*memoryfs.Store).Close()

	root := t.TempDir()
	if _, err := memoryfs.Configure(t.Context(), plugin.Config{DataDir: data, Raw: []byte(`{"root":"` + root + `","fsync":false}`)}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "FORMAT")); err != nil {
		t.Errorf("root not used: %v", err)
	}

	bad := t.TempDir()
	if err := os.WriteFile(filepath.Join(bad, "FORMAT"), []byte("other 9\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for name, raw := range map[string]string{
		"unknown format": `{"root":"` + bad + `"}`,
		"unknown field":  `{"rooot":"x"}`,
		"no root at all": `{}`,
	} {
		dir := data
		if name == "no root at all" {
			dir = ""
		}
		if _, err := memoryfs.Configure(t.Context(), plugin.Config{DataDir: dir, Raw: []byte(raw)}); !errors.Is(err, plugin.ErrConfigInvalid) {
			t.Errorf("%s: %v, want plugin.ErrConfigInvalid", name, err)
		}
	}
}

// TestConformanceOverGRPC runs the kit through the real gRPC shims: typed errors survive.
func TestConformanceOverGRPC(t *testing.T) {
	t.Parallel()
	memorytest.RunProvider(t, memorytest.OverGRPC(open))
	memorytest.RunTools(t, memorytest.OverGRPC(open))
}
