package server

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestFileLayerReadsTheKernelBlock(t *testing.T) {
	t.Parallel()
	write := func(text string) string {
		file := filepath.Join(t.TempDir(), "nexus.hcl")
		if err := os.WriteFile(file, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		return file
	}
	fl, err := FileLayer(write(`
kernel {
  workers        = 3
  model_timeout  = "2s"
  sweep_interval = "250ms"
}
model_provider "mock" {
  type = "mock"
}
`))
	if err != nil {
		t.Fatal(err)
	}
	want := &KernelSettings{Workers: 3, ModelTimeout: 2 * time.Second, SweepInterval: 250 * time.Millisecond}
	if diff := cmp.Diff(want, fl.Kernel); diff != "" {
		t.Fatal(diff)
	}
	s, err := Resolve(fl)
	if err != nil || s.Kernel == nil || s.Kernel.Workers != 3 {
		t.Fatalf("resolved %+v %v", s.Kernel, err)
	}
	fl, err = FileLayer(write(`log_level = "info"`))
	if err != nil || fl.Kernel != nil {
		t.Fatalf("no block: %+v %v", fl.Kernel, err)
	}
	for text, word := range map[string]string{
		`kernel { workers = 0 }`:            "kernel.workers",
		`kernel { workers = 9999 }`:         "kernel.workers",
		`kernel { model_timeout = "soon" }`: "kernel.model_timeout",
		`kernel { sweep_interval = "-1s" }`: "kernel.sweep_interval",
		`kernel { threads = 4 }`:            "threads",
	} {
		if _, err := FileLayer(write(text)); err == nil || !strings.Contains(err.Error(), word) {
			t.Errorf("%s: %v, want an error naming %s", text, err, word)
		}
	}
}
