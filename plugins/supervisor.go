package plugins

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/nexuskernel/nexus/sdk/announce"
	"github.com/nexuskernel/nexus/sdk/refusal"
)

// supervisor owns one catalog entry: its process, restarts, breaker, claim loop and calls.
type supervisor struct {
	h      *Host
	entry  Entry
	logger hclog.Logger

	ctx    context.Context // ends when the entry is stopped
	cancel context.CancelFunc
	done   chan struct{} // closed when run returns

	mu         sync.Mutex
	state      State
	inst       *instance
	gen        int
	restarts   int
	executorID string
	refusal    *refusal.Refusal
	lastErr    string
	lastStderr []string
	command    string
	digest     string
	breaker    breaker
	counts     CallCounts
	// pollFinds counts the rows the inbox poll claimed that a wake-up should have announced.
	pollFinds  int
	inflight   map[string]*call // by run and task key
	changed    chan struct{}    // closed and replaced on every state change
	trigger    chan struct{}    // a restart or reload asks for a fresh attempt now
	settled    chan struct{}    // closed once the first attempt has an outcome
	settleOnce sync.Once
	successor  *supervisor // set when a reload replaced this entry: replays go there
	// standby marks a replacement started beside a serving instance: until it is swapped in,
	// its refusal must not clear the executor's announcement the old instance still serves.
	standby bool
	slots   chan struct{}
	// annAt is when the executor's announcement was last written (load or re-announcement);
	// annRefusal the last re-announcement refused since then.
	annAt      time.Time
	annRefusal *refusal.Refusal
	// root is the storage root the last start named (StorageGuard), nil when none; held says
	// the guard refused it, so the entry waits unready for the root in use to become its own.
	root *StorageRoot
	held bool
}

func newSupervisor(h *Host, e Entry) *supervisor {
	e = e.withDefaults()
	ctx, cancel := context.WithCancel(context.Background())
	return &supervisor{
		h: h, entry: e, logger: h.logger, ctx: ctx, cancel: cancel, done: make(chan struct{}),
		state: StateStopped, breaker: newBreaker(h.timings), inflight: map[string]*call{},
		changed: make(chan struct{}), trigger: make(chan struct{}, 1), settled: make(chan struct{}),
		slots: make(chan struct{}, e.MaxConcurrency),
	}
}

// setState changes the state and wakes every waiter; the caller holds s.mu.
func (s *supervisor) setStateLocked(st State) {
	changed := s.state != st
	s.state = st
	close(s.changed)
	s.changed = make(chan struct{})
	if changed && s.h.onState != nil {
		s.h.onState(s.entry.Name, st)
	}
}

func (s *supervisor) setState(st State) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.setStateLocked(st)
}

func (s *supervisor) settle() { s.settleOnce.Do(func() { close(s.settled) }) }

// poke asks the run loop for a fresh attempt now (restart, reload).
func (s *supervisor) poke(resetBreaker bool) {
	if resetBreaker {
		s.mu.Lock()
		s.breaker.reset()
		s.mu.Unlock()
	}
	select {
	case s.trigger <- struct{}{}:
	default:
	}
}

// run is the supervisor's life: start, serve, and on a failure wait out backoff or the breaker.
func (s *supervisor) run() {
	defer close(s.done)
	defer s.settle()
	t := s.h.timings
	for s.ctx.Err() == nil {
		s.mu.Lock()
		if s.breaker.open(time.Now()) {
			until := s.breaker.openUntil
			s.setStateLocked(StateOpen)
			s.mu.Unlock()
			s.settle()
			s.wait(time.Until(until))
			continue
		}
		s.mu.Unlock()

		s.setState(StateStarting)
		in, r := s.start()
		if r != nil {
			s.mu.Lock()
			s.lastErr = r.Code + ": " + r.Message
			if s.held {
				// The executor is the other instances' too: its announcement stays theirs.
				s.refusal = r
				s.setStateLocked(StateRefused)
				s.mu.Unlock()
				s.logger.Error("plugin held unready: its storage root is not the one in use", "plugin", s.entry.Name, "code", r.Code, "message", r.Message)
				s.settle()
				s.waitAdmissible()
				continue
			}
			if deterministic(r) {
				s.refusal = r
				s.setStateLocked(StateRefused)
				s.mu.Unlock()
				st := refusalStatus(r)
				s.logger.Error("plugin refused", "plugin", s.entry.Name, "code", r.Code, "name", st.Name, "path", st.Path, "message", r.Message)
				s.clearAnnouncement()
				s.settle()
				s.wait(-1) // until a reload or restart
				continue
			}
			s.mu.Unlock()
			s.logger.Warn("plugin start failed", "plugin", s.entry.Name, "code", r.Code, "message", r.Message)
			s.failed()
			continue
		}
		s.mu.Lock()
		s.inst, s.refusal, s.lastErr = in, nil, ""
		if s.breaker.ready() {
			s.logger.Info("breaker closed", "plugin", s.entry.Name)
		}
		s.setStateLocked(StateReady)
		s.mu.Unlock()
		s.logger.Info("plugin ready", "plugin", s.entry.Name, "executor", s.executorID, "generation", in.generation, "pid", in.pid)
		s.settle()

		loopCtx, stopLoop := context.WithCancel(s.ctx)
		loopDone, watchDone := make(chan struct{}), make(chan struct{})
		go func() { defer close(loopDone); s.claimLoop(loopCtx, in) }()
		go func() { defer close(watchDone); s.watchAnnouncement(loopCtx, in) }()
		why := s.monitor(in)
		stopLoop()
		<-loopDone
		<-watchDone
		if why == "" { // stopped or drained by the host
			return
		}
		s.died(in, why)
		if time.Since(in.startedAt) >= t.BackoffResetAfter {
			s.mu.Lock()
			s.breaker.servedLong()
			s.mu.Unlock()
		}
		s.failed()
	}
}

// failed records a failure, opens the breaker or waits out the backoff.
func (s *supervisor) failed() {
	s.mu.Lock()
	opened := s.breaker.failure(time.Now())
	delay := s.breaker.delay()
	if opened {
		s.setStateLocked(StateOpen)
	} else {
		s.setStateLocked(StateRestarting)
	}
	until := s.breaker.openUntil
	s.mu.Unlock()
	s.settle()
	if opened {
		s.logger.Warn("breaker opened", "plugin", s.entry.Name, "open_until", until)
		return // run's loop waits the cooldown
	}
	s.logger.Info("restart scheduled", "plugin", s.entry.Name, "delay", delay)
	s.wait(delay)
}

// wait sleeps d (forever when d < 0) or until a poke or the end.
func (s *supervisor) wait(d time.Duration) {
	var timer <-chan time.Time
	if d >= 0 {
		tm := time.NewTimer(d)
		defer tm.Stop()
		timer = tm.C
	}
	select {
	case <-timer:
	case <-s.trigger:
	case <-s.ctx.Done():
	}
}

// waitAdmissible waits while the entry is held by its storage root: it reads the roots again
// every RootRecheck and returns once the guard would admit the root, or at once on a restart,
// a reload or the end.
func (s *supervisor) waitAdmissible() {
	tick := time.NewTicker(s.h.timings.RootRecheck)
	defer tick.Stop()
	for {
		select {
		case <-s.trigger:
			return
		case <-s.ctx.Done():
			return
		case <-tick.C:
		}
		s.mu.Lock()
		root := s.root
		s.mu.Unlock()
		if root == nil {
			return
		}
		r, err := s.h.storage.Check(s.ctx, s.entry.Name, *root)
		if err != nil {
			if s.ctx.Err() == nil {
				s.logger.Warn("reading the storage roots failed", "plugin", s.entry.Name, "error", err)
			}
			continue
		}
		if r == nil {
			s.logger.Info("no other storage root is in use now; loading", "plugin", s.entry.Name, "root", root.Path)
			return
		}
		s.mu.Lock()
		s.refusal, s.lastErr = r, r.Code+": "+r.Message
		s.mu.Unlock()
	}
}

// admitRoot names the loaded plugin's storage root and has the guard admit it
// (StorageGuard): a refusal holds the entry unready.
func (s *supervisor) admitRoot(in *instance, dataDir string) *refusal.Refusal {
	g := s.h.storage
	if g == nil {
		return nil
	}
	root, ok, err := g.Root(s.entry, in.info, dataDir)
	if err != nil {
		return startFailure(CodeStartFailed, "storage root: "+err.Error())
	}
	if !ok {
		return nil
	}
	ctx, cancel := context.WithTimeout(s.ctx, s.entry.StartTimeout)
	defer cancel()
	r, err := g.Admit(ctx, s.entry.Name, root)
	if err != nil {
		return startFailure(CodeStartFailed, "storage root: "+err.Error())
	}
	s.mu.Lock()
	s.root, s.held = &root, r != nil
	s.mu.Unlock()
	return r
}

// start runs the load sequence (docs/plugins.md#what-the-host-checks) and registers the executor.
func (s *supervisor) start() (*instance, *refusal.Refusal) {
	e := s.entry
	s.mu.Lock()
	s.root, s.held = nil, false
	s.mu.Unlock()
	path, r := s.h.resolver.Resolve(e)
	if r != nil {
		return nil, r
	}
	digest, err := FileDigest(path)
	if err != nil {
		return nil, notFound("%s: %v", path, err)
	}
	s.mu.Lock()
	s.command, s.digest = path, digest
	s.gen++
	gen := s.gen
	if gen > 1 {
		s.restarts++
	}
	s.mu.Unlock()
	if e.SHA256 != "" && e.SHA256 != digest {
		// go-plugin checks again immediately before the start; this gives both digests early.
		return nil, loadRefusal(CodeChecksumMismatch, "the catalog pins sha256 %s; the file's is %s", e.SHA256, digest)
	}
	dataDir, err := pluginDataDir(s.h.dataDir, e.Name)
	if err != nil {
		return nil, startFailure(CodeStartFailed, "data dir: "+err.Error())
	}
	s.logger.Info("plugin launched", "plugin", e.Name, "command", path, "generation", gen)
	in, r := launch(s.ctx, launchSpec{entry: e, command: path, digest: digest, dataDir: dataDir, logger: s.logger}, gen)
	if r != nil {
		return nil, r
	}
	if r := s.admitRoot(in, dataDir); r != nil {
		in.kill()
		return nil, r
	}
	ctx, cancel := context.WithTimeout(s.ctx, e.StartTimeout)
	defer cancel()
	id, err := s.h.plane.EnsureManaged(ctx, ManagedExecutor{
		RegistrationKey: "plugin:" + e.Name, DisplayName: "plugin " + e.Name,
		ManagedBy: map[string]string{"plugin": e.Name}, Workspaces: e.Workspaces,
	})
	if err == nil {
		s.mu.Lock()
		s.executorID = id
		s.mu.Unlock()
		err = s.h.plane.Announce(ctx, id, in.announce)
	}
	if err == nil {
		err = s.h.plane.SetPresence(ctx, id, true)
	}
	if err != nil {
		in.kill()
		return nil, startFailure(CodeStartFailed, "executor plane: "+err.Error())
	}
	s.mu.Lock()
	s.announcedLocked(in, in.announce, in.revision, time.Now())
	s.mu.Unlock()
	return in, nil
}

// clearAnnouncement empties a refused plugin's announcement, so rows born later fail
// tool_not_served while rows already addressed settle by the expiry rule.
func (s *supervisor) clearAnnouncement() {
	s.mu.Lock()
	id, standby := s.executorID, s.standby
	s.mu.Unlock()
	if id == "" || standby {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := s.h.plane.Announce(ctx, id, announce.Announcement{Tools: []announce.Tool{}}); err != nil {
		s.logger.Warn("clearing the announcement failed", "plugin", s.entry.Name, "error", err)
	}
	_ = s.h.plane.SetPresence(ctx, id, false)
}

// monitor watches a ready instance until it dies (answering why) or the host stops it ("").
func (s *supervisor) monitor(in *instance) string {
	t := s.h.timings
	exits := time.NewTicker(t.ExitCheck)
	defer exits.Stop()
	pings := time.NewTicker(s.entry.HealthInterval)
	defer pings.Stop()
	failures := 0
	for {
		select {
		case <-s.ctx.Done():
			return ""
		case <-exits.C:
			if in.client.Exited() {
				return "exited"
			}
		case <-pings.C:
			if err := ping(in, t.PingTimeout); err != nil {
				failures++
				s.logger.Warn("health ping failed", "plugin", s.entry.Name, "failures", failures, "error", err)
				if failures >= t.PingFailures {
					return "health"
				}
			} else {
				failures = 0
			}
		}
	}
}

// ping runs go-plugin's Ping (the gRPC health service) with a timeout.
func ping(in *instance, timeout time.Duration) error {
	rpc, err := in.client.Client()
	if err != nil {
		return err
	}
	done := make(chan error, 1)
	go func() { done <- rpc.Ping() }()
	select {
	case err := <-done:
		return err
	case <-time.After(timeout):
		return fmt.Errorf("no answer within %v", timeout)
	}
}

// died kills a dead instance and marks the executor offline; its calls settle themselves
// (each sees plugin.ErrPluginShutdown and is replayed or expired, call.go).
func (s *supervisor) died(in *instance, why string) {
	in.kill()
	tail := in.stderr.Lines()
	s.mu.Lock()
	s.lastStderr = tail
	s.lastErr = "plugin process " + why
	id := s.executorID
	s.mu.Unlock()
	s.logger.Warn("plugin exited", "plugin", s.entry.Name, "status", why, "pid", in.pid, "stderr", tail)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := s.h.plane.SetPresence(ctx, id, false); err != nil {
		s.logger.Warn("set presence offline failed", "plugin", s.entry.Name, "error", err)
	}
}

// waitReady answers a ready instance newer than after, waiting for one until ctx ends. After a
// reload replaced the entry, the successor's instance serves.
func (s *supervisor) waitReady(ctx context.Context, after int) (*instance, *supervisor, error) {
	for {
		s.mu.Lock()
		if succ := s.successor; succ != nil {
			s.mu.Unlock()
			return succ.waitReady(ctx, -1)
		}
		if s.state == StateReady && s.inst != nil && s.inst.generation > after {
			in := s.inst
			s.mu.Unlock()
			return in, s, nil
		}
		ch := s.changed
		s.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return nil, nil, ctx.Err()
		}
	}
}

// stop ends the supervisor: no new claims; in-flight calls get grace, then the process is
// killed and the executor set offline. It returns when everything has stopped.
func (s *supervisor) stop(grace time.Duration, all, revoke bool) {
	s.mu.Lock()
	in := s.inst
	id := s.executorID
	if s.standby || s.successor != nil {
		id = "" // the executor belongs to the instance serving beside or after this one
	}
	if s.state == StateReady {
		s.setStateLocked(StateDraining)
	}
	s.mu.Unlock()
	s.drain(grace, all)
	s.cancel()
	<-s.done
	if in != nil {
		in.kill()
	}
	s.setState(StateStopped)
	if id == "" {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_ = s.h.plane.SetPresence(ctx, id, false)
	if revoke {
		if err := s.h.plane.Revoke(ctx, id); err != nil {
			s.logger.Warn("revoke failed", "plugin", s.entry.Name, "error", err)
		}
	}
}
