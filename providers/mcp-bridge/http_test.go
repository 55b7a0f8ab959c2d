package mcpbridge

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/hashicorp/go-hclog"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/nexuskernel/nexus/providers/mcp-bridge/mcpbridgetest"
	"github.com/nexuskernel/nexus/sdk/plugin"
	"github.com/nexuskernel/nexus/sdk/toolprovider"
)

// httpFixture serves the fixture over streamable HTTP; wrap sees every request first.
func httpFixture(t *testing.T, wrap func(w http.ResponseWriter, r *http.Request) bool) *httptest.Server {
	srv := mcpbridgetest.NewServer(mcpbridgetest.Options{Exit: func(int) {}})
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil)
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if wrap != nil && !wrap(w, r) {
			return
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(ts.Close)
	return ts
}

func httpBridge(t *testing.T, entry string) (*Bridge, error) {
	return httpBridgeWith(t, entry, Options{})
}

func httpBridgeWith(t *testing.T, entry string, opt Options) (*Bridge, error) {
	raw := `{` + shortSupervision + `,"servers":[` + entry + `]}`
	b, err := New(context.Background(), plugin.Config{PluginName: "mcp", DataDir: t.TempDir(), Raw: json.RawMessage(raw)}, opt)
	if err == nil {
		t.Cleanup(func() { b.Close() })
	}
	return b, err
}

func TestHTTPHeadersOnEveryRequest(t *testing.T) {
	var total, bad atomic.Int64
	ts := httpFixture(t, func(w http.ResponseWriter, r *http.Request) bool {
		total.Add(1)
		if r.Header.Get("X-Fixture-Token") != "tok-123" {
			bad.Add(1)
		}
		return true
	})
	var logs syncBuffer
	logger := hclog.New(&hclog.LoggerOptions{Level: hclog.Trace, Output: &logs})
	b, err := httpBridgeWith(t, `{"name":"fxh","url":"`+ts.URL+`/mcp","headers":{"X-Fixture-Token":"tok-123"}}`, Options{Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if logs.Len() == 0 || strings.Contains(logs.String(), "tok-123") {
			t.Errorf("the header's value is in the log (or nothing was logged):\n%s", logs.String())
		}
	}()
	r, err := call(t, b, "fxh_echo", `{"message":"over http"}`)
	if err != nil || texts(r)[0] != "over http" {
		t.Fatalf("echo: %v %v", texts(r), err)
	}
	a, _ := b.Announce(context.Background())
	if strings.Contains(string(a.Environment), "tok-123") || !strings.Contains(string(a.Environment), `"transport":"http"`) {
		t.Errorf("environment %s", a.Environment)
	}
	if total.Load() < 3 || bad.Load() != 0 {
		t.Errorf("%d requests, %d without the header", total.Load(), bad.Load())
	}
}

func TestHTTPForgottenSessionIsReconnected(t *testing.T) {
	var forget atomic.Bool
	var mu sync.Mutex
	refused := 0
	ts := httpFixture(t, func(w http.ResponseWriter, r *http.Request) bool {
		if r.Method == http.MethodPost && r.Header.Get("Mcp-Session-Id") != "" && forget.Load() {
			forget.Store(false)
			mu.Lock()
			refused++
			mu.Unlock()
			http.Error(w, "session not found", http.StatusNotFound)
			return false
		}
		return true
	})
	b, err := httpBridge(t, `{"name":"fxh","url":"`+ts.URL+`/mcp"}`)
	if err != nil {
		t.Fatal(err)
	}
	forget.Store(true)
	r, err := call(t, b, "fxh_echo", `{"message":"again"}`)
	if err != nil || texts(r)[0] != "again" {
		t.Fatalf("after a forgotten session: %v %v", texts(r), err)
	}
	if refused != 1 {
		t.Errorf("%d requests refused", refused)
	}
}

func TestHTTPRedirectToAnotherHostIsRefused(t *testing.T) {
	other := httpFixture(t, nil)
	ts := httptest.NewServer(http.RedirectHandler(strings.Replace(other.URL, "127.0.0.1", "localhost", 1)+"/mcp", http.StatusTemporaryRedirect))
	t.Cleanup(ts.Close)
	b, err := httpBridge(t, `{"name":"fxh","url":"`+ts.URL+`/mcp","connect_timeout":"1s"}`)
	if err != nil {
		t.Fatal(err)
	}
	a, _ := b.Announce(context.Background())
	if len(a.Tools) != 0 {
		t.Errorf("a redirected server announced %d tools", len(a.Tools))
	}
	s := b.byName["fxh"]
	s.mu.Lock()
	last := s.lastErr
	s.mu.Unlock()
	if !strings.Contains(last, "redirect to another scheme, host or port refused") {
		t.Errorf("last error %q", last)
	}
	if _, err := call(t, b, "fxh_echo", `{}`); !errors.Is(err, toolprovider.ErrUnknownTool) {
		t.Errorf("call: %v", err)
	}
}

// syncBuffer is a bytes.Buffer safe for the logger's goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func (s *syncBuffer) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Len()
}
