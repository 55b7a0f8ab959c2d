package server

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/nexuskernel/nexus/core/liveness"
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
  heartbeat_interval = "500ms"
  heartbeat_timeout  = "3s"
}
model_provider "mock" {
  type = "mock"
}
`))
	if err != nil {
		t.Fatal(err)
	}
	want := &KernelSettings{Workers: 3, ModelTimeout: 2 * time.Second, SweepInterval: 250 * time.Millisecond,
		HeartbeatInterval: 500 * time.Millisecond, HeartbeatTimeout: 3 * time.Second}
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
		`kernel { workers = 0 }`:               "kernel.workers",
		`kernel { workers = 9999 }`:            "kernel.workers",
		`kernel { model_timeout = "soon" }`:    "kernel.model_timeout",
		`kernel { sweep_interval = "-1s" }`:    "kernel.sweep_interval",
		`kernel { threads = 4 }`:               "threads",
		`kernel { heartbeat_interval = "0s" }`: "kernel.heartbeat_interval",
		`kernel { heartbeat_timeout = "x" }`:   "kernel.heartbeat_timeout",
		// The timeout spans at least two renewals, against the defaults where one is unset.
		`kernel { heartbeat_timeout = "3s" }`:                                      fmt.Sprintf(HeartbeatSpanRefusal, liveness.MinHeartbeatRenewals),
		`kernel { heartbeat_interval = "6s" }`:                                     fmt.Sprintf(HeartbeatSpanRefusal, liveness.MinHeartbeatRenewals),
		"kernel {\nheartbeat_interval = \"1s\"\nheartbeat_timeout = \"1500ms\"\n}": fmt.Sprintf(HeartbeatSpanRefusal, liveness.MinHeartbeatRenewals),
	} {
		if _, err := FileLayer(write(text)); err == nil || !strings.Contains(err.Error(), word) {
			t.Errorf("%s: %v, want an error naming %s", text, err, word)
		}
	}
}
