package store_test

import (
	"context"
	"errors"
	"reflect"
	"strconv"
	"testing"
	"time"

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

// TestReleasedPluginClaimIsNoOrphan: a plugin's claim records its instance; releasing it (a
// replayable call a dead instance's plugin held, docs/operations.md#instance-liveness-and-takeover,
// store.ReleaseClaim) leaves the row no orphan any more, while the dead instance's other claims
// stay orphans; a write fenced on the released claim changes nothing, and the next claim takes the
// row as the next generation. The statement's own guards are TestReleaseClaim's.
func TestReleasedPluginClaimIsNoOrphan(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		if err := s.RegisterInstance(ctx, store.Instance{ID: "inst_dead", Host: "h", Version: "v", StartedAt: 1, HeartbeatAt: 1}); err != nil {
			t.Fatal(err)
		}
		_, rows := seedRunRows(t, s, 2)
		err := s.Write(ctx, func(tx *store.Tx) error {
			for _, r := range rows {
				if _, err := (store.Dispatch{ID: r.ID, Status: "dispatched", At: 1}).Exec(ctx, tx); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		byPlugin := store.ExecutorClaimant("01900000-0000-7000-8000-000000000061")
		claim := func(id, now int64, instance string) *store.Claimed {
			t.Helper()
			c, err := s.ClaimOne(ctx, store.ClaimSpec{Runnable: store.DispatchedUnclaimed(id), Now: now, ClaimedBy: byPlugin, Instance: instance})
			if err != nil || c == nil {
				t.Fatalf("claim: %v %v", c, err)
			}
			return c
		}
		c, other := claim(rows[0].ID, 10, "inst_dead"), claim(rows[1].ID, 10, "inst_dead")
		var orphans []store.OrphanedClaim
		err = s.Write(ctx, func(tx *store.Tx) error {
			if _, err := store.DeclareDead(ctx, tx, "inst_live", 5, 20); err != nil {
				return err
			}
			var err error
			orphans, err = store.OrphanedClaims(ctx, tx, "inst_live", 10)
			return err
		})
		if err != nil || len(orphans) != 2 || orphans[0].Instance != "inst_dead" {
			t.Fatalf("a plugin's claims of a dead instance: %+v %v", orphans, err)
		}
		err = s.Write(ctx, func(tx *store.Tx) error {
			ok, err := store.ReleaseClaim{ID: c.ID, Deadline: 5000, From: "dispatched", Generation: c.Generation}.Exec(ctx, tx)
			if err == nil && !ok {
				err = errors.New("the claim was not released")
			}
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		var instance *string
		if err := s.Reader().Get(ctx, &instance, `SELECT claimed_instance FROM tasks WHERE id = ?`, c.ID); err != nil || instance != nil {
			t.Fatalf("the released row's instance: %v %v", instance, err)
		}
		// The claim fence refuses a write under the released claim.
		err = s.Write(ctx, func(tx *store.Tx) error {
			ok, err := store.Settle{ID: c.ID, Status: "completed", At: 30, From: "dispatched",
				Claim: &store.Fence{Generation: c.Generation, TokenHash: c.TokenHash}}.Exec(ctx, tx, nil)
			if ok {
				t.Error("a write under the released claim was applied")
			}
			if err != nil {
				return err
			}
			orphans, err = store.OrphanedClaims(ctx, tx, "inst_live", 10)
			return err
		})
		if err != nil || len(orphans) != 1 || orphans[0].ID != other.ID {
			t.Fatalf("orphans after the release: %+v %v", orphans, err)
		}
		if again := claim(c.ID, 20, "inst_live"); again.Generation != c.Generation+1 {
			t.Fatalf("the claim after the release: %+v", again)
		}
	})
}

// TestPluginRoots: an instance records its root of a plugin and replaces it; the live listing
// reads only live instances' rows, oldest instance first, with their host; a row goes with its
// plugin block or with its forgotten instance; and the admissions' lock serializes one plugin.
func TestPluginRoots(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		a := store.Instance{ID: "inst_a", Host: "ha", Version: "v1", StartedAt: 1000, HeartbeatAt: 1000}
		b := store.Instance{ID: "inst_b", Host: "hb", Version: "v1", StartedAt: 2000, HeartbeatAt: 2000}
		for _, in := range []store.Instance{b, a} {
			if err := s.RegisterInstance(ctx, in); err != nil {
				t.Fatal(err)
			}
		}
		put := func(r store.PluginRoot) {
			t.Helper()
			err := s.Write(ctx, func(tx *store.Tx) error {
				if err := store.LockPluginRoots(ctx, tx, r.Plugin); err != nil {
					return err
				}
				return store.PutPluginRoot(ctx, tx, r)
			})
			if err != nil {
				t.Fatal(err)
			}
		}
		put(store.PluginRoot{InstanceID: "inst_b", Plugin: "memory-fs", RootID: "r2", RootPath: "/b", Serving: false, RecordedAt: 2100})
		put(store.PluginRoot{InstanceID: "inst_a", Plugin: "memory-fs", RootID: "r0", RootPath: "/old", Serving: true, RecordedAt: 1100})
		put(store.PluginRoot{InstanceID: "inst_a", Plugin: "memory-fs", RootID: "r1", RootPath: "/a", Serving: true, RecordedAt: 1200})
		put(store.PluginRoot{InstanceID: "inst_a", Plugin: "other", RootID: "r9", RootPath: "/o", Serving: true, RecordedAt: 1200})
		got, err := store.LivePluginRoots(ctx, s.Reader(), "memory-fs", 0)
		want := []store.PluginRoot{
			{InstanceID: "inst_a", Plugin: "memory-fs", RootID: "r1", RootPath: "/a", Serving: true, RecordedAt: 1200, Host: "ha", StartedAt: 1000},
			{InstanceID: "inst_b", Plugin: "memory-fs", RootID: "r2", RootPath: "/b", Serving: false, RecordedAt: 2100, Host: "hb", StartedAt: 2000},
		}
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Fatalf("live roots: %+v %v\nwant %+v", got, err, want)
		}
		// Past a's heartbeat only b's row is live; a declared dead and forgotten takes its rows.
		if got, _ := store.LivePluginRoots(ctx, s.Reader(), "memory-fs", 1500); len(got) != 1 || got[0].InstanceID != "inst_b" {
			t.Fatalf("live roots past a's heartbeat: %+v", got)
		}
		if err := s.Write(ctx, func(tx *store.Tx) error { return store.DeletePluginRoot(ctx, tx, "inst_b", "memory-fs") }); err != nil {
			t.Fatal(err)
		}
		if err := s.LeaveInstance(ctx, "inst_a", 3000); err != nil {
			t.Fatal(err)
		}
		if got, _ := store.LivePluginRoots(ctx, s.Reader(), "memory-fs", 0); len(got) != 0 {
			t.Fatalf("live roots after b's delete and a's leave: %+v", got)
		}
		err = s.Write(ctx, func(tx *store.Tx) error {
			_, err := store.ForgetInstances(ctx, tx, 4000)
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		var left int
		if err := s.Reader().Get(ctx, &left, `SELECT COUNT(*) FROM instance_plugin_roots`); err != nil || left != 0 {
			t.Fatalf("rows left after a was forgotten: %d %v", left, err)
		}
	})
}

// TestPluginRootsLockWaits: on PostgreSQL a second admission of one plugin waits for the first
// transaction to end (SQLite's single writer serializes them already).
func TestPluginRootsLockWaits(t *testing.T) {
	t.Parallel()
	if storetest.PostgresURL() == "" {
		t.Log("PostgreSQL not configured: SQLite's one writer serializes admissions")
		return
	}
	s := storetest.Open(t, store.Postgres)
	ctx := context.Background()
	// A name of its own, so that no other test's admission shows in pg_locks.
	plugin := "lock-test-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	held, release := make(chan struct{}), make(chan struct{})
	first := make(chan error, 1)
	go func() {
		first <- s.Write(ctx, func(tx *store.Tx) error {
			if err := store.LockPluginRoots(ctx, tx, plugin); err != nil {
				return err
			}
			close(held)
			<-release
			return nil
		})
	}()
	<-held
	var secondDone time.Time
	second := make(chan error, 1)
	go func() {
		second <- s.Write(ctx, func(tx *store.Tx) error {
			err := store.LockPluginRoots(ctx, tx, plugin)
			secondDone = time.Now()
			return err
		})
	}()
	// The second admission shows as an advisory lock not granted until the first commits.
	deadline := time.Now().Add(30 * time.Second)
	for {
		var waiting int
		if err := s.Reader().Get(ctx, &waiting, `SELECT COUNT(*) FROM pg_locks
WHERE locktype = 'advisory' AND NOT granted AND objsubid = 2 AND objid::bigint = (hashtext(?)::bigint & 4294967295)`, plugin); err != nil {
			t.Fatal(err)
		}
		if waiting > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the second admission never waited on the first")
		}
		time.Sleep(5 * time.Millisecond)
	}
	committed := time.Now()
	close(release)
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	if err := <-second; err != nil {
		t.Fatal(err)
	}
	if secondDone.Before(committed) {
		t.Fatal("the second admission took the lock while the first held it")
	}
}
