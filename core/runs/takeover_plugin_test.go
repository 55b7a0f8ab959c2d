package runs_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nexuskernel/nexus/core/conversations"
	"github.com/nexuskernel/nexus/core/kernel"
	"github.com/nexuskernel/nexus/core/model"
	"github.com/nexuskernel/nexus/core/registry"
	"github.com/nexuskernel/nexus/core/runs"
	"github.com/nexuskernel/nexus/core/store"
	"github.com/nexuskernel/nexus/core/store/storetest"
	"github.com/nexuskernel/nexus/sdk/announce"
)

// poolAnnouncements answers addressing with one tool provider serving each name of the map.
type poolAnnouncements map[string]runs.Served

func (poolAnnouncements) RunnerTool(context.Context, store.Querier, int64, string, string) (runs.Served, bool, error) {
	return runs.Served{}, false, nil
}

func (a poolAnnouncements) PoolTool(_ context.Context, _ store.Querier, _ int64, name string) ([]runs.Served, error) {
	if s, ok := a[name]; ok {
		return []runs.Served{s}, nil
	}
	return nil, nil
}

// signals records the executor signals an engine sends, as "available run/key executors" and
// "canceled run/key reason".
type signals struct {
	mu  sync.Mutex
	got []string
}

func (s *signals) WorkAvailable(run, key, _ string, executors []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.got = append(s.got, fmt.Sprintf("available %s/%s %v", run, key, executors))
}

func (s *signals) WorkCanceled(run, key string, _ []string, reason string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.got = append(s.got, fmt.Sprintf("canceled %s/%s %s", run, key, reason))
}

func (s *signals) take() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := s.got
	s.got = nil
	return out
}

// toolStep is a run object of one tool step with a ten-minute park, served by the pool.
func toolStep(name string) string {
	return `{"steps":[{"tool":{"name":"` + name + `","timeout_ms":600000}}],"approval_mode":"bypass"}`
}

// TestTakeoverOfADeadInstancesPluginClaims (docs/operations.md#instance-liveness-and-takeover): the
// claims a dead instance's plugin held are released by a survivor's sweep at once, ten minutes
// before their deadlines. A replayable call is released for the survivors' copies of the plugin:
// the row stays dispatched, unclaimed, its park's clock restarted, its executors told
// work_available, and the next claim is the next generation. A call that may have acted settles
// uncertain, tool_uncertain, naming the claim and the instance that ended. A replayable call the
// third dead instance held settles timed_out. An HTTP executor's claim, which names no instance,
// keeps its deadline. The dead plugin's late commit is refused by the claim fence.
func TestTakeoverOfADeadInstancesPluginClaims(t *testing.T) {
	t.Parallel()
	provider := "01900000-0000-7000-8000-000000000061"
	pool := poolAnnouncements{
		"fetch":  {ExecutorPublicID: provider, DisplayName: "plugin tools", Profile: announce.EffectReadOnly},
		"deploy": {ExecutorPublicID: provider, DisplayName: "plugin tools", Profile: announce.EffectWrite},
	}
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		h := newHarness(t, s, harnessOptions{announcements: pool})
		sig := &signals{}
		survivor, err := runs.New(runs.Options{Store: s, Conversations: conversations.Hosted{}, Models: model.MustBuiltin(), Registry: registry.New(), Texts: kernel.New(kernel.Options{}),
			Now: h.clock.Now, Announcements: pool, Signal: sig,
			Config: runs.Config{ModelTimeout: time.Hour, HeartbeatInterval: 100 * time.Millisecond, HeartbeatTimeout: time.Second}})
		if err != nil {
			t.Fatal(err)
		}
		if err := runs.Register(h.ctx, survivor); err != nil {
			t.Fatal(err)
		}
		// Three instances whose plugin hosts hold claims, and which will not renew their
		// heartbeats.
		now := h.clock.Now().UnixMilli()
		for _, id := range []string{"inst_gone_1", "inst_gone_2", "inst_gone_3"} {
			if err := s.RegisterInstance(h.ctx, store.Instance{ID: id, Host: "h", Version: "v", StartedAt: now, HeartbeatAt: now}); err != nil {
				t.Fatal(err)
			}
		}
		const key = "s1-tool-1"
		// claim claims the run's row as the plugin plane does on instance (an HTTP executor's
		// claim names none).
		claim := func(run, instance string) *store.Claimed {
			t.Helper()
			r, err := store.RunByPublicID(h.ctx, s.Reader(), h.actor.WorkspaceID, run)
			if err != nil {
				t.Fatal(err)
			}
			row, err := store.TaskByKey(h.ctx, s.Reader(), r.ID, key)
			if err != nil {
				t.Fatal(err)
			}
			c, err := s.ClaimOne(h.ctx, store.ClaimSpec{Runnable: store.DispatchedUnclaimed(row.ID),
				Now: h.clock.Now().UnixMilli(), DefaultTimeoutMS: runs.ToolParkDefault.Milliseconds(),
				ClaimedBy: store.ExecutorClaimant(provider), Instance: instance})
			if err != nil || c == nil {
				t.Fatalf("claim of %s on %q: %v %v", run, instance, c, err)
			}
			return c
		}
		// commit settles the row under c, as the commit door does after its checks.
		commit := func(c *store.Claimed, output string) error {
			return h.e.Write(h.ctx, func(x *runs.Tx) error {
				run, tk, err := x.LockRow(h.ctx, c.RunID, c.ID)
				if err != nil {
					return err
				}
				return x.Settle(h.ctx, run, tk, runs.ToolSettlement{Status: runs.StatusCompleted, Output: output,
					Generation: c.Generation, TokenHash: c.TokenHash})
			})
		}
		sweep := func(want int) {
			t.Helper()
			if n, err := survivor.Sweep(h.ctx); err != nil || n != want {
				t.Fatalf("sweep: %d %v, want %d", n, err, want)
			}
		}
		read := h.create(toolStep("fetch")).Run.PublicID
		write := h.create(toolStep("deploy")).Run.PublicID
		byHTTP := h.create(toolStep("fetch")).Run.PublicID
		thrice := h.create(toolStep("fetch")).Run.PublicID
		readClaim, _, httpClaim := claim(read, "inst_gone_1"), claim(write, "inst_gone_1"), claim(byHTTP, "")
		claim(thrice, "inst_gone_1")
		sig.take()

		// Nothing is taken over while the instances live.
		sweep(0)
		h.clock.Advance(2 * time.Second)
		runs.Beat(h.ctx, survivor)
		released := h.clock.Now().UnixMilli()
		sweep(3)

		tk := h.task(read, key)
		wantDeadline := store.FormatMillis(released + 600000)
		if tk.Status != runs.StatusDispatched || tk.Claim != nil || deref(tk.DeadlineAt) != wantDeadline {
			t.Fatalf("the released replayable call: %s claim %+v deadline %s, want dispatched, unclaimed, %s", tk.Status, tk.Claim, deref(tk.DeadlineAt), wantDeadline)
		}
		tk = h.task(write, key)
		wantDetail := "by executor " + provider + " on instance inst_gone_1 ended with that instance's heartbeat; the tool may have run"
		if tk.Status != runs.StatusUncertain || tk.Error == nil || tk.Error.Key != runs.KeyToolUncertain || !strings.HasSuffix(tk.Error.Detail, wantDetail) {
			t.Fatalf("the call that may have acted: %s %+v", tk.Status, tk.Error)
		}
		if r := h.run(write); r.Status != runs.RunNeedsAttention {
			t.Fatalf("the uncertain call's run: %s", r.Status)
		}
		if tk := h.task(byHTTP, key); tk.Status != runs.StatusDispatched || tk.Claim == nil || tk.Claim.Generation != httpClaim.Generation {
			t.Fatalf("the HTTP executor's claim: %s %+v", tk.Status, tk.Claim)
		}
		got := strings.Join(sig.take(), "; ")
		for _, want := range []string{"available " + read + "/" + key + " [" + provider + "]", "canceled " + write + "/" + key + " expired",
			"available " + thrice + "/" + key + " [" + provider + "]"} {
			if !strings.Contains(got, want) {
				t.Errorf("signals %q lack %q", got, want)
			}
		}

		// The dead plugin's late commit is refused by the claim fence, before and after the
		// survivor's plugin claims the row again.
		if err := commit(readClaim, "late"); err == nil {
			t.Fatal("the released claim's late commit was applied")
		}
		again := claim(read, survivor.InstanceID())
		if again.ID != readClaim.ID || again.Generation != readClaim.Generation+1 {
			t.Fatalf("the survivor's claim: %+v after %+v", again, readClaim)
		}
		if err := commit(readClaim, "late"); err == nil {
			t.Fatal("the released claim's late commit was applied over the survivor's claim")
		}
		if err := commit(again, "fetched"); err != nil {
			t.Fatal(err)
		}
		if r := h.run(read); r.Status != runs.RunCompleted || deref(r.Answer) != "fetched" {
			t.Fatalf("the replayed call's run: %s %q", r.Status, deref(r.Answer))
		}
		// The survivor's own claim is no orphan.
		sweep(0)

		// A call the next two dead instances held in turn is released once more, then settled:
		// its third claim was its last.
		claim(thrice, "inst_gone_2")
		sweep(1)
		third := claim(thrice, "inst_gone_3")
		if third.Generation != runs.MaxPluginClaims {
			t.Fatalf("the third claim is generation %d", third.Generation)
		}
		sweep(1)
		tk = h.task(thrice, key)
		if tk.Status != runs.StatusTimedOut || tk.Error == nil || tk.Error.Key != runs.KeyToolTimeout ||
			!strings.HasSuffix(tk.Error.Detail, "on instance inst_gone_3 ended with that instance's heartbeat; claimed 3 times without settling") {
			t.Fatalf("the call on its third claim: %s %+v", tk.Status, tk.Error)
		}
		if tk := h.task(byHTTP, key); tk.Status != runs.StatusDispatched || tk.Claim == nil {
			t.Fatalf("the HTTP executor's claim after the takeovers: %s %+v", tk.Status, tk.Claim)
		}
	})
}
