package mcpbridge

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os/exec"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Supervision constants (docs/plugins.md#mcp-servers).
const (
	// listDebounce makes a burst of list_changed notifications cost one listing.
	listDebounce = 250 * time.Millisecond
	// listTimeout, maxListPages and maxListedTools bound one listing: a broken cursor must not
	// hang the bridge.
	listTimeout    = 30 * time.Second
	maxListPages   = 100
	maxListedTools = 10000
	// backoffReset is how long a server must stay ready before its backoff starts over.
	backoffReset = 5 * time.Minute
	// maxCooldown caps the doubled breaker cooldown.
	maxCooldown = time.Hour
	// keepAliveFailures is how many failed pings in a row close a session.
	keepAliveFailures = 3
)

// supportedRevisions are the MCP revisions the bridge speaks; another is a failed connect.
var supportedRevisions = map[string]bool{
	"2026-07-28": true, "2025-11-25": true, "2025-06-18": true, "2025-03-26": true, "2024-11-05": true,
}

type serverState string

const (
	stateStarting   serverState = "starting"
	stateReady      serverState = "ready"
	stateRestarting serverState = "restarting"
	stateOpen       serverState = "open"
)

// server supervises one MCP server: one goroutine owns its session.
type server struct {
	b      *Bridge
	cfg    ServerConfig
	log    hclog.Logger
	stderr *tailWriter

	mu          sync.Mutex
	state       serverState
	changed     chan struct{} // closed and replaced on every state change
	session     *mcp.ClientSession
	protocol    string
	pid         int // the stdio server's process, for tests of process hygiene
	canRead     bool
	list        *serverList
	everReady   bool
	lastErr     string
	cause       string
	nextAttempt time.Time
	openUntil   time.Time
	openedAfter int
	failures    []time.Time
	cooldown    time.Duration
	trial       bool
	backoff     time.Duration
	readySince  time.Time
	debounce    *time.Timer

	// slots holds a token per call running on the server: max_concurrency of them.
	slots chan struct{}

	listed     chan struct{} // closed at the first listing
	listedOnce sync.Once
	relist     chan struct{}
	reconnect  chan struct{}
}

func newServer(b *Bridge, cfg ServerConfig) *server {
	log := b.log.Named("mcp." + cfg.Name)
	return &server{
		b: b, cfg: cfg, log: log,
		stderr:    &tailWriter{log: log},
		state:     stateStarting,
		changed:   make(chan struct{}),
		listed:    make(chan struct{}),
		relist:    make(chan struct{}, 1),
		reconnect: make(chan struct{}, 1),
		slots:     make(chan struct{}, max(1, cfg.MaxConcurrency)),
		backoff:   b.cfg.Supervision.BackoffInitial,
		cooldown:  b.cfg.Supervision.BreakerCooldown,
	}
}

func (s *server) now() time.Time { return s.b.now() }

// setStateLocked changes the state and wakes every waiter.
func (s *server) setStateLocked(st serverState) {
	s.state = st
	close(s.changed)
	s.changed = make(chan struct{})
}

// run is the server's goroutine: connect, list, serve until the session ends, back off,
// again, until ctx ends.
func (s *server) run(ctx context.Context) {
	for ctx.Err() == nil {
		s.mu.Lock()
		wait := time.Duration(0)
		if s.now().Before(s.openUntil) {
			wait = s.openUntil.Sub(s.now())
			s.trial = true
		}
		s.mu.Unlock()
		if wait > 0 && !waitCtx(ctx, wait) {
			return
		}
		s.mu.Lock()
		s.setStateLocked(stateStarting)
		s.mu.Unlock()
		sess, cmd, err := s.connect(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			s.failed(ctx, "failed start", err)
			continue
		}
		if err := s.listTools(ctx, sess); err != nil && !s.hasList() {
			// A server that never listed is not ready: its tools are unknown.
			sess.Close()
			killGroup(pidOf(cmd))
			if ctx.Err() != nil {
				return
			}
			s.failed(ctx, "failed listing", err)
			continue
		}
		s.serve(ctx, sess, cmd)
	}
}

// connect starts or dials the server and negotiates a revision.
func (s *server) connect(ctx context.Context) (*mcp.ClientSession, *exec.Cmd, error) {
	var t mcp.Transport
	var cmd *exec.Cmd
	var err error
	if s.b.opt.Dial != nil {
		t, err = s.b.opt.Dial(ctx, s.cfg)
	} else {
		t, cmd, err = transportFor(s.cfg, s.b.dataDir, s.stderr)
	}
	if err != nil {
		return nil, nil, err
	}
	client := mcp.NewClient(&mcp.Implementation{Name: "nexus-mcp-bridge", Version: Version}, &mcp.ClientOptions{
		Capabilities:              &mcp.ClientCapabilities{},
		ToolListChangedHandler:    func(context.Context, *mcp.ToolListChangedRequest) { s.markRelist() },
		KeepAlive:                 s.b.cfg.Supervision.PingInterval,
		KeepAliveFailureThreshold: keepAliveFailures,
		Logger:                    slog.New(&hclogHandler{log: s.log}),
	})
	cctx, cancel := context.WithTimeout(ctx, s.cfg.ConnectTimeout)
	defer cancel()
	sess, err := client.Connect(cctx, t, nil)
	if err != nil {
		if cmd != nil {
			killGroup(pidOf(cmd))
		}
		return nil, nil, err
	}
	ir := sess.InitializeResult()
	if ir == nil || !supportedRevisions[ir.ProtocolVersion] {
		sess.Close()
		killGroup(pidOf(cmd))
		v := ""
		if ir != nil {
			v = ir.ProtocolVersion
		}
		return nil, nil, fmt.Errorf("unsupported protocol revision %q", v)
	}
	s.mu.Lock()
	if cmd != nil && cmd.Process != nil {
		s.pid = cmd.Process.Pid
		s.log.Info("started", "pid", s.pid)
	}
	s.protocol = ir.ProtocolVersion
	s.canRead = ir.Capabilities != nil && ir.Capabilities.Resources != nil
	s.mu.Unlock()
	return sess, cmd, nil
}

func pidOf(cmd *exec.Cmd) int {
	if cmd == nil || cmd.Process == nil {
		return 0
	}
	return cmd.Process.Pid
}

func (s *server) hasList() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.list != nil
}

// serve keeps a ready session until it ends, re-listing after list changes.
func (s *server) serve(ctx context.Context, sess *mcp.ClientSession, cmd *exec.Cmd) {
	s.mu.Lock()
	s.session = sess
	s.everReady = true
	s.readySince = s.now()
	if s.trial {
		s.log.Info("breaker closed")
		s.trial = false
		s.failures = nil
		s.cooldown = s.b.cfg.Supervision.BreakerCooldown
	}
	s.setStateLocked(stateReady)
	n := 0
	if s.list != nil {
		n = len(s.list.Tools)
	}
	s.mu.Unlock()
	s.log.Info("ready", "protocol_version", s.protocol, "tools", n)

	done := make(chan error, 1)
	go func() { done <- sess.Wait() }()
	for {
		select {
		case <-ctx.Done():
			s.endSession(sess, cmd)
			return
		case <-s.relist:
			if err := s.listTools(ctx, sess); err != nil {
				s.log.Warn("listing failed; keeping the previous list", "error", err)
			}
		case <-s.reconnect:
			s.endSession(sess, cmd)
			<-done
			return
		case err := <-done:
			s.endSession(sess, cmd)
			if errors.Is(err, mcp.ErrSessionMissing) {
				// The HTTP server forgot the session: connect again at once, no failure.
				s.log.Info("session forgotten by the server; reconnecting")
				return
			}
			cause := "session ended"
			if cmd != nil && cmd.ProcessState != nil {
				cause = "exit: " + cmd.ProcessState.String()
				s.log.Warn("exited", "status", cmd.ProcessState.ExitCode(), "stderr_tail", s.stderr.tail())
			} else if err != nil {
				cause = err.Error()
				s.log.Warn("session ended", "error", err)
			}
			s.failed(ctx, cause, nil)
			return
		}
	}
}

// endSession closes the session (stdio: stdin closed, 2 s, SIGTERM, then the process group
// is killed) and marks the server not ready.
func (s *server) endSession(sess *mcp.ClientSession, cmd *exec.Cmd) {
	s.mu.Lock()
	if s.session == sess {
		s.session = nil
	}
	s.mu.Unlock()
	_ = sess.Close()
	killGroup(pidOf(cmd))
}

// failed counts a failure, opens the breaker when enough fall in the window, and waits out
// the backoff.
func (s *server) failed(ctx context.Context, cause string, err error) {
	sup := s.b.cfg.Supervision
	now := s.now()
	s.mu.Lock()
	if err != nil {
		s.lastErr = err.Error()
		cause = cause + ": " + err.Error()
	}
	if !s.readySince.IsZero() && now.Sub(s.readySince) >= backoffReset {
		s.backoff = sup.BackoffInitial
	}
	s.readySince = time.Time{}
	s.session = nil
	keep := s.failures[:0]
	for _, f := range s.failures {
		if now.Sub(f) < sup.BreakerWindow {
			keep = append(keep, f)
		}
	}
	s.failures = append(keep, now)
	if s.trial || len(s.failures) >= sup.BreakerFailures {
		if s.trial {
			s.cooldown = min(2*s.cooldown, maxCooldown)
		}
		s.openedAfter = len(s.failures)
		s.openUntil = now.Add(s.cooldown)
		s.trial = false
		s.cause = cause
		s.setStateLocked(stateOpen)
		s.mu.Unlock()
		s.log.Warn("breaker opened", "until", s.openUntil.UTC().Format(time.RFC3339), "failures", s.openedAfter, "cause", cause)
		return
	}
	d := jitter(s.backoff)
	s.backoff = min(2*s.backoff, sup.BackoffMax)
	s.cause = cause
	s.nextAttempt = now.Add(d)
	s.setStateLocked(stateRestarting)
	s.mu.Unlock()
	s.log.Info("restart scheduled", "delay", d.String(), "cause", cause)
	waitCtx(ctx, d)
}

// jitter spreads d by ±20 %.
func jitter(d time.Duration) time.Duration {
	return time.Duration(float64(d) * (0.8 + 0.4*rand.Float64()))
}

// markRelist schedules a listing 250 ms after the last list_changed of a burst.
func (s *server) markRelist() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.debounce != nil {
		s.debounce.Stop()
	}
	s.debounce = time.AfterFunc(listDebounce, func() {
		select {
		case s.relist <- struct{}{}:
		default:
		}
	})
}

// listTools reads the whole tool list, page by page within the bounds, and hands it to the
// bridge. A failure keeps the previous list.
func (s *server) listTools(ctx context.Context, sess *mcp.ClientSession) error {
	lctx, cancel := context.WithTimeout(ctx, listTimeout)
	defer cancel()
	var tools []*mcp.Tool
	cursor := ""
	seen := map[string]bool{}
	for page := 0; ; page++ {
		if page >= maxListPages {
			return fmt.Errorf("tool list has more than %d pages", maxListPages)
		}
		res, err := sess.ListTools(lctx, &mcp.ListToolsParams{Cursor: cursor})
		if err != nil {
			return err
		}
		tools = append(tools, res.Tools...)
		if len(tools) > maxListedTools {
			return fmt.Errorf("tool list has more than %d tools", maxListedTools)
		}
		if res.NextCursor == "" {
			break
		}
		if seen[res.NextCursor] {
			return errors.New("tool list repeats a cursor")
		}
		seen[res.NextCursor] = true
		cursor = res.NextCursor
	}
	ir := sess.InitializeResult()
	l := &serverList{Tools: tools, ListedAt: s.now()}
	if ir != nil {
		l.ProtocolVersion = ir.ProtocolVersion
		l.ServerInfo = ir.ServerInfo
	}
	s.mu.Lock()
	s.list = l
	s.mu.Unlock()
	s.b.rebuild()
	// The cache is written after the announcement changed: its fsync is not in the path of a
	// list change.
	if err := writeCache(s.b.dataDir, s.cfg, l); err != nil {
		s.log.Warn("list cache not written", "error", err)
	}
	s.listedOnce.Do(func() { close(s.listed) })
	return nil
}

// acquire takes one of the server's call slots (max_concurrency), waiting until deadline (or
// ctx) for one to free; release gives it back. A server that hangs holds its own slots and no
// more, so the bridge's other servers keep serving (docs/plugins.md#when-a-server-is-down).
func (s *server) acquire(ctx context.Context, deadline time.Time) (release func(), ok bool) {
	release = func() { <-s.slots }
	select {
	case s.slots <- struct{}{}:
		return release, true
	default:
	}
	timer := time.NewTimer(time.Until(deadline))
	defer timer.Stop()
	select {
	case s.slots <- struct{}{}:
		return release, true
	case <-timer.C:
	case <-ctx.Done():
	}
	return nil, false
}

// ready waits up to wait (or ctx) for a ready session; otherwise it names the state.
func (s *server) ready(ctx context.Context, wait time.Duration) (*mcp.ClientSession, string, bool) {
	timer := time.NewTimer(wait)
	defer timer.Stop()
	for {
		s.mu.Lock()
		if s.state == stateReady && s.session != nil {
			sess := s.session
			s.mu.Unlock()
			return sess, "", true
		}
		ch := s.changed
		s.mu.Unlock()
		select {
		case <-ch:
		case <-timer.C:
			return nil, s.describeState(), false
		case <-ctx.Done():
			return nil, "", false
		}
	}
}

// describeState is the <state> of "mcp server <name> is unavailable: <state>".
func (s *server) describeState() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	switch {
	case s.state == stateOpen:
		return fmt.Sprintf("circuit open until %s after %d failures", s.openUntil.UTC().Format(time.RFC3339), s.openedAfter)
	case !s.everReady && s.lastErr != "":
		return "never connected: " + s.lastErr
	case s.state == stateRestarting:
		left := s.nextAttempt.Sub(now).Round(time.Millisecond)
		if left < 0 {
			left = 0
		}
		return fmt.Sprintf("restarting after %s (next attempt in %s)", s.cause, left)
	default:
		return string(stateStarting)
	}
}

// lost marks a session whose call lost its answer: it is closed and the server restarted.
func (s *server) lost(sess *mcp.ClientSession) {
	s.mu.Lock()
	if s.session == sess {
		s.session = nil
		s.setStateLocked(stateStarting)
	}
	s.mu.Unlock()
	_ = sess.Close()
}

// requestReconnect asks the goroutine to drop the session and connect again at once, without
// counting a failure (a streamable HTTP session the server forgot).
func (s *server) requestReconnect(sess *mcp.ClientSession) {
	s.mu.Lock()
	if s.session == sess {
		s.session = nil
		s.setStateLocked(stateStarting)
	}
	s.mu.Unlock()
	select {
	case s.reconnect <- struct{}{}:
	default:
	}
}

// snapshot is the server's list and what a call needs.
func (s *server) snapshot() (*serverList, string, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.list, s.protocol, s.canRead
}

// hclogHandler is a slog.Handler writing the SDK's logs to the server's logger at debug.
type hclogHandler struct {
	log   hclog.Logger
	attrs []any
}

func (h *hclogHandler) Enabled(context.Context, slog.Level) bool { return h.log.IsDebug() }

func (h *hclogHandler) Handle(_ context.Context, r slog.Record) error {
	args := append([]any{}, h.attrs...)
	r.Attrs(func(a slog.Attr) bool {
		args = append(args, a.Key, a.Value.String())
		return true
	})
	h.log.Debug(r.Message, args...)
	return nil
}

func (h *hclogHandler) WithAttrs(as []slog.Attr) slog.Handler {
	n := &hclogHandler{log: h.log, attrs: append([]any{}, h.attrs...)}
	for _, a := range as {
		n.attrs = append(n.attrs, a.Key, a.Value.String())
	}
	return n
}

func (h *hclogHandler) WithGroup(string) slog.Handler { return h }
