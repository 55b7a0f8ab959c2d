//go:build e2e

package mcpbridge

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/nexuskernel/nexus/providers/mcp-bridge/mcpbridgetest"
	"github.com/nexuskernel/nexus/sdk/plugin"
	"github.com/nexuskernel/nexus/sdk/toolprovider"
	"github.com/nexuskernel/nexus/sdk/toolprovider/toolprovidertest"
)

// The end-to-end suite runs the bridge against public MCP servers nobody on the project wrote,
// installed from npm at pinned versions (make test-e2e).

func publicBridge(t *testing.T, servers ...any) *Bridge {
	t.Helper()
	raw, _ := json.Marshal(map[string]any{
		"supervision": map[string]any{"backoff_initial": "100ms", "backoff_max": "1s", "breaker_window": "1m"},
		"servers":     servers,
	})
	b, err := New(context.Background(), plugin.Config{PluginName: "mcp", DataDir: t.TempDir(), Raw: raw}, Options{})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() { b.Close() })
	toolprovidertest.CheckAnnouncement(t, b)
	return b
}

func everything(ps mcpbridgetest.PublicServers) map[string]any {
	return map[string]any{
		"name": "every", "command": ps.Node, "args": []string{ps.Everything, "stdio"},
		"env":   map[string]string{"GREETING": "hi"},
		"deny":  []string{"toggle-*", "gzip-file-as-resource", "simulate-research-query"},
		"tools": map[string]any{"trigger-long-running-operation": map[string]any{"timeout_ms": 2000}},
	}
}

func TestPublicEverythingOverStdio(t *testing.T) {
	ps := mcpbridgetest.InstallPublicServers(t)
	b := publicBridge(t, everything(ps))
	a, _ := b.Announce(context.Background())
	for _, n := range []string{"every_echo", "every_get-tiny-image", "every_get-structured-content", "every_get-resource-links"} {
		if toolNamed(a, n) == nil {
			t.Errorf("%s not announced", n)
		}
	}
	for _, n := range []string{"every_toggle-simulated-logging", "every_gzip-file-as-resource", "every_simulate-research-query"} {
		if toolNamed(a, n) != nil {
			t.Errorf("denied %s announced", n)
		}
	}
	if tl := toolNamed(a, "every_trigger-long-running-operation"); tl == nil || *tl.TimeoutMS != 2000 {
		t.Errorf("trigger-long-running-operation %+v", tl)
	}
	if p, _ := toolNamed(a, "every_echo").EffectProfile.Profile(); p.Kind != "read_only" || p.Destructive || p.EffectScope != "closed" || p.Idempotency != "intrinsic" {
		t.Errorf("echo profile %+v", p)
	}
	if !strings.Contains(string(a.Environment), `"protocol_version":"2025-11-25"`) {
		t.Errorf("environment %s", a.Environment)
	}

	r, err := call(t, b, "every_echo", `{"message":"hello"}`)
	if err != nil || strings.Join(texts(r), "") != "Echo: hello" || r.Title != "every: Echo Tool" || !strings.Contains(string(r.Metadata), `"server":"every"`) {
		t.Errorf("echo: %+v %v", r, err)
	}
	r, err = call(t, b, "every_get-sum", `{"a":"x"}`)
	if err != nil || !r.IsError || !strings.HasPrefix(strings.Join(texts(r), ""), "MCP error -32602: Input validation error") {
		t.Errorf("get-sum: %+v %v", r, err)
	}

	r, err = call(t, b, "every_get-tiny-image", `{}`)
	if err != nil || len(r.Blocks) != 3 || r.Blocks[1].Link == nil || r.Blocks[1].Link.Name != "image-1.png" || len(r.Captures) != 1 {
		t.Fatalf("get-tiny-image: %+v %v", r, err)
	}
	if sha256.Sum256(r.Captures[0].Data) != directImageSum(t, ps) {
		t.Error("the captured image differs from the one a direct client receives")
	}

	r, _ = call(t, b, "every_get-structured-content", `{"location":"Chicago"}`)
	const weather = `{"conditions":"Light rain / drizzle","humidity":82,"temperature":36}`
	if string(r.Structured) != weather || strings.Count(strings.Join(texts(r), "\n"), "drizzle") != 1 {
		t.Errorf("structured content: %s, text %v", r.Structured, texts(r))
	}

	r, _ = call(t, b, "every_get-resource-links", `{"count":2}`)
	if len(r.Captures) != 2 || r.Captures[0].Filename != "Blob Resource 1.txt" || r.Captures[1].Filename != "Text Resource 2.txt" ||
		!strings.HasPrefix(string(r.Captures[0].Data), "Resource 1: This is a base64 blob") || !strings.HasPrefix(string(r.Captures[1].Data), "Resource 2: This is a plaintext resource") {
		t.Errorf("resource links: %+v", r.Captures)
	}
	if !strings.Contains(string(r.Metadata), `{"block":1,"uri":"demo://resource/dynamic/blob/1"}`) {
		t.Errorf("sources: %s", r.Metadata)
	}

	r, _ = call(t, b, "every_get-resource-reference", `{"resourceType":"Blob","resourceId":2}`)
	if len(r.Captures) != 1 || r.Captures[0].Filename != "resource-1.txt" || r.Blocks[1].Link == nil {
		t.Errorf("embedded blob: %+v", r)
	}
	r, _ = call(t, b, "every_get-resource-reference", `{"resourceType":"Text","resourceId":1}`)
	if len(texts(r)) != 3 || len(r.Captures) != 0 {
		t.Errorf("embedded text: %v", texts(r))
	}

	r, _ = call(t, b, "every_get-env", `{}`)
	var env map[string]any
	if err := json.Unmarshal([]byte(strings.Join(texts(r), "")), &env); err != nil || env["GREETING"] != "hi" {
		t.Fatalf("get-env: %v %v", texts(r), err)
	}
	for k := range env {
		switch k {
		case "PATH", "HOME", "TMPDIR", "TZ", "LANG", "GREETING":
		default:
			t.Errorf("the server sees %s", k)
		}
	}
}

// directImageSum is the SHA-256 of the image a plain SDK client receives from get-tiny-image.
func directImageSum(t *testing.T, ps mcpbridgetest.PublicServers) [32]byte {
	cmd := exec.Command(ps.Node, ps.Everything, "stdio")
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "direct", Version: "1"}, &mcp.ClientOptions{Capabilities: &mcp.ClientCapabilities{}}).
		Connect(context.Background(), &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "get-tiny-image", Arguments: map[string]any{}})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range res.Content {
		if img, ok := c.(*mcp.ImageContent); ok {
			return sha256.Sum256(img.Data)
		}
	}
	t.Fatal("no image from a direct client")
	return [32]byte{}
}

func TestPublicEverythingOverHTTP(t *testing.T) {
	ps := mcpbridgetest.InstallPublicServers(t)
	port := freePort(t)
	cmd := exec.Command(ps.Node, ps.Everything, "streamableHttp")
	cmd.Env = append(os.Environ(), "PORT="+port)
	stderr, _ := cmd.StderrPipe()
	stdout, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	listening := make(chan struct{})
	var once sync.Once
	for _, r := range []any{stderr, stdout} {
		go func() {
			sc := bufio.NewScanner(r.(interface{ Read([]byte) (int, error) }))
			for sc.Scan() {
				if strings.Contains(strings.ToLower(sc.Text()), "listening on port") {
					once.Do(func() { close(listening) })
				}
			}
		}()
	}
	select {
	case <-listening:
	case <-time.After(30 * time.Second):
		t.Fatal("the everything server did not start listening")
	}
	b := publicBridge(t, map[string]any{"name": "web", "url": "http://127.0.0.1:" + port + "/mcp",
		"allow": []string{"echo", "get-resource-links"}, "resource_links": "text"})
	a, _ := b.Announce(context.Background())
	if len(a.Tools) != 2 || toolNamed(a, "web_echo") == nil || toolNamed(a, "web_get-resource-links") == nil {
		t.Fatalf("announced %v", a.Tools)
	}
	r, err := call(t, b, "web_echo", `{"message":"over http"}`)
	if err != nil || strings.Join(texts(r), "") != "Echo: over http" {
		t.Errorf("echo: %+v %v", r, err)
	}
	r, _ = call(t, b, "web_get-resource-links", `{"count":2}`)
	all := strings.Join(texts(r), "\n")
	if len(r.Captures) != 0 || !strings.Contains(all, `"uri":"demo://resource/dynamic/blob/1"`) || !strings.Contains(all, `"uri":"demo://resource/dynamic/text/2"`) {
		t.Errorf("links as text: %v", texts(r))
	}
}

func freePort(t *testing.T) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return fmt.Sprint(l.Addr().(*net.TCPAddr).Port)
}

func TestPublicFilesystemAndMemoryInOneBridge(t *testing.T) {
	ps := mcpbridgetest.InstallPublicServers(t)
	root := t.TempDir()
	if err := os.WriteFile(filepath.Join(root, "notes.txt"), []byte("hello from nexus\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "pixel.png"), mcpbridgetest.PNG, 0o600); err != nil {
		t.Fatal(err)
	}
	b := publicBridge(t,
		map[string]any{"name": "fs", "command": ps.Node, "args": []string{ps.Filesystem, root}},
		map[string]any{"name": "mem", "command": ps.Node, "args": []string{ps.Memory},
			"env": map[string]string{"MEMORY_FILE_PATH": filepath.Join(t.TempDir(), "memory.jsonl")}})
	a, _ := b.Announce(context.Background())
	for _, tl := range a.Tools {
		if !strings.HasPrefix(tl.Name, "fs_") && !strings.HasPrefix(tl.Name, "mem_") {
			t.Errorf("%s has neither prefix", tl.Name)
		}
	}
	if toolNamed(a, "fs_read_text_file") == nil || toolNamed(a, "mem_read_graph") == nil {
		t.Fatalf("announced %d tools", len(a.Tools))
	}
	if p, _ := toolNamed(a, "fs_write_file").EffectProfile.Profile(); p.Kind != "write" || !p.Destructive || p.Idempotency != "intrinsic" {
		t.Errorf("write_file profile %+v", p)
	}
	// One parallel round across both servers.
	type out struct {
		r   toolprovider.Result
		err error
	}
	calls := map[string]string{
		"fs_read_text_file":  `{"path":"` + filepath.Join(root, "notes.txt") + `"}`,
		"fs_read_media_file": `{"path":"` + filepath.Join(root, "pixel.png") + `"}`,
		"mem_read_graph":     `{}`,
		"fs_outside":         `{"path":"/etc/hostname"}`,
	}
	results := map[string]out{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for name, input := range calls {
		wg.Add(1)
		go func() {
			defer wg.Done()
			tool := name
			if name == "fs_outside" {
				tool = "fs_read_text_file"
			}
			r, err := call(t, b, tool, input)
			mu.Lock()
			results[name] = out{r, err}
			mu.Unlock()
		}()
	}
	wg.Wait()
	if o := results["fs_read_text_file"]; o.err != nil || strings.Join(texts(o.r), "") != "hello from nexus\n" || string(o.r.Structured) != `{"content":"hello from nexus\n"}` {
		t.Errorf("read_text_file: %+v %v", o.r, o.err)
	}
	if o := results["fs_outside"]; o.err != nil || !o.r.IsError || !strings.Contains(strings.Join(texts(o.r), ""), "Access denied - path outside allowed directories") {
		t.Errorf("outside the root: %+v %v", o.r, o.err)
	}
	if o := results["fs_read_media_file"]; o.err != nil || len(o.r.Captures) != 1 || string(o.r.Captures[0].Data) != string(mcpbridgetest.PNG) || o.r.Blocks[0].Link.MimeType != "image/png" {
		t.Errorf("read_media_file: %+v %v", o.r, o.err)
	}
	if o := results["mem_read_graph"]; o.err != nil || o.r.IsError {
		t.Errorf("read_graph: %+v %v", o.r, o.err)
	}
}

func TestPublicServerKilledMidCall(t *testing.T) {
	ps := mcpbridgetest.InstallPublicServers(t)
	b := publicBridge(t, everything(ps))
	s := b.byName["every"]
	s.mu.Lock()
	pid := s.pid
	s.mu.Unlock()
	go func() {
		time.Sleep(500 * time.Millisecond)
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}()
	start := time.Now()
	_, err := call(t, b, "every_trigger-long-running-operation", `{"duration":10,"steps":5}`)
	var lost *LostAnswerError
	if !errors.As(err, &lost) {
		t.Fatalf("killed mid-call: %v", err)
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("the lost answer took %s", d)
	}
	// The server is restarted and serves again.
	waitFor(t, func() bool {
		r, err := call(t, b, "every_echo", `{"message":"back"}`)
		return err == nil && strings.Join(texts(r), "") == "Echo: back"
	})
}
