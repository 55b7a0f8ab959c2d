package store_test

import (
	"context"
	"testing"

	"github.com/nexuskernel/nexus/core/store"
	"github.com/nexuskernel/nexus/core/store/storetest"
)

// TestInstanceLifecycle: an instance registers, renews its heartbeat, is listed live while the
// heartbeat is current, is declared dead once (by one survivor, never by itself) when it lapses,
// learns at its next heartbeat that it had been declared dead, and is live again after it.
func TestInstanceLifecycle(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		a := store.Instance{ID: "inst_a", Host: "ha", Version: "v1", StartedAt: 1000, HeartbeatAt: 1000}
		b := store.Instance{ID: "inst_b", Host: "hb", Version: "v1", StartedAt: 2000, HeartbeatAt: 2000}
		for _, in := range []store.Instance{a, b} {
			if err := s.RegisterInstance(ctx, in); err != nil {
				t.Fatal(err)
			}
		}
		if dead, err := s.Heartbeat(ctx, b, 5000); err != nil || dead {
			t.Fatalf("b's heartbeat: dead %v, %v", dead, err)
		}
		live, err := store.LiveInstances(ctx, s.Reader(), 900)
		if err != nil || len(live) != 2 || live[0].ID != "inst_a" || live[1].HeartbeatAt != 5000 {
			t.Fatalf("live: %+v %v", live, err)
		}
		if live, _ := store.LiveInstances(ctx, s.Reader(), 4000); len(live) != 1 || live[0].ID != "inst_b" {
			t.Fatalf("live past a's heartbeat: %+v", live)
		}
		var first, second []store.Instance
		err = s.Write(ctx, func(tx *store.Tx) error {
			// An instance never declares itself dead, whatever its heartbeat says.
			if self, err := store.DeclareDead(ctx, tx, "inst_a", 4000, 6000); err != nil || len(self) != 0 {
				t.Errorf("a declared itself dead: %+v %v", self, err)
			}
			var err error
			if first, err = store.DeclareDead(ctx, tx, "inst_b", 4000, 6000); err != nil {
				return err
			}
			second, err = store.DeclareDead(ctx, tx, "inst_b", 4000, 6100)
			return err
		})
		if err != nil || len(first) != 1 || first[0].ID != "inst_a" || first[0].Host != "ha" || len(second) != 0 {
			t.Fatalf("declared dead: %+v then %+v, %v", first, second, err)
		}
		if live, _ := store.LiveInstances(ctx, s.Reader(), 0); len(live) != 1 || live[0].ID != "inst_b" {
			t.Fatalf("live after a's death: %+v", live)
		}
		if dead, err := s.Heartbeat(ctx, a, 7000); err != nil || !dead {
			t.Fatalf("a coming back: dead %v, %v", dead, err)
		}
		if dead, err := s.Heartbeat(ctx, a, 7200); err != nil || dead {
			t.Fatalf("a's next heartbeat: dead %v, %v", dead, err)
		}
		if live, _ := store.LiveInstances(ctx, s.Reader(), 0); len(live) != 2 {
			t.Fatalf("live after a came back: %+v", live)
		}
		// A clean stop declares the instance dead; after the retention the row is forgotten, and
		// a heartbeat of the same id says it was declared dead.
		if err := s.LeaveInstance(ctx, "inst_b", 8000); err != nil {
			t.Fatal(err)
		}
		var forgot int64
		err = s.Write(ctx, func(tx *store.Tx) error {
			var err error
			forgot, err = store.ForgetInstances(ctx, tx, 9000)
			return err
		})
		if err != nil || forgot != 1 {
			t.Fatalf("forgot %d, %v", forgot, err)
		}
		if dead, err := s.Heartbeat(ctx, b, 9500); err != nil || !dead {
			t.Fatalf("b after it was forgotten: dead %v, %v", dead, err)
		}
	})
}

// TestOrphanedClaims: a kernel claim records its instance; once that instance is declared dead,
// its live claimed rows are orphaned for every other instance (not for itself), an executor's
// claim (no instance) and a claim of a live or unregistered instance never are, and a row claimed
// again is no longer the same orphan.
func TestOrphanedClaims(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		for _, id := range []string{"inst_dead", "inst_live"} {
			if err := s.RegisterInstance(ctx, store.Instance{ID: id, Host: "h", Version: "v", StartedAt: 1, HeartbeatAt: 1}); err != nil {
				t.Fatal(err)
			}
		}
		seedRun(t, s, 4)
		claim := func(instance string) *store.Claimed {
			c, err := s.ClaimOne(ctx, store.ClaimSpec{Runnable: runnable, Now: 10, ClaimedBy: store.KernelClaimant, Instance: instance})
			if err != nil || c == nil {
				t.Fatalf("claim: %v %v", c, err)
			}
			return c
		}
		dead, live := claim("inst_dead"), claim("inst_live")
		claim("")            // an executor's claim
		claim("inst_nobody") // an engine that never registered
		var orphans []store.OrphanedClaim
		err := s.Write(ctx, func(tx *store.Tx) error {
			if _, err := store.DeclareDead(ctx, tx, "inst_live", 5, 20); err != nil {
				return err
			}
			if mine, err := store.OrphanedClaims(ctx, tx, "inst_dead", 10); err != nil || len(mine) != 0 {
				t.Errorf("the dead instance's own view: %+v %v", mine, err)
			}
			var err error
			orphans, err = store.OrphanedClaims(ctx, tx, "inst_live", 10)
			return err
		})
		if err != nil || len(orphans) != 1 || orphans[0].ID != dead.ID || orphans[0].Instance != "inst_dead" || orphans[0].Generation != dead.Generation {
			t.Fatalf("orphans: %+v %v (dead %d, live %d)", orphans, err, dead.ID, live.ID)
		}
		err = s.Write(ctx, func(tx *store.Tx) error {
			ok, err := store.StillOrphaned(ctx, tx, dead.ID, dead.Generation, "inst_live")
			if err != nil || !ok {
				t.Errorf("still orphaned: %v %v", ok, err)
			}
			if ok, _ := store.StillOrphaned(ctx, tx, dead.ID, dead.Generation+1, "inst_live"); ok {
				t.Error("another generation is the same orphan")
			}
			if ok, _ := store.StillOrphaned(ctx, tx, live.ID, live.Generation, "inst_live"); ok {
				t.Error("a live instance's claim is orphaned")
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	})
}
