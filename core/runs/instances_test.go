package runs_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/nexuskernel/nexus/core/conversations"
	"github.com/nexuskernel/nexus/core/kernel"
	"github.com/nexuskernel/nexus/core/liveness"
	"github.com/nexuskernel/nexus/core/model"
	"github.com/nexuskernel/nexus/core/registry"
	"github.com/nexuskernel/nexus/core/runs"
	"github.com/nexuskernel/nexus/core/store"
	"github.com/nexuskernel/nexus/core/store/storetest"
)

// TestTakeoverOfADeadInstance (docs/operations.md#instance-liveness-and-takeover): a model round
// claimed by one instance whose heartbeat then lapses is released by another instance's sweep at
// once, long before the claim's deadline, as the expiry rule releases a lost round; the dead
// instance's late commit is refused by the claim fence, and the survivor's claim completes the
// run on the round's second attempt.
func TestTakeoverOfADeadInstance(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		h := newHarness(t, s, harnessOptions{})
		survivor, err := runs.New(runs.Options{Store: s, Conversations: conversations.Hosted{}, Models: model.MustBuiltin(), Registry: registry.New(), Texts: kernel.New(kernel.Options{}), Now: h.clock.Now,
			Config: runs.Config{ModelTimeout: time.Hour, HeartbeatInterval: 100 * time.Millisecond, HeartbeatTimeout: time.Second}})
		if err != nil {
			t.Fatal(err)
		}
		if got := survivor.HeartbeatLapse(); got != liveness.ReasonNotRegistered {
			t.Fatalf("before registering: %q", got)
		}
		for _, e := range []*runs.Engine{h.e, survivor} {
			if err := runs.Register(h.ctx, e); err != nil {
				t.Fatal(err)
			}
		}
		if got := survivor.HeartbeatLapse(); got != "" {
			t.Fatalf("registered: %q", got)
		}
		run := h.create(modelStep("Once.\n!mock\nround 1\nsay done", ""))
		c, err := h.e.ClaimKernel(h.ctx)
		if err != nil || c == nil {
			t.Fatalf("claim: %v %v", c, err)
		}
		// Nothing to take over while the claimant lives.
		if n, err := survivor.Sweep(h.ctx); err != nil || n != 0 {
			t.Fatalf("sweep while the claimant lives: %d %v", n, err)
		}
		h.clock.Advance(2 * time.Second)
		runs.Beat(h.ctx, survivor)
		if n, err := survivor.Sweep(h.ctx); err != nil || n != 1 {
			t.Fatalf("sweep after the claimant's heartbeat lapsed: %d %v", n, err)
		}
		tk := h.task(run.Run.PublicID, c.Key)
		if tk.Status != runs.StatusRunning || tk.Claim != nil || tk.Attempts == nil || *tk.Attempts != 1 {
			t.Fatalf("the released round: %+v", tk)
		}
		// The dead instance comes back with its answer: the fence refuses it.
		if err := h.e.Evaluate(h.ctx, c); !errors.Is(err, runs.ErrLostClaim) {
			t.Fatalf("late commit: %v, want the claim fence's refusal", err)
		}
		again, err := survivor.ClaimKernel(h.ctx)
		if err != nil || again == nil || again.ID != c.ID || again.Generation != c.Generation+1 {
			t.Fatalf("the survivor's claim: %+v %v", again, err)
		}
		if err := survivor.Evaluate(h.ctx, again); err != nil {
			t.Fatal(err)
		}
		done := h.run(run.Run.PublicID)
		if done.Status != runs.StatusCompleted || done.Answer == nil || *done.Answer != "done" {
			t.Fatalf("the run: %s %v", done.Status, done.Answer)
		}
		if tk := h.task(run.Run.PublicID, c.Key); tk.Attempts == nil || *tk.Attempts != 2 {
			t.Fatalf("attempts: %+v", tk.Attempts)
		}
		// The dead instance learns at its next heartbeat that it was declared dead; its own
		// heartbeat is not current once the timeout passed without a renewal the store took.
		runs.Beat(h.ctx, h.e)
		lapsed, err := runs.New(runs.Options{Store: s, Conversations: conversations.Hosted{}, Models: model.MustBuiltin(), Registry: registry.New(), Texts: kernel.New(kernel.Options{}),
			Config: runs.Config{HeartbeatInterval: time.Millisecond, HeartbeatTimeout: 2 * time.Millisecond}})
		if err != nil {
			t.Fatal(err)
		}
		if err := runs.Register(h.ctx, lapsed); err != nil {
			t.Fatal(err)
		}
		time.Sleep(5 * time.Millisecond)
		if got := lapsed.HeartbeatLapse(); !strings.HasPrefix(got, liveness.ReasonHeartbeatLapsed+": ") {
			t.Fatalf("a lapsed heartbeat: %q", got)
		}
	})
}
