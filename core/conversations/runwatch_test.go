package conversations_test

import (
	"slices"
	"testing"
	"time"

	"github.com/nexuskernel/nexus/core/conversations"
	"github.com/nexuskernel/nexus/core/events"
	"github.com/nexuskernel/nexus/core/store"
	"github.com/nexuskernel/nexus/core/store/storetest"
)

// waitedRun is what a waiting read answered.
type waitedRun struct {
	doc *conversations.RunDoc
	err error
}

// waitingRead starts a read through doors that waits up to a minute on the run, and returns once
// it waits on w.
func waitingRead(t *testing.T, h *harness, doors *conversations.Doors, w *conversations.RunWatch, id string) <-chan waitedRun {
	t.Helper()
	got := make(chan waitedRun, 1)
	go func() {
		d, err := doors.ReadRunWaiting(h.Ctx, h.Actor, id, time.Minute)
		got <- waitedRun{d, err}
	}()
	for deadline := time.Now().Add(10 * time.Second); w.Waiting(id) == 0; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the read of %s never began to wait", id)
		}
	}
	return got
}

// TestRunChangedWakesWaitingRead: the engine publishes a run's status after the commit that made
// it, a read waiting on the run answers the changed run, and a stop is a change too.
func TestRunChangedWakesWaitingRead(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		h := newHarness(t, s, harnessOptions{})
		id := h.Create(`{"steps":[{"model":{"model":"mock/scripted","prompt":"!mock\nround 1\nsay hi"}}],"approval_mode":"bypass"}`).Run.PublicID
		if c := h.Changes(); !slices.Equal(c, []string{id + " running"}) {
			t.Fatalf("changes %v, want the run born running", c)
		}
		got := waitingRead(t, h, h.Conv, h.Watch, id)
		h.Drain()
		if c := h.Changes(); !slices.Equal(c, []string{id + " running", id + " completed"}) {
			t.Fatalf("changes %v, want the run's completion", c)
		}
		a := <-got
		if a.err != nil || a.doc.Status != "completed" {
			t.Fatalf("waiting read = %+v, %v; want completed", a.doc, a.err)
		}
		if n := h.Watch.Waiting(id); n != 0 {
			t.Fatalf("%d waiters left after the answer", n)
		}
		busy := h.Create(`{"steps":[{"model":{"model":"mock/scripted","prompt":"!mock\nround 1\nsay hi"}}],"approval_mode":"bypass"}`).Run.PublicID
		if _, err := h.Conv.StopRun(h.Ctx, h.Actor, busy, true); err != nil {
			t.Fatal(err)
		}
		if c := h.Changes(); !slices.Equal(c[2:], []string{busy + " running", busy + " canceled"}) {
			t.Fatalf("changes %v, want the stop reported", c)
		}
		// A call held for approval leaves the run running, and is a change a waiting read answers.
		held := h.Create(`{"steps":[{"model":{"model":"mock/scripted","prompt":"!mock\nround 1\ncall memory_ls {}\nround 2\nsay x",` + memoryTools + `}}],"approval_mode":"ask"}`).Run.PublicID
		got = waitingRead(t, h, h.Conv, h.Watch, held)
		h.Drain()
		if c := h.Changes(); !slices.Equal(c[4:], []string{held + " running"}) {
			t.Fatalf("changes %v, want the held run still running", c)
		}
		if a := <-got; a.err != nil || a.doc.Status != "running" || len(a.doc.Attention) != 1 || a.doc.Attention[0].Reason != "approval_required" {
			t.Fatalf("waiting read of a held run = %+v, %v; want it with its attention", a.doc, a.err)
		}
		// A watch on another instance's feed hears the change through the relay.
		afar := events.New()
		relayed := events.NewRelay(afar, func(string) {})
		events.NewRelay(h.Events, relayed.Notified)
		farWatch := conversations.NewRunWatch(afar)
		defer farWatch.Close()
		far := conversations.NewDoors(h.E, farWatch)
		other := h.Create(`{"steps":[{"model":{"model":"mock/scripted","prompt":"!mock\nround 1\nsay hi"}}],"approval_mode":"bypass"}`).Run.PublicID
		fromAfar := waitingRead(t, h, far, farWatch, other)
		h.Drain()
		if a := <-fromAfar; a.err != nil || a.doc.Status != "completed" {
			t.Fatalf("read on another instance's watch = %+v, %v; want completed", a.doc, a.err)
		}
		// A watch that hears nothing answers when its wait passes, with the run as it is.
		deafWatch := conversations.NewRunWatch(nil)
		deaf := conversations.NewDoors(h.E, deafWatch)
		quiet := h.Create(`{"steps":[{"model":{"model":"mock/scripted","prompt":"!mock\nround 1\nsay hi"}}],"approval_mode":"bypass"}`).Run.PublicID
		if d, err := deaf.ReadRunWaiting(h.Ctx, h.Actor, quiet, 50*time.Millisecond); err != nil || d.Status != "running" {
			t.Fatalf("read on a deaf watch = %+v, %v; want running once the wait passed", d, err)
		}
		// A read of a run that is not running answers at once, whatever its wait.
		start := time.Now()
		if d, err := h.Conv.ReadRunWaiting(h.Ctx, h.Actor, busy, time.Minute); err != nil || d.Status != "canceled" || time.Since(start) > 10*time.Second {
			t.Fatalf("read of a stopped run = %+v, %v", d, err)
		}
	})
}
