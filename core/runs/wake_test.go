package runs

import (
	"testing"
	"time"

	"github.com/nexuskernel/nexus/core/store"
)

// The wake-up handler kicks a worker for another instance's kernel wake-up, whatever its run
// and key hold, and for nothing else on the channel: its own instance's (kicked at commit), an
// executor's wake-up, a kernel wake-up's words inside another payload's string, a payload that
// is not JSON.
func TestWakeHandlerKicksOnKernelWakeUpsOnly(t *testing.T) {
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
		{kernelWake("self", "0b7e3c1a-52a4-4c8e-9d43-3f0f1b6f3a10", "step-1"), 0},
	}
	for _, c := range cases {
		e := &Engine{kick: make(chan struct{}, 4), inst: &instance{row: store.Instance{ID: "self"}}}
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
	e := &Engine{kick: make(chan struct{}, 3), inst: &instance{row: store.Instance{ID: "self"}}}
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
