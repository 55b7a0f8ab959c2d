package mcpbridge

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/nexuskernel/nexus/providers/mcp-bridge/mcpbridgetest"
	"github.com/nexuskernel/nexus/sdk/announce"
	"github.com/nexuskernel/nexus/sdk/plugin"
	"github.com/nexuskernel/nexus/sdk/toolprovider"
	"github.com/nexuskernel/nexus/sdk/toolprovider/toolprovidertest"
)

func TestMain(m *testing.M) {
	mcpbridgetest.MaybeServe()
	os.Exit(m.Run())
}

// inMemory dials a fresh in-memory session to srv for every connect.
func inMemory(srv func(name string) *mcp.Server) func(ctx context.Context, s ServerConfig) (mcp.Transport, error) {
	return func(ctx context.Context, s ServerConfig) (mcp.Transport, error) {
		ct, st := mcp.NewInMemoryTransports()
		if _, err := srv(s.Name).Connect(context.WithoutCancel(ctx), st, nil); err != nil {
			return nil, err
		}
		return ct, nil
	}
}

func newBridge(t testing.TB, raw string, opt Options) *Bridge {
	t.Helper()
	if opt.ServerWait == 0 {
		opt.ServerWait = 500 * time.Millisecond
	}
	b, err := New(context.Background(), plugin.Config{PluginName: "mcp", DataDir: t.TempDir(), Raw: json.RawMessage(raw)}, opt)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() { b.Close() })
	return b
}

func call(t testing.TB, b *Bridge, tool, input string) (toolprovider.Result, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return b.Call(ctx, toolprovider.Call{Tool: tool, Input: json.RawMessage(input)})
}

func texts(r toolprovider.Result) []string {
	var out []string
	for _, b := range r.Blocks {
		if b.Text != nil {
			out = append(out, *b.Text)
		}
	}
	return out
}

func toolNamed(a announce.Announcement, name string) *announce.Tool {
	for i := range a.Tools {
		if a.Tools[i].Name == name {
			return &a.Tools[i]
		}
	}
	return nil
}

func fixtureBridge(t *testing.T, raw string, opt Options) (*Bridge, *mcp.Server) {
	srv := mcpbridgetest.NewServer(mcpbridgetest.Options{Exit: func(int) {}, State: t.TempDir()})
	opt.Dial = inMemory(func(string) *mcp.Server { return srv })
	return newBridge(t, raw, opt), srv
}

func TestAnnouncementOfTheFixture(t *testing.T) {
	b, _ := fixtureBridge(t, `{"servers":[{"name":"fx","command":"fixture"}]}`, Options{})
	toolprovidertest.CheckAnnouncement(t, b)
	a, _ := b.Announce(context.Background())
	for _, want := range []string{"fx_echo", "fx_files__2fread", "fx_weird__20name", "fx_r__c3__a9sum__c3__a9", "fx_a__2eb", "fx_a__5f_2eb", "fx_delegate_task", "fx_skill", "fx_memory_read"} {
		if toolNamed(a, want) == nil {
			t.Errorf("announcement lacks %s", want)
		}
	}
	hashed := servedName("fx_", mcpbridgetest.LongName, 64)
	if len(hashed) != 64 || toolNamed(a, hashed) == nil {
		t.Errorf("hashed name %q (%d) not announced", hashed, len(hashed))
	}
	for i := 1; i < len(a.Tools); i++ {
		if a.Tools[i-1].Name >= a.Tools[i].Name {
			t.Fatalf("tools not sorted: %s before %s", a.Tools[i-1].Name, a.Tools[i].Name)
		}
	}
	echo := toolNamed(a, "fx_echo")
	if echo.Description == nil || *echo.Description != "fixture tool echo" || *echo.TimeoutMS != DefaultTimeoutMS {
		t.Errorf("echo entry %+v", echo)
	}
	if !strings.Contains(string(echo.InputSchema), `"type":"object"`) {
		t.Errorf("echo schema %s", echo.InputSchema)
	}
	p, _ := toolNamed(a, "fx_no_annotations").EffectProfile.Profile()
	if p != (announce.EffectProfile{Kind: "write", Destructive: true, EffectScope: "open", Idempotency: "none", Reconciliation: "none"}) {
		t.Errorf("no_annotations profile %+v", p)
	}
	var env struct {
		MCP struct {
			Servers []struct {
				Name            string `json:"name"`
				ProtocolVersion string `json:"protocol_version"`
				Tools           int    `json:"tools"`
			} `json:"servers"`
		} `json:"mcp_bridge"`
	}
	if err := json.Unmarshal(a.Environment, &env); err != nil {
		t.Fatal(err)
	}
	if len(env.MCP.Servers) != 1 || env.MCP.Servers[0].ProtocolVersion != "2026-07-28" || env.MCP.Servers[0].Tools != len(a.Tools) {
		t.Errorf("environment %s", a.Environment)
	}
	if b.AnnouncementRevision() < 1 {
		t.Errorf("revision %d", b.AnnouncementRevision())
	}
}

func TestNamesReachTheirTools(t *testing.T) {
	b, _ := fixtureBridge(t, `{"servers":[{"name":"fx","command":"fixture"}]}`, Options{})
	for _, n := range mcpbridgetest.NamedTools {
		served := servedName("fx_", n, 64)
		r, err := call(t, b, served, `{}`)
		if err != nil || len(texts(r)) != 1 || texts(r)[0] != n {
			t.Errorf("%s: %v %v", served, texts(r), err)
		}
	}
	if _, err := call(t, b, "fx_nope", `{}`); !errors.Is(err, toolprovider.ErrUnknownTool) {
		t.Errorf("unknown tool: %v", err)
	}
}

func TestEmptyPrefixWithholdsKernelNames(t *testing.T) {
	b, _ := fixtureBridge(t, `{"servers":[{"name":"solo","command":"fixture","prefix":""}]}`, Options{})
	toolprovidertest.CheckAnnouncement(t, b)
	a, _ := b.Announce(context.Background())
	for _, n := range []string{"delegate_task", "skill", "memory_read"} {
		if toolNamed(a, n) != nil {
			t.Errorf("%s announced", n)
		}
		if !strings.Contains(string(a.Environment), `{"server":"solo","tool":"`+n+`","reason":"kernel_name"}`) {
			t.Errorf("%s not withheld in %s", n, a.Environment)
		}
	}
	if toolNamed(a, "files__2fread") == nil || toolNamed(a, "echo") == nil {
		t.Error("ordinary names missing")
	}
}

func TestCallsAndContent(t *testing.T) {
	b, _ := fixtureBridge(t, `{"servers":[{"name":"fx","command":"fixture"}]}`, Options{})
	r, err := call(t, b, "fx_echo", `{"message":"hello"}`)
	if err != nil || strings.Join(texts(r), "") != "hello" || r.Title != "fx: echo" {
		t.Fatalf("echo: %+v %v", r, err)
	}
	if !strings.Contains(string(r.Metadata), `"server":"fx"`) || !strings.Contains(string(r.Metadata), `"protocol_version":"2026-07-28"`) {
		t.Errorf("metadata %s", r.Metadata)
	}
	r, _ = call(t, b, "fx_titled", `{}`)
	if r.Title != "fx: A Titled Tool" {
		t.Errorf("title %q", r.Title)
	}
	r, err = call(t, b, "fx_image", `{}`)
	if err != nil || len(r.Captures) != 1 || r.Blocks[1].Link == nil || r.Blocks[1].Link.Name != "image-1.png" || string(r.Captures[0].Data) != string(mcpbridgetest.PNG) {
		t.Errorf("image: %+v %v", r, err)
	}
	r, _ = call(t, b, "fx_audio", `{}`)
	if len(r.Captures) != 1 || r.Captures[0].Filename != "audio-1.wav" {
		t.Errorf("audio: %+v", r.Captures)
	}
	r, _ = call(t, b, "fx_embedded_text", `{}`)
	if strings.Join(texts(r), "") != "embedded text" || !strings.Contains(string(r.Metadata), `"uri":"fx://doc/1"`) {
		t.Errorf("embedded text: %v %s", texts(r), r.Metadata)
	}
	r, _ = call(t, b, "fx_embedded_blob", `{}`)
	if len(r.Captures) != 1 || r.Captures[0].Filename != "pixel.png" {
		t.Errorf("embedded blob: %+v", r.Captures)
	}
	r, _ = call(t, b, "fx_links", `{}`)
	if len(r.Blocks) != 4 || len(r.Captures) != 2 || r.Captures[0].Filename != "Doc One.txt" || string(r.Captures[0].Data) != "document one" || r.Captures[1].Filename != "Image One.png" {
		t.Errorf("links: %+v", r)
	} else if r.Blocks[1].Link.Description != "a document" || r.Blocks[3].Text == nil || !strings.HasPrefix(*r.Blocks[3].Text, `{"name":"Missing","type":"resource_link","uri":"fx://missing"}`) {
		t.Errorf("links blocks: %+v %v", r.Blocks[1].Link, texts(r))
	}
	r, _ = call(t, b, "fx_structured", `{}`)
	if string(r.Structured) != `{"answer":42}` || strings.Join(texts(r), "") != `{"answer":42}` {
		t.Errorf("structured: %s %v", r.Structured, texts(r))
	}
	r, _ = call(t, b, "fx_structured_only", `{}`)
	if string(r.Structured) != `{"answer":42}` || len(texts(r)) != 0 {
		t.Errorf("structured only: %s %v", r.Structured, texts(r))
	}
	r, err = call(t, b, "fx_tool_error", `{}`)
	if err != nil || !r.IsError || texts(r)[0] != "fixture tool error" {
		t.Errorf("tool error: %+v %v", r, err)
	}
	_, err = call(t, b, "fx_fail_protocol", `{}`)
	var fe *toolprovider.FailedError
	if !errors.As(err, &fe) || fe.Detail != "fixture protocol failure" {
		t.Errorf("protocol failure: %v", err)
	}
}

func TestLinksAsText(t *testing.T) {
	b, _ := fixtureBridge(t, `{"servers":[{"name":"fx","command":"fixture","resource_links":"text"}]}`, Options{})
	r, _ := call(t, b, "fx_links", `{}`)
	if len(r.Captures) != 0 || len(texts(r)) != 4 || texts(r)[1] != `{"description":"a document","mimeType":"text/plain","name":"Doc One","type":"resource_link","uri":"fx://doc/1"}` {
		t.Errorf("links as text: %v", texts(r))
	}
}

func TestCancellationReachesTheServer(t *testing.T) {
	events := filepath.Join(t.TempDir(), "events")
	srv := mcpbridgetest.NewServer(mcpbridgetest.Options{Exit: func(int) {}, Events: events})
	b := newBridge(t, `{"servers":[{"name":"fx","command":"fixture"}]}`, Options{Dial: inMemory(func(string) *mcp.Server { return srv })})
	ctx, cancel := context.WithCancel(context.Background())
	go func() { time.Sleep(200 * time.Millisecond); cancel() }()
	_, err := b.Call(ctx, toolprovider.Call{Tool: "fx_block", Input: json.RawMessage(`{"tag":"t1"}`)})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("block: %v", err)
	}
	deadline := time.Now().Add(time.Second)
	for {
		body, _ := os.ReadFile(events)
		if strings.Contains(string(body), "cancelled t1") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the server's handler was not cancelled within 1 s: %q", body)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if r, err := call(t, b, "fx_echo", `{"message":"after"}`); err != nil || texts(r)[0] != "after" {
		t.Errorf("next call: %v %v", texts(r), err)
	}
}

func TestListChangesRaiseTheRevisionOncePerBurst(t *testing.T) {
	b, srv := fixtureBridge(t, `{"servers":[{"name":"fx","command":"fixture"}]}`, Options{})
	changes := b.AnnouncementChanges(t.Context())
	before := b.AnnouncementRevision()
	for i, n := range []string{"new1", "new2", "new3"} {
		srv.AddTool(&mcp.Tool{Name: n, InputSchema: map[string]any{"type": "object"}}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: n}}}, nil
		})
		_ = i
		time.Sleep(30 * time.Millisecond)
	}
	select {
	case rev := <-changes:
		if rev != before+1 {
			t.Errorf("revision %d after one burst from %d", rev, before)
		}
	case <-time.After(3 * time.Second):
		t.Fatal("no change signalled")
	}
	time.Sleep(400 * time.Millisecond)
	if got := b.AnnouncementRevision(); got != before+1 {
		t.Errorf("revision %d, want %d", got, before+1)
	}
	a, _ := b.Announce(context.Background())
	for _, n := range []string{"fx_new1", "fx_new2", "fx_new3"} {
		if toolNamed(a, n) == nil {
			t.Errorf("%s missing", n)
		}
	}
	if r, err := call(t, b, "fx_new2", `{}`); err != nil || texts(r)[0] != "new2" {
		t.Errorf("new tool call: %v %v", texts(r), err)
	}
	srv.RemoveTools("new1")
	waitFor(t, func() bool { a, _ := b.Announce(context.Background()); return toolNamed(a, "fx_new1") == nil })
	// The name table keeps a dropped name, so a row born before the change reaches the server,
	// which answers for itself.
	var fe *toolprovider.FailedError
	if _, err := call(t, b, "fx_new1", `{}`); !errors.As(err, &fe) || !strings.Contains(fe.Detail, `"new1"`) {
		t.Errorf("dropped tool: %v", err)
	}
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met within 5 s")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestPagination(t *testing.T) {
	srv := mcpbridgetest.NewServer(mcpbridgetest.Options{Exit: func(int) {}, PageSize: 2})
	b := newBridge(t, `{"servers":[{"name":"fxp","command":"fixture"}]}`, Options{Dial: inMemory(func(string) *mcp.Server { return srv })})
	plain, _ := fixtureBridge(t, `{"servers":[{"name":"fxp","command":"fixture"}]}`, Options{})
	a, _ := b.Announce(context.Background())
	p, _ := plain.Announce(context.Background())
	if len(a.Tools) != len(p.Tools) || len(a.Tools) < 20 {
		t.Errorf("paged %d tools, unpaged %d", len(a.Tools), len(p.Tools))
	}
}

func TestProtocolRevisions(t *testing.T) {
	for _, rev := range []string{"2026-07-28", "2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"} {
		t.Run(rev, func(t *testing.T) {
			srv := mcpbridgetest.NewServer(mcpbridgetest.Options{Exit: func(int) {}, Versions: []string{rev}})
			b := newBridge(t, `{"servers":[{"name":"fx","command":"fixture"}]}`, Options{Dial: inMemory(func(string) *mcp.Server { return srv })})
			a, _ := b.Announce(context.Background())
			if !strings.Contains(string(a.Environment), `"protocol_version":"`+rev+`"`) {
				t.Errorf("environment %s", a.Environment)
			}
			r, err := call(t, b, "fx_echo", `{"message":"hi"}`)
			if err != nil || texts(r)[0] != "hi" || !strings.Contains(string(r.Metadata), rev) {
				t.Errorf("echo: %+v %v", r, err)
			}
		})
	}
}

func TestOverridesAndAllowDeny(t *testing.T) {
	b, _ := fixtureBridge(t, `{"servers":[{"name":"fx","command":"fixture","allow":["e*","no_annotations","?udio"],"deny":["env"],
		"tools":{"no_annotations":{"name":"plain_tool","timeout_ms":5000,"description":"overridden",
		"effect":{"kind":"read_only","destructive":false,"effect_scope":"closed","idempotency":"intrinsic","reconciliation":"none"}}}}]}`, Options{})
	a, _ := b.Announce(context.Background())
	var names []string
	for _, tl := range a.Tools {
		names = append(names, tl.Name)
	}
	if strings.Join(names, ",") != "fx_audio,fx_echo,fx_embedded_blob,fx_embedded_text,plain_tool" {
		t.Errorf("names %v", names)
	}
	pt := toolNamed(a, "plain_tool")
	if pt == nil || *pt.TimeoutMS != 5000 || *pt.Description != "overridden" || pt.EffectProfile.Kind != "read_only" {
		t.Errorf("override %+v", pt)
	}
	if r, err := call(t, b, "plain_tool", `{}`); err != nil || texts(r)[0] != "ok" {
		t.Errorf("override call %v %v", texts(r), err)
	}
}

func TestOverGRPC(t *testing.T) {
	b, _ := fixtureBridge(t, `{"servers":[{"name":"fx","command":"fixture"}]}`, Options{})
	c := toolprovidertest.OverGRPC(t, b)
	r, err := c.Call(context.Background(), toolprovider.Call{Tool: "fx_echo", Input: json.RawMessage(`{"message":"grpc"}`)})
	if err != nil || strings.Join(texts(r), "") != "grpc" {
		t.Errorf("over gRPC: %+v %v", r, err)
	}
	_, err = c.Call(context.Background(), toolprovider.Call{Tool: "fx_fail_protocol", Input: json.RawMessage(`{}`)})
	var fe *toolprovider.FailedError
	if !errors.As(err, &fe) || fe.Detail != "fixture protocol failure" {
		t.Errorf("failure over gRPC: %v", err)
	}
}

func TestReannouncementOverGRPC(t *testing.T) {
	b, srv := fixtureBridge(t, `{"servers":[{"name":"fx","command":"fixture"}]}`, Options{})
	c := toolprovidertest.OverGRPC(t, b)
	revs := make(chan uint64, 16)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { _ = c.WatchAnnouncement(ctx, func(r uint64) { revs <- r }) }()
	first := <-revs
	if first != b.AnnouncementRevision() {
		t.Fatalf("first revision %d, bridge at %d", first, b.AnnouncementRevision())
	}
	srv.AddTool(&mcp.Tool{Name: "late", InputSchema: map[string]any{"type": "object"}}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "late"}}}, nil
	})
	select {
	case r := <-revs:
		if r <= first {
			t.Fatalf("revision %d after %d", r, first)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no re-announcement over gRPC")
	}
	_, a, err := c.Describe(context.Background())
	if err != nil || toolNamed(a, "fx_late") == nil {
		t.Errorf("Describe after the change: %v", err)
	}
}

func TestCollisionsWithholdBoth(t *testing.T) {
	orig := hashName
	t.Cleanup(func() { hashName = orig })
	var mu sync.Mutex
	hashName = func(prefix, n string, max int) string {
		mu.Lock()
		defer mu.Unlock()
		if n == "a.b" || n == "a__2eb" {
			return prefix + "same"
		}
		return orig(prefix, n, max)
	}
	b, _ := fixtureBridge(t, `{"servers":[{"name":"fx","command":"fixture"}]}`, Options{})
	a, _ := b.Announce(context.Background())
	if toolNamed(a, "fx_same") != nil {
		t.Error("a colliding name was announced")
	}
	for _, n := range []string{"a.b", "a__2eb"} {
		if !strings.Contains(string(a.Environment), `{"server":"fx","tool":"`+n+`","reason":"collision"}`) {
			t.Errorf("%s not withheld: %s", n, a.Environment)
		}
	}
	// An override equal to a natural name of the one server with prefix "".
	b2, _ := fixtureBridge(t, `{"servers":[{"name":"solo","command":"fixture","prefix":"","tools":{"env":{"name":"echo"}}}]}`, Options{})
	a2, _ := b2.Announce(context.Background())
	if toolNamed(a2, "echo") != nil || !strings.Contains(string(a2.Environment), `"tool":"env","reason":"collision"`) {
		t.Errorf("override collision: %s", a2.Environment)
	}
}

// Each server runs at most its max_concurrency calls at once: a server that hangs holds its own
// slots, a further call for it fails tool_failed once the wait is over (so that the host's slot
// it holds frees, instead of waiting out the call's deadline), and the other servers serve on.
func TestServerConcurrencyBound(t *testing.T) {
	b, err := New(context.Background(), plugin.Config{PluginName: "mcp", DataDir: t.TempDir(), MaxConcurrency: 4,
		Raw: json.RawMessage(`{"servers":[{"name":"hang","command":"x"},{"name":"ok","command":"x"}]}`)},
		Options{ServerWait: 300 * time.Millisecond, Dial: inMemory(func(string) *mcp.Server { return mcpbridgetest.NewServer(mcpbridgetest.Options{}) })})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	var hang *server
	for _, s := range b.servers {
		if s.cfg.Name == "hang" {
			hang = s
		}
		if s.cfg.MaxConcurrency != 2 {
			t.Fatalf("server %s: max_concurrency %d, want the default 4/2", s.cfg.Name, s.cfg.MaxConcurrency)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	for i := 0; i < 2; i++ {
		go func() { _, _ = b.Call(ctx, toolprovider.Call{Tool: "hang_block", Input: json.RawMessage(`{}`)}) }()
	}
	for deadline := time.Now().Add(10 * time.Second); len(hang.slots) < 2; {
		if time.Now().After(deadline) {
			t.Fatal("the blocking calls never took their slots")
		}
		time.Sleep(5 * time.Millisecond)
	}
	_, err = call(t, b, "hang_block", `{}`)
	var fe *toolprovider.FailedError
	if !errors.As(err, &fe) || fe.Detail != busyMessage("hang", 2) {
		t.Fatalf("a third call for a hanging server: %v, want tool_failed %q", err, busyMessage("hang", 2))
	}
	if r, err := call(t, b, "ok_echo", `{"message":"still serving"}`); err != nil || texts(r)[0] != "still serving" {
		t.Fatalf("the other server: %v %v", texts(r), err)
	}
}

// max_concurrency is 1..256 per server, and its default divides the plugin's among the enabled
// servers, at least 1.
func TestServerConcurrencyConfig(t *testing.T) {
	parse := func(host int, servers string) (Config, error) {
		return ParseConfig(plugin.Config{PluginName: "mcp", MaxConcurrency: host, Raw: json.RawMessage(`{"servers":[` + servers + `]}`)})
	}
	three := `{"name":"a","command":"x"},{"name":"b","command":"x","max_concurrency":1},{"name":"c","command":"x"},{"name":"d","command":"x","enabled":false}`
	for host, want := range map[int]int{0: 2, 8: 2, 16: 5, 2: 1} {
		cfg, err := parse(host, three)
		if err != nil {
			t.Fatal(err)
		}
		if cfg.Servers[0].MaxConcurrency != want || cfg.Servers[1].MaxConcurrency != 1 {
			t.Errorf("plugin max_concurrency %d: servers get %d and %d, want %d and 1", host, cfg.Servers[0].MaxConcurrency, cfg.Servers[1].MaxConcurrency, want)
		}
	}
	for _, bad := range []string{`0`, `257`} {
		if _, err := parse(8, `{"name":"a","command":"x","max_concurrency":`+bad+`}`); err == nil || !strings.Contains(err.Error(), "servers[0].max_concurrency: must be 1..256") {
			t.Errorf("max_concurrency %s: %v", bad, err)
		}
	}
}
