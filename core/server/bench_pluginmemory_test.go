package server_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/nexuskernel/nexus/core/store/storetest"
	"github.com/nexuskernel/nexus/internal/testserver"
	"github.com/nexuskernel/nexus/sdk/client"
)

// pluginMemoryRate is the memory calls a second BenchmarkPluginMemory starts: the plugin load
// test's rate (internal/e2e TestPluginMemoryUnderLoad).
const pluginMemoryRate = 50

// pluginMemoryCallsPerRun is what one run of the benchmark makes: three rounds of five calls.
const pluginMemoryCallsPerRun = 15

// pluginMemoryPhase is how many runs each variant starts before the other takes its turn:
// six seconds at the rate, long enough that a phase's first and last runs weigh little, short
// enough that both variants meet the same drift of a shared machine.
const pluginMemoryPhase = 20

// pluginMemoryBurst is the calls of the burst, created at once on the plugin's workspace.
const pluginMemoryBurst = 2000

// BenchmarkPluginMemory measures a workspace whose memory is a plugin (memory-fs) against one
// on kernel memory, on the same store and server, at pluginMemoryRate calls a second: runs of
// three rounds of five memory calls started on time whatever the runs before them do, the two
// workspaces in alternating phases of pluginMemoryPhase runs, each run timed from its create to
// its completion as a member waits for it (a waiting read). b.N is the calls of each variant.
// Then a burst of pluginMemoryBurst calls created at once on the plugin's workspace, drained to
// the end. It logs each variant's run p50 and p99, their ratio (goal: plugin p50 at most 1.5x
// kernel memory's) and the burst's drain time and tool_timeout count (goal 0).
func BenchmarkPluginMemory(b *testing.B) {
	bins := buildMemoryFS(b)
	for _, d := range storetest.Dialects() {
		b.Run(string(d), func(b *testing.B) {
			ctx := context.Background()
			cfg := memoryFSSettings(b, bins, true)
			srv := testserver.Start(b, testserver.Options{Dialect: d, LogLevel: hclog.Warn, Config: cfg})
			admin := srv.Client()
			fsID := waitMemoryFS(b, admin)
			if _, err := admin.CreateWorkspace(ctx, &client.CreateWorkspaceRequest{Handle: "kernel", Name: "kernel"}); err != nil {
				b.Fatal(err)
			}
			if _, err := admin.PutToolProviderOverrides(ctx, "default", map[string]string{"nexus.memory": fsID}, 0); err != nil {
				b.Fatal(err)
			}
			runs := max(1, b.N/pluginMemoryCallsPerRun)
			var plugin, kernel latencies
			var timeouts atomic.Int64
			every := time.Second * pluginMemoryCallsPerRun / pluginMemoryRate
			b.ResetTimer()
			for n := 0; len(plugin) < runs; n++ {
				for _, v := range []struct {
					ws  string
					out *latencies
				}{{"kernel", &kernel}, {"default", &plugin}} {
					m := min(pluginMemoryPhase, runs-len(*v.out))
					got, err := pacedRuns(ctx, admin, v.ws, n, m, every, &timeouts)
					if err != nil {
						b.Fatal(err)
					}
					*v.out = append(*v.out, got...)
				}
			}
			b.StopTimer()
			b.ReportMetric(float64(plugin.quantile(0.5).Microseconds()), "plugin-p50-µs")
			b.ReportMetric(float64(kernel.quantile(0.5).Microseconds()), "kernel-p50-µs")
			b.ReportMetric(float64(plugin.quantile(0.5))/float64(kernel.quantile(0.5)), "x-kernel")
			b.Logf("plugin memory at %d calls/s on %s (%d runs of %d calls each): run p50 plugin %v kernel %v (%.2fx, goal <= 1.5), p99 plugin %v kernel %v; tool_timeout %d",
				pluginMemoryRate, d, runs, pluginMemoryCallsPerRun, plugin.quantile(0.5), kernel.quantile(0.5),
				float64(plugin.quantile(0.5))/float64(kernel.quantile(0.5)), plugin.quantile(0.99), kernel.quantile(0.99), timeouts.Load())
			if timeouts.Load() > 0 {
				b.Errorf("%d memory calls ended tool_timeout at the rate", timeouts.Load())
			}
			var burstTimeouts atomic.Int64
			start := time.Now()
			if _, err := pacedRuns(ctx, admin, "default", -1, pluginMemoryBurst/pluginMemoryCallsPerRun, 0, &burstTimeouts); err != nil {
				b.Fatal(err)
			}
			drain := time.Since(start)
			b.ReportMetric(float64(burstTimeouts.Load()), "burst-timeouts")
			b.Logf("burst of %d plugin memory calls on %s: drained in %v (%.0f calls/s); tool_timeout %d (goal 0)",
				pluginMemoryBurst/pluginMemoryCallsPerRun*pluginMemoryCallsPerRun, d, drain,
				float64(pluginMemoryBurst/pluginMemoryCallsPerRun*pluginMemoryCallsPerRun)/drain.Seconds(), burstTimeouts.Load())
			if burstTimeouts.Load() > 0 {
				b.Errorf("%d memory calls of the burst ended tool_timeout", burstTimeouts.Load())
			}
		})
	}
}

// pacedRuns starts m runs of pluginMemoryScript on workspace ws, one every interval (all at once
// when interval is 0), waits for each to end and answers each one's time from its create to its
// completion; timeouts counts the memory calls that ended tool_timeout.
func pacedRuns(ctx context.Context, admin *client.Client, ws string, phase, m int, interval time.Duration, timeouts *atomic.Int64) (latencies, error) {
	var mu sync.Mutex
	var out latencies
	var first error
	var wg sync.WaitGroup
	var tick *time.Ticker
	if interval > 0 {
		tick = time.NewTicker(interval)
		defer tick.Stop()
	}
	for i := range m {
		wg.Add(1)
		go func() {
			defer wg.Done()
			start := time.Now()
			err := pluginMemoryRun(ctx, admin, ws, phase, i, timeouts)
			mu.Lock()
			defer mu.Unlock()
			if err != nil && first == nil {
				first = err
			}
			out = append(out, time.Since(start))
		}()
		if tick != nil {
			<-tick.C
		}
	}
	wg.Wait()
	return out, first
}

// pluginMemoryRun runs one script of three rounds of five memory calls to its end, counting the
// calls that ended tool_timeout.
func pluginMemoryRun(ctx context.Context, admin *client.Client, ws string, phase, i int, timeouts *atomic.Int64) error {
	path := fmt.Sprintf("workspace/pm-%d.md", i%24)
	script := fmt.Sprintf(`Load.
!mock
round 1
call memory_write {"path":%[1]q,"content":"run %[2]d"}
call memory_ls {}
call memory_grep {"pattern":"run"}
call memory_ls {}
call memory_read {"path":"workspace/none.md"}
round 2
call memory_read {"path":%[1]q}
call memory_grep {"pattern":"run %[2]d"}
call memory_ls {}
call memory_read {"path":%[1]q}
call memory_ls {}
round 3
call memory_ls {}
call memory_read {"path":%[1]q}
call memory_write {"path":%[1]q,"content":"done %[2]d"}
call memory_grep {"pattern":"done"}
call memory_ls {}
round 4
say done`, path, phase*1000+i)
	created, err := admin.CreateRun(ctx, ws, memoryRunOf(script), "")
	if err != nil {
		return err
	}
	for deadline := time.Now().Add(5 * time.Minute); ; {
		r, err := admin.WaitRun(ctx, ws, created.Run.PublicID, 30)
		if err != nil {
			return err
		}
		switch r.Run.Status {
		case "completed", "needs_attention", "canceled":
			timedOut := 0
			for _, t := range r.Run.Tasks {
				if t.Error != nil && t.Error.Key == "tool_timeout" {
					timedOut++
				}
			}
			timeouts.Add(int64(timedOut))
			if r.Run.Status != "completed" && timedOut == 0 {
				return fmt.Errorf("run %s ended %s", created.Run.PublicID, r.Run.Status)
			}
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("run %s still %s after 5 minutes", created.Run.PublicID, r.Run.Status)
		}
	}
}
