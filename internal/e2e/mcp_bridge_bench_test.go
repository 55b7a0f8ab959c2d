package e2e

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/nexuskernel/nexus/core/store"
	"github.com/nexuskernel/nexus/internal/testserver"
	"github.com/nexuskernel/nexus/providers/mcp-bridge/mcpbridgetest"
)

// bridgeDebounce is the bridge's list-change debounce (docs/plugins.md#when-a-server-is-down), a
// prescribed wait that B16 subtracts.
const bridgeDebounce = 250 * time.Millisecond

// BenchmarkB16ListChange measures a list change end to end: from a tool added on the MCP server
// (the fixture over streamable HTTP in this process, which sends notifications/tools/list_changed)
// to the kernel's executor read listing it, which is what a newly accepted run is addressed
// against, minus the bridge's 250 ms debounce; the host's re-announcement spacing is shortened to a
// nanosecond (both are prescribed waits, not work). The baseline, in the same run and alternating,
// is a plain MCP Go SDK client's own time from the notification to its re-list on the same server.
// Target: ratio-p50 at most 3.
func BenchmarkB16ListChange(b *testing.B) {
	srv := mcpbridgetest.NewServer(mcpbridgetest.Options{Exit: func(int) {}})
	ts := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
	defer ts.Close()
	timings := pluginTimings
	timings.ReannounceSpacing = time.Nanosecond
	in := testserver.Start(b, testserver.Options{Dialect: store.SQLite, PluginTimings: timings, Config: fmt.Sprintf(`
plugin_dirs = [%q]
plugin "mcp" {
  kind       = "tool_provider"
  command    = "nexus-mcp-bridge"
  workspaces = ["default"]
  config     = { servers = [ { name = "fx", url = %q } ] }
}
`, pluginBinaries(b), ts.URL+"/mcp")})
	ctx := context.Background()
	admin := in.Client()
	var executor string
	for deadline := time.Now().Add(30 * time.Second); executor == ""; {
		if r, err := admin.Plugin(ctx, "mcp"); err == nil && r.Plugin.State == "ready" && r.Plugin.ExecutorPublicID != nil {
			executor = *r.Plugin.ExecutorPublicID
		} else if time.Now().After(deadline) {
			b.Fatalf("the bridge is not ready: %v %v", r, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	relisted := make(chan time.Time, 16)
	var direct *mcp.ClientSession
	direct, err := mcp.NewClient(&mcp.Implementation{Name: "b16", Version: "1"}, &mcp.ClientOptions{
		Capabilities: &mcp.ClientCapabilities{},
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
			go func() {
				if _, err := direct.ListTools(context.Background(), nil); err == nil {
					relisted <- time.Now()
				}
			}()
		},
	}).Connect(ctx, &mcp.StreamableClientTransport{Endpoint: ts.URL + "/mcp"}, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer direct.Close()
	noop := func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{}, nil
	}
	var kernel, plain []time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		name := fmt.Sprintf("added_%d", i)
		for len(relisted) > 0 {
			<-relisted
		}
		t0 := time.Now()
		srv.AddTool(&mcp.Tool{Name: name, InputSchema: map[string]any{"type": "object"}}, noop)
		select {
		case t := <-relisted:
			plain = append(plain, t.Sub(t0))
		case <-time.After(10 * time.Second):
			b.Fatal("the plain client did not re-list")
		}
		for deadline := time.Now().Add(10 * time.Second); ; {
			ex, err := admin.Executor(ctx, executor)
			if err == nil && strings.Contains(string(ex.Raw), `"fx_`+name+`"`) {
				kernel = append(kernel, time.Since(t0)-bridgeDebounce)
				break
			}
			if time.Now().After(deadline) {
				b.Fatalf("the kernel never listed fx_%s", name)
			}
			time.Sleep(2 * time.Millisecond)
		}
	}
	b.StopTimer()
	pct := func(ds []time.Duration, p int) time.Duration {
		s := append([]time.Duration(nil), ds...)
		sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
		return s[min(len(s)-1, len(s)*p/100)]
	}
	b.ReportMetric(float64(pct(kernel, 50).Microseconds()), "kernel-p50-µs")
	b.ReportMetric(float64(pct(plain, 50).Microseconds()), "sdk-relist-p50-µs")
	b.ReportMetric(float64(pct(kernel, 50))/float64(pct(plain, 50)), "ratio-p50")
}
