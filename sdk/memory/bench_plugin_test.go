package memory_test

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"sort"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	goplugin "github.com/hashicorp/go-plugin"

	pb "github.com/nexuskernel/nexus/sdk/internal/pb/nexus/plugin/v1"
	"github.com/nexuskernel/nexus/sdk/memory"
	"github.com/nexuskernel/nexus/sdk/memory/memorytest"
	"github.com/nexuskernel/nexus/sdk/plugin"
)

// envServe makes this test binary serve a memory plugin over the reference store instead of
// running tests (go-plugin's helper-process pattern), for the call-overhead benchmark.
const envServe = "NEXUS_TEST_MEMORY_PLUGIN"

func TestMain(m *testing.M) {
	if os.Getenv(envServe) != "" {
		memory.Serve(memory.ServeConfig{
			Info: plugin.Info{Name: "bench", Version: "0.0.0"},
			Configure: func(context.Context, plugin.Config) (memory.Provider, error) {
				return memorytest.NewMemStore(), nil
			},
		})
		return
	}
	os.Exit(m.Run())
}

// BenchmarkB1PluginCallOverhead measures a memory Read through the SDK's client shim (converters
// and typed-error mapping) against a raw grpc-go client calling the same RPC on the same
// connection (the same Unix socket, the same mTLS session) to the same plugin process. Calls
// alternate so both see the same machine; p50 and p99 of each and their ratios are reported.
func BenchmarkB1PluginCallOverhead(b *testing.B) {
	exe, err := os.Executable()
	if err != nil {
		b.Fatal(err)
	}
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), envServe+"=1")
	client := goplugin.NewClient(&goplugin.ClientConfig{
		HandshakeConfig:  plugin.Handshake,
		VersionedPlugins: map[int]goplugin.PluginSet{1: {"memory": memory.ClientPlugin()}},
		Cmd:              cmd,
		AutoMTLS:         true,
		AllowedProtocols: []goplugin.Protocol{goplugin.ProtocolGRPC},
		Logger:           hclog.NewNullLogger(),
	})
	defer client.Kill()
	rpc, err := client.Client()
	if err != nil {
		b.Fatal(err)
	}
	raw, err := rpc.Dispense("memory")
	if err != nil {
		b.Fatal(err)
	}
	sdk := raw.(memory.Client)
	ctx := context.Background()
	if err := sdk.Configure(ctx, plugin.Config{}); err != nil {
		b.Fatal(err)
	}
	content := "a line of a memory document\n"
	for len(content) < 2048 {
		content += content
	}
	scope := memorytest.Workspace
	if _, err := sdk.Write(ctx, &memory.WriteRequest{Scope: scope, Name: "notes.md", Content: content, WrittenAt: memorytest.T0}); err != nil {
		b.Fatal(err)
	}
	direct := pb.NewMemoryProviderClient(rpc.(*goplugin.GRPCClient).Conn)
	rawReq := &pb.ReadRequest{Scope: &pb.Scope{Binding: scope.Binding, Kind: pb.ScopeKind_SCOPE_KIND_WORKSPACE, OwnerPublicId: scope.OwnerID, Access: pb.Access_ACCESS_READ_WRITE, WorkspacePublicId: scope.WorkspaceID}, Name: "notes.md"}
	sdkReq := &memory.ReadRequest{Scope: scope, Name: "notes.md"}
	engine := &memory.Engine{Provider: sdk}
	input := json.RawMessage(`{"path":"workspace/notes.md"}`)

	// Warm both paths.
	for range 200 {
		_, _ = sdk.Read(ctx, sdkReq)
		_, _ = direct.Read(ctx, rawReq)
	}
	sdkTimes := make([]time.Duration, 0, b.N)
	rawTimes := make([]time.Duration, 0, b.N)
	engineTimes := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		t0 := time.Now()
		if _, err := direct.Read(ctx, rawReq); err != nil {
			b.Fatal(err)
		}
		t1 := time.Now()
		if _, err := sdk.Read(ctx, sdkReq); err != nil {
			b.Fatal(err)
		}
		t2 := time.Now()
		if res, err := engine.Run(ctx, memory.ToolRead, input, memorytest.DefaultBindings(), memory.RunOptions{}); err != nil || res.IsError {
			b.Fatal(err, res.Text)
		}
		t3 := time.Now()
		rawTimes = append(rawTimes, t1.Sub(t0))
		sdkTimes = append(sdkTimes, t2.Sub(t1))
		engineTimes = append(engineTimes, t3.Sub(t2))
	}
	b.StopTimer()
	rp50, rp99 := percentiles(rawTimes)
	sp50, sp99 := percentiles(sdkTimes)
	ep50, ep99 := percentiles(engineTimes)
	b.ReportMetric(float64(rp50.Nanoseconds()), "raw-p50-ns")
	b.ReportMetric(float64(rp99.Nanoseconds()), "raw-p99-ns")
	b.ReportMetric(float64(sp50.Nanoseconds()), "sdk-p50-ns")
	b.ReportMetric(float64(sp99.Nanoseconds()), "sdk-p99-ns")
	b.ReportMetric(float64(ep50.Nanoseconds()), "engine-p50-ns")
	b.ReportMetric(float64(ep99.Nanoseconds()), "engine-p99-ns")
	b.ReportMetric(float64(sp50)/float64(rp50), "ratio-p50")
	b.ReportMetric(float64(sp99)/float64(rp99), "ratio-p99")
}

func percentiles(d []time.Duration) (p50, p99 time.Duration) {
	s := append([]time.Duration(nil), d...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	if len(s) == 0 {
		return 0, 0
	}
	return s[len(s)/2], s[min(len(s)-1, len(s)*99/100)]
}
