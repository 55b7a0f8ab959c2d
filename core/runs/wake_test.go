package runs

import (
	"context"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

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

// The wake-up handler kicks a worker for another instance's kernel wake-up, whatever its run
// and key hold, and for nothing else on the channel: its own instance's (kicked at commit), an
// executor's wake-up, a kernel wake-up's words inside another payload's string, a payload that
// is not JSON.
func TestWakeHandlerKicksOnKernelWakeUpsOnly(t *testing.T) {
	inst, self := testInstance(t)
	cases := []struct {
		payload string
		kicks   int
	}{
		{kernelWake("other", "0b7e3c1a-52a4-4c8e-9d43-3f0f1b6f3a10", "step-1"), 1},
		{kernelWake("other", `r"q`, `{"kind":"kernel"}`), 1},
		{`{"kind":"executor","run_public_id":"r","task_key":"k","executor_public_ids":["e"],"event":"work_available","tool_name":"t","origin":"o"}`, 0},
		{`{"kind":"executor","run_public_id":"r","task_key":"{\"kind\":\"kernel\"}","executor_public_ids":[],"event":"work_available","origin":"o"}`, 0},
		{`{"kind":"kernel"`, 0},
		{`not json`, 0},
		{kernelWake(self, "0b7e3c1a-52a4-4c8e-9d43-3f0f1b6f3a10", "step-1"), 0},
	}
	for _, c := range cases {
		e := &Engine{kick: make(chan struct{}, 4), inst: inst}
		wakeHandler{e}.Notified(c.payload)
		if got := len(e.kick); got != c.kicks {
			t.Errorf("%s: %d kicks; want %d", c.payload, got, c.kicks)
		}
	}
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
			wakeHandler{e}.Notified(kernelWake("other", "0b7e3c1a-52a4-4c8e-9d43-3f0f1b6f3a10", "step-1"))
		}
		wakeHandler{e}.Live()
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

// heardWakes collects the payloads a subscription hears.
type heardWakes chan string

func (h heardWakes) Notified(p string) { h <- p }
func (h heardWakes) Live()             {}
func (h heardWakes) Lost()             {}

// A transaction that makes kernel rows runnable kicks this instance's workers, one per row, and
// tells the other instances once, after the commit, with its own instance as the origin (which
// its own wake-up handler passes over); nothing is told for a transaction that woke nothing.
func TestKernelWakeUpsAfterCommit(t *testing.T) {
	s, ok := storetest.Postgres(t)
	if !ok {
		return
	}
	ctx := context.Background()
	inst, self := testInstance(t)
	e := &Engine{store: s, channel: s.Channel(WorkChannel), kick: make(chan struct{}, 4),
		inst: inst, log: hclog.NewNullLogger()}
	heard := make(heardWakes, 4)
	stop, err := s.Subscribe(ctx, e.channel, heard)
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
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
		if want := kernelWake(self, "0b7e3c1a-52a4-4c8e-9d43-3f0f1b6f3a10", "r1"); p != want {
			t.Fatalf("heard %s, want %s", p, want)
		}
		wakeHandler{e}.Notified(p)
		if got := len(e.kick); got != 2 {
			t.Fatalf("its own wake-up kicked again: %d", got)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the other instances were not told")
	}
	select {
	case p := <-heard:
		t.Fatalf("told twice (or for the empty transaction): %s", p)
	case <-time.After(200 * time.Millisecond):
	}
}
