package e2e

import (
	"context"
	"fmt"
	"path/filepath"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/nexuskernel/nexus/core/store"
	"github.com/nexuskernel/nexus/core/store/storetest"
	"github.com/nexuskernel/nexus/internal/testserver"
)

// b20Config is B20's settings: a heartbeat a fifth of the default's (so that a run of the
// benchmark takes seconds per kill, not tens), the default's ratios between heartbeat interval,
// timeout and sweep kept, and claims whose deadline is never what ends them.
const b20Config = `
kernel {
  workers            = 8
  model_timeout      = "10m"
  sweep_interval     = "200ms"
  heartbeat_interval = "400ms"
  heartbeat_timeout  = "2s"
}
`

// b20Timeout is heartbeat_timeout above.
const b20Timeout = 2 * time.Second

// b20Kills is how many times one run of B20 kills an instance: enough kills at random phases of
// the heartbeat for the worst of them to stand for the p99.
const b20Kills = 8

// BenchmarkB20Takeover is B20 (docs/operations.md#instance-liveness-and-takeover): two instances
// on one PostgreSQL, runs whose model rounds take half a second created through the survivor;
// the other instance is killed with SIGKILL while it holds kernel claims, restarted, and killed
// again. Each kill's takeover is the time from the SIGKILL to the survivor's re-claim of the last
// kernel row the dead instance held, as the rows record it, reported against the configured
// heartbeat timeout (the requirement: p99 at most 1.5 times the timeout).
func BenchmarkB20Takeover(b *testing.B) {
	if storetest.PostgresURL() == "" {
		b.Skip("B20 needs NEXUS_TEST_POSTGRES_URL: several instances share PostgreSQL")
	}
	one := testserver.Start(b, testserver.Options{Dialect: store.Postgres, Subprocess: true, Config: b20Config})
	two := testserver.Start(b, testserver.Options{Peer: one, Subprocess: true, Config: b20Config})
	st := openStore(b, one.DatabaseURL)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		c := two.Client()
		script := "Slow round.\n!mock\nround 1\nsleep 500\ncall memory_ls {}\nround 2\nsay done"
		for ctx.Err() == nil {
			_, _ = c.CreateRun(ctx, "default", memoryRun(script), "")
			time.Sleep(50 * time.Millisecond)
		}
	}()
	defer func() {
		cancel()
		wg.Wait()
	}()
	var took []time.Duration
	for k := 0; k < b20Kills*b.N; k++ {
		id := selfID(b, one)
		for deadline := time.Now().Add(30 * time.Second); len(heldBy(b, st, id)) == 0; time.Sleep(2 * time.Millisecond) {
			if time.Now().After(deadline) {
				b.Fatal("the instance never held a kernel claim")
			}
		}
		one.Kill()
		killed := time.Now()
		held := heldBy(b, st, id)
		if n, d := takeoverTime(b, st, held, killed, time.Minute, "running"); n > 0 {
			took = append(took, d)
		}
		one.Restart()
	}
	if len(took) == 0 {
		b.Fatal("no kill left a claim to take over")
	}
	sort.Slice(took, func(i, j int) bool { return took[i] < took[j] })
	p50 := took[len(took)/2]
	// With fewer than a hundred kills, the p99 is the worst of them.
	p99 := took[min(len(took)-1, len(took)*99/100)]
	b.ReportMetric(float64(p50.Milliseconds()), "p50-ms")
	b.ReportMetric(float64(p99.Milliseconds()), "p99-ms")
	b.ReportMetric(float64(p99)/float64(b20Timeout), "p99-ratio-vs-timeout")
	b.Logf("B20: %d kills taken over; p50 %v, p99 %v against a heartbeat timeout of %v (%.2fx); all %v",
		len(took), p50, p99, b20Timeout, float64(p99)/float64(b20Timeout), fmt.Sprint(took))
}

// b24Kills is how many times one run of B24 kills an instance, as B20 does.
const b24Kills = b20Kills

// b24Pace spaces B24's creates: ten calls of half a second a second keep five in flight, which
// the survivor's plugin alone serves within its eight slots (max_concurrency), so that what a
// taken-over row waits for is the takeover, not a free slot.
const b24Pace = 100 * time.Millisecond

// BenchmarkB24PluginTakeover is B24 (docs/operations.md#instance-liveness-and-takeover): two
// instances on one PostgreSQL, each running its copy of the takeover plugin, with B20's heartbeat
// (interval 400 ms, timeout 2 s, sweep 200 ms); runs of one replayable plugin call of half a
// second are created through the survivor and served by both instances' plugins. The other
// instance is killed with SIGKILL while its plugin holds claims, restarted, and killed again.
// Each kill's takeover is the time from the SIGKILL to the survivor's plugin claiming the last
// row the dead instance's plugin held, as the rows record it, reported against the configured
// heartbeat timeout (the requirement: p99 at most 1.5 times the timeout). Without the takeover
// these rows would wait for their claims' deadline, ten minutes here.
func BenchmarkB24PluginTakeover(b *testing.B) {
	if storetest.PostgresURL() == "" {
		b.Skip("B24 needs NEXUS_TEST_POSTGRES_URL: several instances share PostgreSQL")
	}
	config := takeoverConfig(b, b20Config, filepath.Join(b.TempDir(), "calls"))
	one := testserver.Start(b, testserver.Options{Dialect: store.Postgres, Subprocess: true, Config: config})
	two := testserver.Start(b, testserver.Options{Peer: one, Subprocess: true, Config: config})
	st := openStore(b, one.DatabaseURL)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		c := two.Client()
		for i := 0; ctx.Err() == nil; i++ {
			_, _ = c.CreateRun(ctx, "default", slowRun(slowRead, fmt.Sprintf("b24-%d", i), 500), "")
			time.Sleep(b24Pace)
		}
	}()
	defer func() {
		cancel()
		wg.Wait()
	}()
	var took []time.Duration
	for k := 0; k < b24Kills*b.N; k++ {
		id := selfID(b, one)
		for deadline := time.Now().Add(30 * time.Second); len(pluginHeldBy(b, st, id, slowRead)) == 0; time.Sleep(2 * time.Millisecond) {
			if time.Now().After(deadline) {
				b.Fatal("the instance's plugin never held a claim")
			}
		}
		one.Kill()
		killed := time.Now()
		held := pluginHeldBy(b, st, id, slowRead)
		if n, d := takeoverTime(b, st, held, killed, time.Minute, "dispatched"); n > 0 {
			took = append(took, d)
		}
		one.Restart()
	}
	if len(took) == 0 {
		b.Fatal("no kill left a plugin claim to take over")
	}
	sort.Slice(took, func(i, j int) bool { return took[i] < took[j] })
	p50 := took[len(took)/2]
	// With fewer than a hundred kills, the p99 is the worst of them.
	p99 := took[min(len(took)-1, len(took)*99/100)]
	b.ReportMetric(float64(p50.Milliseconds()), "p50-ms")
	b.ReportMetric(float64(p99.Milliseconds()), "p99-ms")
	b.ReportMetric(float64(p99)/float64(b20Timeout), "p99-ratio-vs-timeout")
	b.Logf("B24: %d kills taken over; p50 %v, p99 %v against a heartbeat timeout of %v (interval 400ms) (%.2fx); all %v",
		len(took), p50, p99, b20Timeout, float64(p99)/float64(b20Timeout), fmt.Sprint(took))
}
