package mcpbridge

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sort"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/nexuskernel/nexus/providers/mcp-bridge/mcpbridgetest"
	"github.com/nexuskernel/nexus/sdk/plugin"
	"github.com/nexuskernel/nexus/sdk/toolprovider"
	"github.com/nexuskernel/nexus/sdk/toolprovider/toolprovidertest"
)

// BenchmarkB15CallOverhead measures a bridged echo from the host's plugin call (over the real
// gRPC shims) to its answer, against the same call made directly with the MCP Go SDK's client
// to the same server process (the fixture over streamable HTTP on loopback). Runs alternate;
// the store's claim and commit are not part of either. Targets: ratio-p50 ≤ 1.2, ratio-p99 ≤ 1.5.
func BenchmarkB15CallOverhead(b *testing.B) {
	srv := mcpbridgetest.NewServer(mcpbridgetest.Options{Exit: func(int) {}})
	ts := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
	defer ts.Close()
	raw := `{"servers":[{"name":"fx","url":"` + ts.URL + `/mcp"}]}`
	br, err := New(context.Background(), plugin.Config{PluginName: "mcp", DataDir: b.TempDir(), Raw: json.RawMessage(raw)}, Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer br.Close()
	host := toolprovidertest.OverGRPC(b, br)
	direct, err := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, &mcp.ClientOptions{Capabilities: &mcp.ClientCapabilities{}}).
		Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: ts.URL + "/mcp"}, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer direct.Close()
	ctx := context.Background()
	input := json.RawMessage(`{"message":"bench"}`)
	bridged := func() time.Duration {
		t0 := time.Now()
		r, err := host.Call(ctx, toolprovider.Call{Tool: "fx_echo", Input: input})
		d := time.Since(t0)
		if err != nil || len(r.Blocks) != 1 {
			b.Fatalf("bridged echo: %+v %v", r, err)
		}
		return d
	}
	plain := func() time.Duration {
		t0 := time.Now()
		r, err := direct.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: input})
		d := time.Since(t0)
		if err != nil || len(r.Content) != 1 {
			b.Fatalf("direct echo: %+v %v", r, err)
		}
		return d
	}
	// The bridge alone, without the plugin wire: what the bridge itself adds.
	inProcess := func() time.Duration {
		t0 := time.Now()
		r, err := br.Call(ctx, toolprovider.Call{Tool: "fx_echo", Input: input})
		d := time.Since(t0)
		if err != nil || len(r.Blocks) != 1 {
			b.Fatalf("in-process echo: %+v %v", r, err)
		}
		return d
	}
	for range 50 { // warm every path
		bridged()
		inProcess()
		plain()
	}
	var bt, it, pt []time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		bt = append(bt, bridged())
		it = append(it, inProcess())
		pt = append(pt, plain())
	}
	b.StopTimer()
	reportRatios(b, "", bt, pt)
	reportRatios(b, "bridge-only-", it, pt)
}

func reportRatios(b *testing.B, prefix string, bridged, direct []time.Duration) {
	p50b, p99b := percentile(bridged, 50), percentile(bridged, 99)
	p50d, p99d := percentile(direct, 50), percentile(direct, 99)
	b.ReportMetric(float64(p50b.Microseconds()), prefix+"bridged-p50-µs")
	if prefix == "" {
		b.ReportMetric(float64(p50d.Microseconds()), "direct-p50-µs")
	}
	b.ReportMetric(float64(p50b)/float64(p50d), prefix+"ratio-p50")
	b.ReportMetric(float64(p99b)/float64(p99d), prefix+"ratio-p99")
}

func percentile(ds []time.Duration, p int) time.Duration {
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	if len(s) == 0 {
		return 0
	}
	return s[min(len(s)-1, len(s)*p/100)]
}

// BenchmarkB16ListChangeBridgeHalf measures the bridge's half of a list change: from the
// server's notifications/tools/list_changed (a tool added on the fixture, over streamable HTTP)
// to the bridge signalling a new announcement revision that holds the tool, minus the 250 ms
// debounce it waits on purpose, against a plain MCP Go SDK client's own notification-to-relist
// time on the same server. The host's half (re-announcement and a run seeing the tool) is not
// part of it.
func BenchmarkB16ListChangeBridgeHalf(b *testing.B) {
	srv := mcpbridgetest.NewServer(mcpbridgetest.Options{Exit: func(int) {}})
	ts := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
	defer ts.Close()
	raw := `{"servers":[{"name":"fx","url":"` + ts.URL + `/mcp"}]}`
	br, err := New(context.Background(), plugin.Config{PluginName: "mcp", DataDir: b.TempDir(), Raw: json.RawMessage(raw)}, Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer br.Close()
	relisted := make(chan time.Time, 16)
	var direct *mcp.ClientSession
	direct, err = mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, &mcp.ClientOptions{
		Capabilities: &mcp.ClientCapabilities{},
		ToolListChangedHandler: func(ctx context.Context, _ *mcp.ToolListChangedRequest) {
			go func() {
				if _, err := direct.ListTools(context.Background(), nil); err == nil {
					relisted <- time.Now()
				}
			}()
		},
	}).Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: ts.URL + "/mcp"}, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer direct.Close()
	changes := br.AnnouncementChanges(b.Context())
	noop := func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{}, nil
	}
	var bt, dt []time.Duration
	for i := 0; i < b.N; i++ {
		name := fmt.Sprintf("added_%d", i)
		for len(relisted) > 0 {
			<-relisted
		}
		t0 := time.Now()
		srv.AddTool(&mcp.Tool{Name: name, InputSchema: map[string]any{"type": "object"}}, noop)
		var plain time.Duration
		got := false
		deadline := time.After(10 * time.Second)
		for !got || plain == 0 {
			select {
			case t := <-relisted:
				if plain == 0 {
					plain = t.Sub(t0)
				}
			case <-changes:
				a, _ := br.Announce(context.Background())
				if toolNamed(a, "fx_"+name) != nil && !got {
					got = true
					bt = append(bt, time.Since(t0)-listDebounce)
				}
			case <-deadline:
				b.Fatal("no list change within 10 s")
			}
		}
		dt = append(dt, plain)
	}
	b.StopTimer()
	reportRatios(b, "", bt, dt)
}
