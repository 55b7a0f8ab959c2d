package mcpbridgetest

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Environment variables the fixture reads.
const (
	// EnvScenario selects the scenario; when set, MaybeServe serves it over stdio and exits.
	EnvScenario = "NEXUS_TEST_MCP_FIXTURE"
	// EnvEvents names a file the block tool appends "cancelled <tag>" to.
	EnvEvents = "FX_EVENTS"
	// EnvState names a directory for crash_once's marker.
	EnvState = "FX_STATE"
	// EnvExitIf names a file whose presence makes any scenario exit at start, so a test can
	// make a server fail without changing its configuration.
	EnvExitIf = "FX_EXIT_IF"
	// EnvDelay is how long slow-start's first start waits before serving (a Go duration;
	// default 15s).
	EnvDelay = "FX_DELAY"
)

// CrashStatus is the exit status of the crash tools.
const CrashStatus = 3

// LongName is the fixture's 81-character dotted name.
const LongName = "analytics.reports.generate_quarterly_revenue_breakdown_by_region_and_product_line"

// NamedTools are the fixture tools whose MCP names need encoding or are kernel names; each
// answers with its own name.
var NamedTools = []string{"files/read", "weird name", "résumé", LongName, "a.b", "a__2eb", "delegate_task", "skill", "memory_read"}

// PNG is a 2×2 PNG image.
var PNG = func() []byte {
	img := image.NewRGBA(image.Rect(0, 0, 2, 2))
	img.Set(0, 0, color.RGBA{255, 0, 0, 255})
	img.Set(1, 1, color.RGBA{0, 0, 255, 255})
	var b bytes.Buffer
	_ = png.Encode(&b, img)
	return b.Bytes()
}()

// WAV is a short silent WAV file.
var WAV = func() []byte {
	var b bytes.Buffer
	data := make([]byte, 64)
	b.WriteString("RIFF")
	_ = writeLE(&b, uint32(36+len(data)), 4)
	b.WriteString("WAVEfmt ")
	_ = writeLE(&b, 16, 4)
	_ = writeLE(&b, 1, 2)
	_ = writeLE(&b, 1, 2)
	_ = writeLE(&b, 8000, 4)
	_ = writeLE(&b, 8000, 4)
	_ = writeLE(&b, 1, 2)
	_ = writeLE(&b, 8, 2)
	b.WriteString("data")
	_ = writeLE(&b, uint32(len(data)), 4)
	b.Write(data)
	return b.Bytes()
}()

func writeLE(b *bytes.Buffer, v uint32, n int) error {
	for i := 0; i < n; i++ {
		b.WriteByte(byte(v >> (8 * i)))
	}
	return nil
}

// Options change a fixture server built in process.
type Options struct {
	// Exit replaces os.Exit for the crash tools (in process there is no process to end).
	Exit func(code int)
	// PageSize, when positive, pages tools/list.
	PageSize int
	// Versions restricts the revisions the server negotiates.
	Versions []string
	// Events and State replace FX_EVENTS and FX_STATE.
	Events, State string
	// Seen, when set, receives every tool call's name (for tests of HTTP headers and names).
	Seen func(tool string)
}

func boolp(b bool) *bool { return &b }

var readOnly = &mcp.ToolAnnotations{ReadOnlyHint: true, IdempotentHint: true, DestructiveHint: boolp(false), OpenWorldHint: boolp(false)}

func text(s string) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}}
}

type args struct {
	Message string `json:"message"`
	N       int    `json:"n"`
	Tag     string `json:"tag"`
}

func parse(req *mcp.CallToolRequest) args {
	var a args
	if req != nil && req.Params != nil {
		_ = json.Unmarshal(req.Params.Arguments, &a)
	}
	return a
}

var objectSchema = json.RawMessage(`{"type":"object","properties":{"message":{"type":"string"},"n":{"type":"integer"},"tag":{"type":"string"}}}`)

// NewServer builds the basic fixture: the tools the bridge's tests call.
func NewServer(opt Options) *mcp.Server {
	if opt.Exit == nil {
		opt.Exit = os.Exit
	}
	if opt.Events == "" {
		opt.Events = os.Getenv(EnvEvents)
	}
	if opt.State == "" {
		opt.State = os.Getenv(EnvState)
	}
	so := &mcp.ServerOptions{PageSize: opt.PageSize, SupportedProtocolVersions: opt.Versions}
	s := mcp.NewServer(&mcp.Implementation{Name: "nexus-fixture", Version: "1.0.0"}, so)
	add := func(name string, ann *mcp.ToolAnnotations, h mcp.ToolHandler) {
		s.AddTool(&mcp.Tool{Name: name, Description: "fixture tool " + name, InputSchema: objectSchema, Annotations: ann}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			if opt.Seen != nil {
				opt.Seen(name)
			}
			return h(ctx, req)
		})
	}
	add("echo", readOnly, func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return text(parse(req).Message), nil
	})
	s.AddTool(&mcp.Tool{Name: "titled", Title: "A Titled Tool", Description: "has a title", InputSchema: objectSchema, Annotations: readOnly},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) { return text("titled"), nil })
	add("image", readOnly, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "an image:"}, &mcp.ImageContent{Data: PNG, MIMEType: "image/png"}}}, nil
	})
	add("audio", readOnly, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.AudioContent{Data: WAV, MIMEType: "audio/wav"}}}, nil
	})
	add("embedded_text", readOnly, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.EmbeddedResource{Resource: &mcp.ResourceContents{URI: "fx://doc/1", MIMEType: "text/plain", Text: "embedded text"}}}}, nil
	})
	add("embedded_blob", readOnly, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.EmbeddedResource{Resource: &mcp.ResourceContents{URI: "fx://files/pixel.png", MIMEType: "image/png", Blob: PNG}}}}, nil
	})
	add("links", readOnly, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{
			&mcp.TextContent{Text: "three links"},
			&mcp.ResourceLink{URI: "fx://doc/1", Name: "Doc One", MIMEType: "text/plain", Description: "a document"},
			&mcp.ResourceLink{URI: "fx://img/1", Name: "Image One", MIMEType: "image/png"},
			&mcp.ResourceLink{URI: "fx://missing", Name: "Missing"},
		}}, nil
	})
	s.AddResource(&mcp.Resource{URI: "fx://doc/1", Name: "Doc One", MIMEType: "text/plain"}, func(context.Context, *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: "fx://doc/1", MIMEType: "text/plain", Text: "document one"}}}, nil
	})
	s.AddResource(&mcp.Resource{URI: "fx://img/1", Name: "Image One", MIMEType: "image/png"}, func(context.Context, *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: "fx://img/1", MIMEType: "image/png", Blob: PNG}}}, nil
	})
	add("structured", readOnly, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: `{"answer":42}`}}, StructuredContent: map[string]any{"answer": 42}}, nil
	})
	add("structured_only", readOnly, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{}, StructuredContent: map[string]any{"answer": 42}}, nil
	})
	add("tool_error", readOnly, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		r := text("fixture tool error")
		r.IsError = true
		return r, nil
	})
	add("fail_protocol", readOnly, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return nil, &jsonrpc.Error{Code: -32000, Message: "fixture protocol failure"}
	})
	var eventsMu sync.Mutex
	add("block", readOnly, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		<-ctx.Done()
		if opt.Events != "" {
			eventsMu.Lock()
			f, err := os.OpenFile(opt.Events, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
			if err == nil {
				fmt.Fprintf(f, "cancelled %s\n", parse(req).Tag)
				f.Close()
			}
			eventsMu.Unlock()
		}
		return nil, ctx.Err()
	})
	add("crash", &mcp.ToolAnnotations{OpenWorldHint: boolp(false)}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		opt.Exit(CrashStatus)
		return text("unreachable"), nil
	})
	add("crash_once", readOnly, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		marker := filepath.Join(opt.State, "crash_once")
		if _, err := os.Stat(marker); err != nil {
			_ = os.WriteFile(marker, []byte("1"), 0o600)
			opt.Exit(CrashStatus)
		}
		return text("survived"), nil
	})
	add("grow", nil, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		s.AddTool(&mcp.Tool{Name: "grown", Description: "added by grow", InputSchema: objectSchema, Annotations: readOnly},
			func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) { return text("grown"), nil })
		return text("grew"), nil
	})
	add("shrink", nil, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		s.RemoveTools("grown")
		return text("shrank"), nil
	})
	add("env", readOnly, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		env := os.Environ()
		sort.Strings(env)
		return text(strings.Join(env, "\n")), nil
	})
	add("big_text", readOnly, func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return text(strings.Repeat("x", parse(req).N)), nil
	})
	add("many_images", readOnly, func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		var c []mcp.Content
		for i := 0; i < parse(req).N; i++ {
			c = append(c, &mcp.ImageContent{Data: PNG, MIMEType: "image/png"})
		}
		return &mcp.CallToolResult{Content: c}, nil
	})
	s.AddTool(&mcp.Tool{Name: "no_annotations", Description: "no hints", InputSchema: objectSchema},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) { return text("ok"), nil })
	for _, n := range NamedTools {
		s.AddTool(&mcp.Tool{Name: n, Description: "answers its name", InputSchema: objectSchema, Annotations: readOnly},
			func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) { return text(n), nil })
	}
	return s
}

// MaybeServe serves the scenario named by NEXUS_TEST_MCP_FIXTURE over stdio and exits, when
// it is set; otherwise it returns. A test binary calls it first thing in TestMain.
func MaybeServe() {
	scenario := os.Getenv(EnvScenario)
	if scenario == "" {
		return
	}
	os.Exit(serve(scenario))
}

func serve(scenario string) int {
	ctx := context.Background()
	opt := Options{}
	if f := os.Getenv(EnvExitIf); f != "" {
		if _, err := os.Stat(f); err == nil {
			fmt.Fprintln(os.Stderr, "fixture: exiting at start:", f, "exists")
			return 1
		}
	}
	switch {
	case scenario == "basic":
	case scenario == "paged":
		opt.PageSize = 2
	case strings.HasPrefix(scenario, "versions="):
		opt.Versions = []string{strings.TrimPrefix(scenario, "versions=")}
	case scenario == "exit-at-start":
		fmt.Fprintln(os.Stderr, "fixture: exiting at start")
		return 1
	case scenario == "slow-start":
		// The first start (no marker in FX_STATE yet) is slow; later ones serve at once.
		marker := filepath.Join(os.Getenv(EnvState), "slow-start")
		if _, err := os.Stat(marker); err != nil {
			_ = os.WriteFile(marker, []byte("1"), 0o600)
			d, err := time.ParseDuration(os.Getenv(EnvDelay))
			if err != nil {
				d = 15 * time.Second
			}
			time.Sleep(d)
		}
	case scenario == "stdout-garbage":
		fmt.Fprintln(os.Stdout, "this is not JSON-RPC")
	case scenario == "raw-bad-content":
		return rawBadContent(false)
	case scenario == "raw-oversize":
		return rawBadContent(true)
	default:
		fmt.Fprintf(os.Stderr, "fixture: unknown scenario %q\n", scenario)
		return 2
	}
	if err := NewServer(opt).Run(ctx, &mcp.StdioTransport{}); err != nil {
		fmt.Fprintln(os.Stderr, "fixture:", err)
	}
	return 0
}

// OversizeBytes is the text the raw-oversize scenario's "huge" answers with: past 16 MiB, the
// bridge's bound on one message, by a little.
const OversizeBytes = 16<<20 + 1

// rawBadContent is a hand-written JSON-RPC loop: server/discover is Method not found, it
// negotiates 2025-06-18, lists one tool "bad" and answers its call with a content block of a
// type MCP does not have. With oversize (the raw-oversize scenario) it lists "huge" too, whose
// call it answers with OversizeBytes of text in one message, and "bad" answers "fine" in a
// text block.
func rawBadContent(oversize bool) int {
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(make([]byte, 1<<20), 1<<20)
	out := json.NewEncoder(os.Stdout)
	for in.Scan() {
		var msg struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		if json.Unmarshal(in.Bytes(), &msg) != nil || len(msg.ID) == 0 {
			continue
		}
		reply := map[string]any{"jsonrpc": "2.0", "id": msg.ID}
		switch msg.Method {
		case "initialize":
			reply["result"] = map[string]any{"protocolVersion": "2025-06-18", "capabilities": map[string]any{"tools": map[string]any{}}, "serverInfo": map[string]any{"name": "fixture-raw", "version": "1.0.0"}}
		case "tools/list":
			tools := []any{map[string]any{"name": "bad", "description": "answers a block MCP does not have", "inputSchema": map[string]any{"type": "object"}}}
			if oversize {
				tools = append(tools, map[string]any{"name": "huge", "description": "answers over 16 MiB", "inputSchema": map[string]any{"type": "object"}})
			}
			reply["result"] = map[string]any{"tools": tools}
		case "tools/call":
			reply["result"] = map[string]any{"content": []any{map[string]any{"type": "blob", "data": "AAAA"}}}
			if oversize {
				var call struct {
					Params struct {
						Name string `json:"name"`
					} `json:"params"`
				}
				_ = json.Unmarshal(in.Bytes(), &call)
				text := "fine"
				if call.Params.Name == "huge" {
					text = strings.Repeat("x", OversizeBytes)
				}
				reply["result"] = map[string]any{"content": []any{map[string]any{"type": "text", "text": text}}}
			}
		case "ping":
			reply["result"] = map[string]any{}
		default:
			reply["error"] = map[string]any{"code": -32601, "message": "Method not found"}
		}
		if err := out.Encode(reply); err != nil {
			return 1
		}
	}
	return 0
}
