package memoryfs_test

import (
	"errors"
	"os"
	"path/filepath"
	"sync"
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

// TestRootID: a root gets one marker when first prepared and keeps it; stores opening one fresh
// root at once agree on it; another root has another; a malformed marker refuses the load; and
// ResolveRoot names the root Configure opens, a relative root taken from the data directory.
func TestRootID(t *testing.T) {
	t.Parallel()
	root := filepath.Join(t.TempDir(), "shared")
	ids := make([]string, 8)
	var wg sync.WaitGroup
	for i := range ids {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s, err := memoryfs.Open(t.Context(), memoryfs.Config{Root: root})
			if err != nil {
				t.Error(err)
				return
			}
			defer s.Close()
			if ids[i], err = s.RootID(); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	for _, id := range ids {
		if id != ids[0] || len(id) != 32 {
			t.Fatalf("stores opening one root read markers %q", ids)
		}
	}
	data, err := os.ReadFile(filepath.Join(root, memoryfs.RootIDFile))
	if err != nil || string(data) != ids[0]+"\n" {
		t.Fatalf("ROOT_ID holds %q (%v), want %q", data, err, ids[0]+"\n")
	}
	if again, err := memoryfs.RootID(root); err != nil || again != ids[0] {
		t.Errorf("reopened root reads %q (%v), want %q", again, err, ids[0])
	}
	other, err := memoryfs.Open(t.Context(), memoryfs.Config{Root: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if id, _ := other.RootID(); id == ids[0] {
		t.Errorf("two roots share the marker %q", id)
	}
	if _, err := memoryfs.RootID(t.TempDir()); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a root never opened: %v, want os.ErrNotExist", err)
	}

	bad := t.TempDir()
	if err := os.WriteFile(filepath.Join(bad, memoryfs.RootIDFile), []byte("not an id\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := memoryfs.Configure(t.Context(), plugin.Config{DataDir: t.TempDir(), Raw: []byte(`{"root":"` + bad + `"}`)}); !errors.Is(err, plugin.ErrConfigInvalid) {
		t.Errorf("malformed marker: %v, want plugin.ErrConfigInvalid", err)
	}

	data2 := t.TempDir()
	for raw, want := range map[string]string{
		`{}`:                     data2,
		`{"root":"mem"}`:         filepath.Join(data2, "mem"),
		`{"root":"` + bad + `"}`: bad,
	} {
		got, err := memoryfs.ResolveRoot(plugin.Config{DataDir: data2, Raw: []byte(raw)})
		if err != nil || got != want {
			t.Errorf("ResolveRoot(%s) = %q, %v; want %q", raw, got, err, want)
		}
	}
	p, err := memoryfs.Configure(t.Context(), plugin.Config{DataDir: data2, Raw: []byte(`{"root":"mem","fsync":false}`)})
	if err != nil {
		t.Fatal(err)
	}
	defer p.(*memoryfs.Store).Close()
	if got := p.(*memoryfs.Store).Root(); got != filepath.Join(data2, "mem") {
		t.Errorf("Configure opened %q, want the data directory's mem", got)
	}
}
