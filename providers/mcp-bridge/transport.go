package mcpbridge

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

const (
	// stdioTerminate is the grace between closing a server's stdin and SIGTERM.
	stdioTerminate = 2 * time.Second
	// maxEventSize bounds one streamable HTTP event: an 8 MiB capture in base64 with headroom.
	maxEventSize = 32 << 20
	// stderrTailLines is how many stderr lines of a server are kept for crash reports, as the
	// plugin host keeps.
	stderrTailLines = 50
)

// passedEnv is the part of the bridge's environment a stdio server inherits.
var passedEnv = []string{"PATH", "HOME", "TMPDIR", "TZ", "LANG"}

// childEnv is a stdio server's whole environment: passedEnv from the bridge's, when set, then
// the configured entries, which win.
func childEnv(configured map[string]string) []string {
	vals := map[string]string{}
	for _, k := range passedEnv {
		if v, ok := os.LookupEnv(k); ok {
			vals[k] = v
		}
	}
	for k, v := range configured {
		vals[k] = v
	}
	out := make([]string, 0, len(vals))
	for _, k := range sortedKeys(vals) {
		out = append(out, k+"="+vals[k])
	}
	return out
}

// stdioCommand builds the command of a stdio server. A bare name is looked up in the bridge's
// PATH now, at start: not found is a start failure, retried with backoff.
func stdioCommand(s ServerConfig, dataDir string, stderr *tailWriter) (*exec.Cmd, error) {
	path := s.Command
	if !filepath.IsAbs(path) {
		p, err := exec.LookPath(path)
		if err != nil {
			return nil, fmt.Errorf("command %q not found in PATH", s.Command)
		}
		path = p
	}
	dir := s.Cwd
	if dir == "" {
		dir = filepath.Join(dataDir, "work", s.Name)
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return nil, fmt.Errorf("working directory: %w", err)
		}
	} else if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		return nil, fmt.Errorf("working directory %s does not exist", dir)
	}
	cmd := exec.Command(path, s.Args...)
	cmd.Env = childEnv(s.Env)
	cmd.Dir = dir
	cmd.Stderr = stderr
	cmd.SysProcAttr = procAttr()
	return cmd, nil
}

// httpClient sends the configured headers on every request and refuses redirects to another
// scheme, host or port. It has no overall timeout: the server-to-client stream is long-lived
// and contexts bound every request.
func httpClient(s ServerConfig) *http.Client {
	return &http.Client{
		Transport: &headerTransport{headers: s.Headers, base: http.DefaultTransport},
		CheckRedirect: func(req *http.Request, via []*http.Request) error {
			first := via[0].URL
			if req.URL.Scheme != first.Scheme || req.URL.Host != first.Host {
				return errors.New("redirect to another scheme, host or port refused")
			}
			if len(via) >= 10 {
				return errors.New("too many redirects")
			}
			return nil
		},
	}
}

type headerTransport struct {
	headers map[string]string
	base    http.RoundTripper
}

func (t *headerTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if len(t.headers) > 0 {
		req = req.Clone(req.Context())
		for k, v := range t.headers {
			req.Header.Set(k, v)
		}
	}
	return t.base.RoundTrip(req)
}

// transportFor builds the MCP transport of one connect.
func transportFor(s ServerConfig, dataDir string, stderr *tailWriter) (mcp.Transport, *exec.Cmd, error) {
	if s.URL != "" {
		return &mcp.StreamableClientTransport{Endpoint: s.URL, HTTPClient: httpClient(s), MaxEventSize: maxEventSize}, nil, nil
	}
	cmd, err := stdioCommand(s, dataDir, stderr)
	if err != nil {
		return nil, nil, err
	}
	return &stdioTransport{cmd: cmd, server: s.Name}, cmd, nil
}

// tailWriter logs a server's stderr line by line at debug and keeps the last lines.
type tailWriter struct {
	log     hclog.Logger
	mu      sync.Mutex
	partial []byte
	lines   []string
}

func (w *tailWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.partial = append(w.partial, p...)
	for {
		i := strings.IndexByte(string(w.partial), '\n')
		if i < 0 {
			break
		}
		line := strings.TrimRight(string(w.partial[:i]), "\r")
		w.partial = w.partial[i+1:]
		w.log.Debug(line)
		w.lines = append(w.lines, line)
		if len(w.lines) > stderrTailLines {
			w.lines = w.lines[len(w.lines)-stderrTailLines:]
		}
	}
	if len(w.partial) > 64<<10 {
		w.partial = w.partial[:0]
	}
	return len(p), nil
}

// tail is the last stderr lines, joined.
func (w *tailWriter) tail() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return strings.Join(w.lines, "\n")
}

// waitCtx sleeps d or until ctx ends; false when ctx ended.
func waitCtx(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
