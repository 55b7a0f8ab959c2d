package plugins

import (
	"context"
	"os/exec"
	"sort"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	goplugin "github.com/hashicorp/go-plugin"

	"github.com/nexuskernel/nexus/sdk/plugin"
)

// BenchmarkB2ColdStart measures a plugin's cold start through the host's whole load sequence
// (resolve, digest, launch with AutoMTLS, Dispense, Describe, Configure, Describe, validation)
// against a bare go-plugin launch of the same binary (NewClient, handshake, Dispense), both
// ending with the process killed; runs alternate. It also measures a restart after a crash: from
// SIGKILL to the supervisor serving again, minus the backoff delay the supervisor waits on
// purpose (1 s by default, shortened here), so the figure is detection plus relaunch.
func BenchmarkB2ColdStart(b *testing.B) {
	e := scenarioEntry(b, "bench", plugin.KindToolProvider, "tools-example")
	dataDir := b.TempDir()
	var hostTimes, bareTimes []time.Duration
	for i := 0; i < b.N; i++ {
		t0 := time.Now()
		in, r := launch(context.Background(), launchSpec{entry: e, command: e.Command, dataDir: dataDir, logger: hclog.NewNullLogger()}, 1)
		if r != nil {
			b.Fatal(r)
		}
		hostTimes = append(hostTimes, time.Since(t0))
		in.kill()

		t0 = time.Now()
		cmd := exec.Command(e.Command)
		cmd.Env = []string{envScenario + "=tools-example", envDir + "=" + e.Env[envDir]}
		c := goplugin.NewClient(&goplugin.ClientConfig{
			HandshakeConfig: plugin.Handshake, VersionedPlugins: pluginSet(), Cmd: cmd, AutoMTLS: true,
			AllowedProtocols: []goplugin.Protocol{goplugin.ProtocolGRPC}, SkipHostEnv: true, Logger: hclog.NewNullLogger(),
		})
		rpc, err := c.Client()
		if err != nil {
			b.Fatal(err)
		}
		if _, err := rpc.Dispense("tool_provider"); err != nil {
			b.Fatal(err)
		}
		bareTimes = append(bareTimes, time.Since(t0))
		c.Kill()
	}
	b.StopTimer()
	host, bare := median(hostTimes), median(bareTimes)
	b.ReportMetric(float64(host.Microseconds()), "host-p50-µs")
	b.ReportMetric(float64(bare.Microseconds()), "bare-p50-µs")
	b.ReportMetric(float64(host)/float64(bare), "ratio-p50")

	// Restart after a crash, with the host's supervisor.
	timings := fastTimings
	timings.BackoffBase, timings.BackoffMax, timings.Jitter = time.Millisecond, time.Millisecond, 0.0001
	plane := newPlane()
	h, err := New(Config{Catalog: &Catalog{Entries: []Entry{e}}, Plane: plane, DataDir: dataDir, Timings: timings})
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = h.Shutdown(context.Background()) }()
	if err := h.Start(context.Background()); err != nil {
		b.Fatal(err)
	}
	h.mu.Lock()
	h.sups["bench"].breaker.t.BreakerThreshold = 1 << 30
	h.mu.Unlock()
	th := &testHost{Host: h, plane: plane}
	var restarts []time.Duration
	for range min(b.N, 20) {
		st := th.waitState(b, "bench", StateReady, 20*time.Second)
		t0 := time.Now()
		th.killPlugin(b, "bench")
		th.waitGeneration(b, "bench", st.Generation, 20*time.Second)
		restarts = append(restarts, time.Since(t0))
	}
	restart := median(restarts)
	b.ReportMetric(float64(restart.Microseconds()), "restart-p50-µs")
	b.ReportMetric(float64(restart)/float64(host), "restart/cold")
}

func median(d []time.Duration) time.Duration {
	s := append([]time.Duration(nil), d...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	if len(s) == 0 {
		return 0
	}
	return s[len(s)/2]
}
