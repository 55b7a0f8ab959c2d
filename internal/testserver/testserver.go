package testserver

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/nexuskernel/nexus/core/server"
	"github.com/nexuskernel/nexus/core/store"
	"github.com/nexuskernel/nexus/core/store/storetest"
	"github.com/nexuskernel/nexus/internal/cli"
	"github.com/nexuskernel/nexus/plugins"
	"github.com/nexuskernel/nexus/sdk/client"
)

// helperEnv marks a re-executed test binary that must act as the nexus command.
const helperEnv = "NEXUS_TESTSERVER_HELPER"

// Main is a TestMain body: it runs the nexus command line when the binary was re-executed as a
// server, and the tests otherwise.
func Main(m *testing.M) { MainThen(m, nil) }

// MainThen is Main with a clean-up that runs after the tests (not in a re-executed server).
func MainThen(m *testing.M, after func()) {
	if os.Getenv(helperEnv) == "1" {
		os.Exit(cli.Main(os.Args[1:]))
	}
	code := m.Run()
	if after != nil {
		after()
	}
	os.Exit(code)
}

// Options choose how the server runs.
type Options struct {
	// Dialect selects the store (default SQLite).
	Dialect store.Dialect
	// Subprocess runs the real command line in a child process (the test package's TestMain must
	// call Main).
	Subprocess bool
	// Config is the text of an HCL settings file; empty means none.
	Config string
	// Env adds environment variables (subprocess) or getenv answers (in-process).
	Env map[string]string
	// Peer starts this instance on Peer's PostgreSQL database (its own data directory), as a
	// second instance of one deployment; the admin token is Peer's. SQLite serves one instance
	// only, so Peer must run on PostgreSQL.
	Peer *Instance
	// Now replaces the in-process server's clock, which every deadline, the expiry rule and
	// upload reclamation read, so that a test moves past them without waiting (NewClock).
	// Subprocess servers read the real clock.
	Now func() time.Time
	// EventKeepAlive shortens the in-process server's member stream keep-alive interval.
	EventKeepAlive time.Duration
	// PluginTimings shortens the in-process server's plugin supervisor clocks (backoff, breaker,
	// inbox poll); zero fields take the values (docs/plugins.md#crashes).
	PluginTimings plugins.Timings
	// LogLevel is the in-process server's log level. Zero means debug, whose lines a failing test
	// prints; a benchmark takes the operator's default, info, so that it does not measure a debug
	// line per request.
	LogLevel hclog.Level
	// PluginPlane wraps the in-process server's plugin executor plane (server.Options).
	PluginPlane func(plugins.ExecutorPlane) plugins.ExecutorPlane
	// NotReadyBecause, when set, is a reason the server is expected to give for not being
	// ready (docs/operations.md#health): Start and Restart wait until /readyz answers 503 with
	// a reason containing it, instead of 200.
	NotReadyBecause string
}

// Clock is a settable clock for Options.Now: it runs with real time, shifted by Advance.
type Clock struct {
	mu     sync.Mutex
	offset time.Duration
}

// NewClock returns a clock that reads the real time until advanced.
func NewClock() *Clock { return &Clock{} }

// Now is the real time plus every Advance so far.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return time.Now().Add(c.offset)
}

// Advance moves the clock forward by d.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	c.offset += d
	c.mu.Unlock()
}

// Instance is one running server (or a stopped one that can be restarted on the same store).
type Instance struct {
	t           testing.TB
	opts        Options
	DataDir     string
	DatabaseURL string
	configPath  string
	// URL is the base URL, for example http://127.0.0.1:41234.
	URL string
	// AdminToken is the bootstrap user's token.
	AdminToken string

	mu   sync.Mutex
	logs bytes.Buffer
	stop func() error
	kill func()
	// proc is the running subprocess; nil in-process or when stopped.
	proc   *os.Process
	exited chan error
	// srv is the running in-process server; nil for a subprocess or a stopped instance.
	srv *server.Server
}

// Start starts a server on a fresh store and waits until it is ready. It is stopped when the test
// ends.
func Start(t testing.TB, opts Options) *Instance {
	t.Helper()
	if opts.Dialect == "" {
		opts.Dialect = store.SQLite
	}
	if opts.Peer != nil {
		if opts.Peer.opts.Dialect != store.Postgres {
			t.Fatal("testserver: a peer shares a PostgreSQL database; SQLite serves one instance")
		}
		opts.Dialect = store.Postgres
	}
	in := &Instance{t: t, opts: opts, DataDir: filepath.Join(t.TempDir(), "data")}
	switch {
	case opts.Peer != nil:
		in.DatabaseURL = opts.Peer.DatabaseURL
	case opts.Dialect == store.Postgres:
		in.DatabaseURL = storetest.FreshURL(t, store.Postgres)
	}
	if opts.Config != "" {
		in.configPath = filepath.Join(t.TempDir(), "nexus.hcl")
		if err := os.WriteFile(in.configPath, []byte(opts.Config), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("server log:\n%s", in.Logs())
		}
		in.Stop()
	})
	in.start()
	if opts.Peer != nil {
		// The database was bootstrapped by the peer; this instance wrote no token file.
		in.AdminToken = opts.Peer.AdminToken
		return in
	}
	tok, err := os.ReadFile(filepath.Join(in.DataDir, "admin.token"))
	if err != nil {
		t.Fatalf("admin token: %v", err)
	}
	in.AdminToken = strings.TrimSpace(string(tok))
	return in
}

// ConfigPath is the HCL settings file the server reads (Options.Config); "" when none.
func (in *Instance) ConfigPath() string { return in.configPath }

// Server is the running in-process server, for tests that reach its services directly (the
// push hub, the upload service); nil for a subprocess or a stopped instance.
func (in *Instance) Server() *server.Server {
	in.mu.Lock()
	defer in.mu.Unlock()
	return in.srv
}

// Logs returns what the server has logged so far.
func (in *Instance) Logs() string {
	in.mu.Lock()
	defer in.mu.Unlock()
	return in.logs.String()
}

type lockedWriter struct{ in *Instance }

func (w lockedWriter) Write(p []byte) (int, error) {
	w.in.mu.Lock()
	defer w.in.mu.Unlock()
	return w.in.logs.Write(p)
}

// Client returns an API client with the admin token.
func (in *Instance) Client() *client.Client { return in.ClientWith(in.AdminToken) }

// ClientWith returns an API client with another token.
func (in *Instance) ClientWith(token string) *client.Client { return client.New(in.URL, token) }

func (in *Instance) settingsArgs(addr string) []string {
	args := []string{"serve", "--listen", addr, "--data-dir", in.DataDir, "--log-level", "debug"}
	if in.DatabaseURL != "" {
		args = append(args, "--database-url", in.DatabaseURL)
	}
	if in.configPath != "" {
		args = append(args, "--config", in.configPath)
	}
	return args
}

func (in *Instance) start() {
	in.t.Helper()
	in.exited = make(chan error, 1)
	if in.opts.Subprocess {
		in.startSubprocess()
	} else {
		in.startInProcess()
	}
	in.waitReady()
}

func (in *Instance) startInProcess() {
	t := in.t
	var layers []server.Layer
	if in.configPath != "" {
		l, err := server.FileLayerEnv(in.configPath, func(k string) string { return in.opts.Env[k] })
		if err != nil {
			t.Fatal(err)
		}
		layers = append(layers, l)
	}
	dataDir, dbURL := in.DataDir, in.DatabaseURL
	layers = append(layers, server.Layer{DataDir: &dataDir})
	if dbURL != "" {
		layers = append(layers, server.Layer{DatabaseURL: &dbURL})
	}
	s, err := server.Resolve(layers...)
	if err != nil {
		t.Fatal(err)
	}
	level := in.opts.LogLevel
	if level == hclog.NoLevel {
		level = hclog.Debug
	}
	log := hclog.New(&hclog.LoggerOptions{Name: "nexus", Level: level, Output: lockedWriter{in}})
	getenv := func(k string) string { return in.opts.Env[k] }
	srv, err := server.Open(context.Background(), s, log, server.Options{Getenv: getenv, TokenTerminal: func() bool { return false }, Now: in.opts.Now,
		PluginTimings: in.opts.PluginTimings, PluginPlane: in.opts.PluginPlane, Version: "test", EventKeepAlive: in.opts.EventKeepAlive})
	if err != nil {
		t.Fatalf("open server: %v", err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	in.URL = "http://" + ln.Addr().String()
	in.mu.Lock()
	in.srv = srv
	in.mu.Unlock()
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		err := srv.Serve(ctx, ln)
		_ = srv.Close()
		in.exited <- err
	}()
	in.stop = func() error {
		cancel()
		err := <-in.exited
		in.mu.Lock()
		in.srv = nil
		in.mu.Unlock()
		return err
	}
	stop := in.stop
	in.kill = func() { _ = stop() }
}

func (in *Instance) startSubprocess() {
	t := in.t
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	_ = ln.Close()
	in.URL = "http://" + addr
	cmd := exec.Command(os.Args[0], in.settingsArgs(addr)...)
	cmd.Env = append(os.Environ(), helperEnv+"=1")
	for k, v := range in.opts.Env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	cmd.Stdout = lockedWriter{in}
	cmd.Stderr = lockedWriter{in}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { in.exited <- cmd.Wait() }()
	in.proc = cmd.Process
	in.stop = func() error {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case err := <-in.exited:
			return err
		case <-time.After(30 * time.Second):
			_ = cmd.Process.Kill()
			<-in.exited
			return errors.New("testserver: the server did not exit within 30 s of SIGTERM")
		}
	}
	in.kill = func() {
		_ = cmd.Process.Kill()
		<-in.exited
	}
}

// readyWithin bounds how long a start may take before the test fails: migrations and the first
// connection to PostgreSQL fit easily, even on a loaded machine.
const readyWithin = 60 * time.Second

func (in *Instance) waitReady() {
	in.t.Helper()
	deadline := time.Now().Add(readyWithin)
	for time.Now().Before(deadline) {
		select {
		case err := <-in.exited:
			in.exited <- err
			in.t.Fatalf("server exited while starting: %v\n%s", err, in.Logs())
		default:
		}
		resp, err := http.Get(in.URL + "/readyz")
		if err == nil {
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if want := in.opts.NotReadyBecause; want == "" && resp.StatusCode == http.StatusOK {
				return
			} else if want != "" && resp.StatusCode == http.StatusServiceUnavailable && strings.Contains(string(body), want) {
				return
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	in.t.Fatalf("server not ready within %v\n%s", readyWithin, in.Logs())
}

// Stop stops the server gracefully (SIGTERM for a subprocess) and returns its exit error. It is
// a no-op on a stopped instance.
func (in *Instance) Stop() error {
	if in.stop == nil {
		return nil
	}
	stop := in.stop
	in.stop, in.kill = nil, nil
	return stop()
}

// Kill ends a subprocess server at once (SIGKILL): nothing it had in memory survives. For an
// in-process server it is Stop.
func (in *Instance) Kill() {
	if in.kill == nil {
		return
	}
	kill := in.kill
	in.stop, in.kill = nil, nil
	kill()
}

// Pause stops a subprocess server with SIGSTOP: it keeps everything in memory and runs nothing
// until Resume, like a frozen machine. It is not defined for an in-process server.
func (in *Instance) Pause() {
	in.t.Helper()
	if in.proc == nil || in.stop == nil {
		in.t.Fatal("testserver: Pause needs a running subprocess")
	}
	if err := in.proc.Signal(syscall.SIGSTOP); err != nil {
		in.t.Fatal(err)
	}
}

// Resume continues a paused subprocess server (SIGCONT).
func (in *Instance) Resume() {
	in.t.Helper()
	if in.proc == nil || in.stop == nil {
		in.t.Fatal("testserver: Resume needs a running subprocess")
	}
	if err := in.proc.Signal(syscall.SIGCONT); err != nil {
		in.t.Fatal(err)
	}
}

// Restart starts the server again on the same data directory and database.
func (in *Instance) Restart() {
	in.t.Helper()
	if in.stop != nil {
		in.t.Fatal("testserver: Restart of a running server")
	}
	in.start()
}

// String names the instance in messages.
func (in *Instance) String() string {
	return fmt.Sprintf("nexus %s (%s)", in.URL, in.opts.Dialect)
}
