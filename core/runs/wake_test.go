package runs

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/nexuskernel/nexus/core/events"
	"github.com/nexuskernel/nexus/core/liveness"
	"github.com/nexuskernel/nexus/core/store/storetest"
)

// testInstance is an unregistered instance for an engine built by hand, and its id.
func testInstance(t *testing.T) (*liveness.Instance, string) {
	t.Helper()
	in, err := liveness.New(nil, hclog.NewNullLogger(), "test", time.Now, time.Second, 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	return in, in.ID()
}

// waitKicks waits until the engine holds n kick tokens.
func waitKicks(t *testing.T, e *Engine, n int) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); len(e.kick) != n; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d kicks; want %d", len(e.kick), n)
		}
	}
}

// The engine wakes a worker for each kernel row another instance announces on the feed, and for
// nothing else: not its own instance's (kicked at commit), not a member event; when the feed may
// have missed events, every worker looks.
func TestKernelWorkFromOtherInstancesKicks(t *testing.T) {
	inst, self := testInstance(t)
	bus := events.New()
	e := &Engine{kick: make(chan struct{}, 4), inst: inst, bus: bus}
	work := bus.SubscribeKernelWork(self)
	ctx, cancel := context.WithCancel(context.Background())
	e.wg.Add(1)
	go e.hearKernelWork(ctx, work)
	defer func() { cancel(); work.Close(); e.wg.Wait() }()
	bus.PublishRemote(events.KernelWork{Origin: "other", Run: "r", TaskKey: "r1"})
	waitKicks(t, e, 1)
	bus.Publish(events.KernelWork{Origin: self, Run: "r", TaskKey: "r2"})
	bus.PublishRemote(events.RunStatus{Scope: events.Scope{Workspace: "w", Run: "r"}, Status: "running"})
	bus.PublishRemote(events.KernelWork{Origin: "other", Run: "r", TaskKey: "r3"})
	waitKicks(t, e, 2)
	bus.LoseAll()
	waitKicks(t, e, cap(e.kick))
}

// A run engine whose workers are all busy never makes the committing request wait and never
// loses the wake-up: kicks past the pool's size coalesce into one waiting token per worker, and
// each worker, idle again, takes one and looks for work (which finds every row the kicks were
// for, since it reads the runnable rows, not the kicks).
func TestKicksCoalesceWhileWorkersAreBusy(t *testing.T) {
	inst, _ := testInstance(t)
	e := &Engine{kick: make(chan struct{}, 3), inst: inst}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for range 10000 {
			e.Kick(5)
		}
		e.Kick(cap(e.kick))
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("kicking busy workers blocked")
	}
	if got := len(e.kick); got != cap(e.kick) {
		t.Fatalf("%d tokens waiting for %d busy workers", got, cap(e.kick))
	}
	<-e.kick // a worker frees up and takes one
	e.Kick(1)
	if got := len(e.kick); got != cap(e.kick) {
		t.Fatalf("%d tokens after a worker took one and a kick came", got)
	}
}

// heardPayloads collects the payloads a subscription hears.
type heardPayloads chan string

func (h heardPayloads) Notified(p string) { h <- p }
func (h heardPayloads) Live()             {}
func (h heardPayloads) Lost()             {}

// A transaction that makes kernel rows runnable kicks this instance's workers, one per row, and
// tells the other instances once, after the commit, in the relay's payload with its own
// instance as the origin; nothing is told for a transaction that woke nothing.
func TestKernelWakeUpsAfterCommit(t *testing.T) {
	s, ok := storetest.Postgres(t)
	if !ok {
		return
	}
	ctx := context.Background()
	inst, self := testInstance(t)
	bus := events.New()
	e := &Engine{store: s, kick: make(chan struct{}, 4), inst: inst, log: hclog.NewNullLogger(), bus: bus, relayed: newRelay(s, bus, hclog.NewNullLogger())}
	heard := make(heardPayloads, 4)
	stop, err := s.Subscribe(ctx, s.Channel(events.RelayChannel), heard)
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	stopRelay, err := e.relay(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { stopRelay(); e.wg.Wait() }()
	waitKicks(t, e, cap(e.kick)) // the relay's start looks for work once, all workers
	for len(e.kick) > 0 {
		<-e.kick
	}
	e.deliver(&effects{})
	fx := &effects{}
	e.wakeKernel(fx, "0b7e3c1a-52a4-4c8e-9d43-3f0f1b6f3a10", "r1")
	e.wakeKernel(fx, "0b7e3c1a-52a4-4c8e-9d43-3f0f1b6f3a10", "r2")
	e.deliver(fx)
	if got := len(e.kick); got != 2 {
		t.Fatalf("%d workers kicked for two rows", got)
	}
	select {
	case p := <-heard:
		if !strings.Contains(p, `"k":"kernel.work"`) || !strings.Contains(p, `"origin":"`+self+`"`) || !strings.Contains(p, `"task_key":"r1"`) || strings.Contains(p, `"r2"`) {
			t.Fatalf("heard %s", p)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the other instances were not told")
	}
	select {
	case p := <-heard:
		t.Fatalf("told twice (or for the empty transaction): %s", p)
	case <-time.After(200 * time.Millisecond):
	}
	if got := len(e.kick); got != 2 {
		t.Fatalf("its own announcement kicked again: %d", got)
	}
}
