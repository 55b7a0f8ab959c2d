package store_test

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"sync"
	"testing"

	"github.com/lib/pq"
	"github.com/nexuskernel/nexus/core/store"
	"github.com/nexuskernel/nexus/core/store/storetest"
)

func seedRun(t *testing.T, s *store.Store, rows int) *store.Run {
	t.Helper()
	ctx := context.Background()
	r := &store.Run{PublicID: store.NewPublicID(), CreatedByKind: "user", CreatedByPublicID: store.NewPublicID(), Status: "running",
		ApprovalMode: "bypass", ApprovalRules: "[]", DeliverableTaskKey: "k0", Revision: 1, MainlineRoundCounter: 1, MemoryContext: "{}"}
	err := s.Write(ctx, func(tx *store.Tx) error {
		// The id's last characters are random; its first ones are its creation time.
		w := &store.Workspace{PublicID: store.NewPublicID(), Handle: "w" + r.PublicID[len(r.PublicID)-8:], Name: "W"}
		if err := store.InsertWorkspace(ctx, tx, w); err != nil {
			return err
		}
		r.WorkspaceID = w.ID
		if err := store.InsertRun(ctx, tx, r); err != nil {
			return err
		}
		for i := 0; i < rows; i++ {
			d := int64(i)
			t := &store.Task{TaskTrace: store.TaskTrace{
				RunID: r.ID, Key: fmt.Sprintf("k%d", i), Kind: "tool_task", Status: "running", OnFailure: "absorb",
				Lifetime: "turn", Wake: "auto", Visibility: "collapsed", LineageRoot: fmt.Sprintf("k%d", i),
				DispatchedAt: &d, TimeoutMS: ptr(int64(600000)),
			}}
			if err := store.InsertTask(ctx, tx, t); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// seedRunRows is seedRun with its rows as TraceTasks reads them.
func seedRunRows(t *testing.T, s *store.Store, rows int) (*store.Run, []store.TaskTrace) {
	t.Helper()
	r := seedRun(t, s, rows)
	tasks, err := store.TraceTasks(context.Background(), s.Reader(), r.ID)
	if err != nil {
		t.Fatal(err)
	}
	return r, tasks
}

func ptr[T any](v T) *T { return &v }

// runnable is the rows the claim tests take: running, unclaimed, of a running run.
var runnable = store.RunnableWhere(`t.status = 'running' AND t.claimed_at IS NULL AND r.status = 'running'`)

// TestClaimExclusive: concurrent claimers take every runnable row exactly once, each with a new
// generation, a token whose hash is stored, and a clock restarted from the claim.
func TestClaimExclusive(t *testing.T) {
	t.Parallel()
	claimExclusive(t, func(ctx context.Context, tx *store.Tx, spec store.ClaimSpec) ([]store.Claimed, error) {
		return store.Claim(ctx, tx, spec)
	})
}

// TestClaimFirstExclusive is TestClaimExclusive for the one-statement ClaimFirst.
func TestClaimFirstExclusive(t *testing.T) {
	t.Parallel()
	claimExclusive(t, func(ctx context.Context, tx *store.Tx, spec store.ClaimSpec) ([]store.Claimed, error) {
		c, err := store.ClaimFirst(ctx, tx, spec)
		if c == nil {
			return nil, err
		}
		return []store.Claimed{*c}, err
	})
}

func claimExclusive(t *testing.T, claim func(context.Context, *store.Tx, store.ClaimSpec) ([]store.Claimed, error)) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		const rows, claimers = 40, 8
		seedRun(t, s, rows)
		ctx := context.Background()
		var mu sync.Mutex
		seen := map[int64]int{}
		var wg sync.WaitGroup
		for i := 0; i < claimers; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					var got []store.Claimed
					err := s.Write(ctx, func(tx *store.Tx) error {
						var err error
						got, err = claim(ctx, tx, store.ClaimSpec{Runnable: runnable, Limit: 1, Now: 1000, ClaimedBy: store.KernelClaimant})
						return err
					})
					if err != nil {
						t.Error(err)
						return
					}
					if len(got) == 0 {
						return
					}
					mu.Lock()
					seen[got[0].ID]++
					mu.Unlock()
				}
			}()
		}
		wg.Wait()
		if len(seen) != rows {
			t.Fatalf("claimed %d distinct rows, want %d", len(seen), rows)
		}
		for id, n := range seen {
			if n != 1 {
				t.Errorf("row %d claimed %d times", id, n)
			}
		}
		tk, err := store.TaskByID(ctx, s.Reader(), 1)
		if err != nil {
			t.Fatal(err)
		}
		if tk.ClaimGeneration != 1 || len(tk.ClaimTokenHash) != 32 || deref(tk.DeadlineAt) != 601000 || deref(tk.StartedAt) != 1000 {
			t.Fatalf("claimed row: gen %d hash %d deadline %v started %v", tk.ClaimGeneration, len(tk.ClaimTokenHash), tk.DeadlineAt, tk.StartedAt)
		}
	})
}

func deref[T any](p *T) T {
	var z T
	if p == nil {
		return z
	}
	return *p
}

// TestLockTaskOfRun: the one-statement reads (LockTaskOfRun, LockRunAndTask) answer exactly what
// RunByPublicID and TaskByKey answer, LockRunAndTask holding both rows' locks, tell an unknown run (or another workspace's) from an unknown key, and
// reports whether the run's creator still belongs to the workspace: a user while a member, an
// agent until removed, the kernel always.
func TestLockTaskOfRun(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		r := seedRun(t, s, 2)
		ctx := context.Background()
		err := s.Write(ctx, func(tx *store.Tx) error {
			wantRun, err := store.RunByPublicID(ctx, tx, r.WorkspaceID, r.PublicID)
			if err != nil {
				return err
			}
			wantTask, err := store.TaskByKey(ctx, tx, r.ID, "k1")
			if err != nil {
				return err
			}
			run, task, in, err := store.LockTaskOfRun(ctx, tx, r.WorkspaceID, r.PublicID, "k1")
			if err != nil {
				return err
			}
			if !reflect.DeepEqual(run, wantRun) || !reflect.DeepEqual(task, wantTask) {
				return fmt.Errorf("joined read\n%+v\n%+v\nwant\n%+v\n%+v", run, task, wantRun, wantTask)
			}
			if run, task, err = store.LockRunAndTask(ctx, tx, r.WorkspaceID, r.PublicID, "k1"); err != nil {
				return err
			}
			if !reflect.DeepEqual(run, wantRun) || !reflect.DeepEqual(task, wantTask) {
				return fmt.Errorf("locked read\n%+v\n%+v\nwant\n%+v\n%+v", run, task, wantRun, wantTask)
			}
			if s.Dialect() == store.Postgres {
				// Both rows are locked now: another session's NOWAIT lock of either fails.
				for _, table := range []string{"runs", "tasks"} {
					id := r.ID
					if table == "tasks" {
						id = task.ID
					}
					var got int64
					err := s.DB().QueryRowContext(ctx, `SELECT id FROM `+table+` WHERE id = $1 FOR UPDATE NOWAIT`, id).Scan(&got)
					var pe *pq.Error
					if !errors.As(err, &pe) || pe.Code != "55P03" { // lock_not_available
						return fmt.Errorf("%s row not locked by LockRunAndTask: %v", table, err)
					}
				}
			}
			if in {
				return fmt.Errorf("a user who is no member stands as the run's creator")
			}
			// creatorIn answers whether the creator stands, read again after each change.
			creatorIn := func(want bool, what string) error {
				if _, _, in, err := store.LockTaskOfRun(ctx, tx, r.WorkspaceID, r.PublicID, "k1"); err != nil || in != want {
					return fmt.Errorf("%s: creator stands %v (%v), want %v", what, in, err, want)
				}
				return nil
			}
			u := &store.User{PublicID: r.CreatedByPublicID, Handle: "u" + r.PublicID[:8], DisplayName: "U"}
			if err := store.InsertUser(ctx, tx, u); err != nil {
				return err
			}
			if err := creatorIn(false, "a user of another workspace"); err != nil {
				return err
			}
			if err := store.InsertMembership(ctx, tx, r.WorkspaceID, u.ID, store.RoleMember, 0); err != nil {
				return err
			}
			if err := creatorIn(true, "a member"); err != nil {
				return err
			}
			agent := &store.Agent{PublicID: store.NewPublicID(), WorkspaceID: r.WorkspaceID, Handle: "a" + r.PublicID[:8], DisplayName: "A", StewardUserID: u.ID}
			if err := store.InsertAgent(ctx, tx, agent); err != nil {
				return err
			}
			if _, err := tx.Exec(ctx, `UPDATE runs SET created_by_kind = 'agent', created_by_public_id = ? WHERE id = ?`, agent.PublicID, r.ID); err != nil {
				return err
			}
			if err := creatorIn(true, "an agent"); err != nil {
				return err
			}
			if _, err := tx.Exec(ctx, `UPDATE agents SET removed_at = 1 WHERE id = ?`, agent.ID); err != nil {
				return err
			}
			if err := creatorIn(false, "a removed agent"); err != nil {
				return err
			}
			if _, err := tx.Exec(ctx, `UPDATE runs SET created_by_kind = 'kernel' WHERE id = ?`, r.ID); err != nil {
				return err
			}
			if err := creatorIn(true, "the kernel"); err != nil {
				return err
			}
			if run, task, _, err := store.LockTaskOfRun(ctx, tx, r.WorkspaceID, r.PublicID, "k9"); !errors.Is(err, store.ErrNotFound) || task != nil || run == nil || run.ID != r.ID {
				return fmt.Errorf("unknown key: %v %v %v", run, task, err)
			}
			if run, task, err := store.LockRunAndTask(ctx, tx, r.WorkspaceID, r.PublicID, "k9"); !errors.Is(err, store.ErrNotFound) || task != nil || run == nil || run.ID != r.ID {
				return fmt.Errorf("locked, unknown key: %v %v %v", run, task, err)
			}
			for _, c := range []struct {
				ws  int64
				run string
			}{{r.WorkspaceID, store.NewPublicID()}, {r.WorkspaceID + 1, r.PublicID}} {
				if run, task, _, err := store.LockTaskOfRun(ctx, tx, c.ws, c.run, "k1"); !errors.Is(err, store.ErrNotFound) || task != nil || run != nil {
					return fmt.Errorf("unknown run %v: %v %v %v", c, run, task, err)
				}
				if run, task, err := store.LockRunAndTask(ctx, tx, c.ws, c.run, "k1"); !errors.Is(err, store.ErrNotFound) || task != nil || run != nil {
					return fmt.Errorf("locked, unknown run %v: %v %v %v", c, run, task, err)
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	})
}

// TestAnyRunnable: the lock-free look answers whether a claim would find a row, and neither
// claims nor locks anything: the row is still claimed afterwards, and once it is, the look
// finds nothing.
func TestAnyRunnable(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		if found, err := store.AnyRunnable(ctx, s.Reader(), runnable); err != nil || found {
			t.Fatalf("empty store: %v, %v", found, err)
		}
		r := seedRun(t, s, 1)
		if found, err := store.AnyRunnable(ctx, s.Reader(), runnable.OfRun(r.ID)); err != nil || !found {
			t.Fatalf("a runnable row: %v, %v", found, err)
		}
		if found, err := store.AnyRunnable(ctx, s.Reader(), runnable.OfRun(r.ID+1)); err != nil || found {
			t.Fatalf("another run's predicate: %v, %v", found, err)
		}
		c, err := s.ClaimOne(ctx, store.ClaimSpec{Runnable: runnable, Now: 10, ClaimedBy: store.KernelClaimant})
		if err != nil || c == nil {
			t.Fatalf("claim after the look: %v, %v", c, err)
		}
		if found, err := store.AnyRunnable(ctx, s.Reader(), runnable); err != nil || found {
			t.Fatalf("after the claim: %v, %v", found, err)
		}
		if c, err := s.ClaimOne(ctx, store.ClaimSpec{Runnable: runnable, Now: 11, ClaimedBy: store.KernelClaimant}); err != nil || c != nil {
			t.Fatalf("a second claim: %v, %v", c, err)
		}
	})
}

// TestTaskAndRunByID: the joined read answers the row and its run as the separate reads do,
// whether the run holds a detached row (none, then one), and ErrNotFound for an unknown row.
func TestTaskAndRunByID(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		r := seedRun(t, s, 2)
		ctx := context.Background()
		tasks, err := store.TraceTasks(ctx, s.Reader(), r.ID)
		if err != nil || len(tasks) != 2 {
			t.Fatalf("tasks %d, %v", len(tasks), err)
		}
		wantTask, err := store.TaskByID(ctx, s.Reader(), tasks[1].ID)
		if err != nil {
			t.Fatal(err)
		}
		wantRun, err := store.RunByID(ctx, s.Reader(), r.ID)
		if err != nil {
			t.Fatal(err)
		}
		run, task, detached, err := store.TaskAndRunByID(ctx, s.Reader(), tasks[1].ID)
		if err != nil || !reflect.DeepEqual(run, wantRun) || !reflect.DeepEqual(task, wantTask) || detached {
			t.Fatalf("joined read\n%+v\n%+v\nwant\n%+v\n%+v (detached %v, %v)", run, task, wantRun, wantTask, detached, err)
		}
		err = s.Write(ctx, func(tx *store.Tx) error {
			_, err := tx.Exec(ctx, `UPDATE tasks SET detached = ? WHERE id = ?`, true, tasks[0].ID)
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		if _, _, detached, err := store.TaskAndRunByID(ctx, s.Reader(), tasks[1].ID); err != nil || !detached {
			t.Fatalf("a run with a detached row: detached %v, %v", detached, err)
		}
		if _, _, _, err := store.TaskAndRunByID(ctx, s.Reader(), tasks[1].ID+100); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("unknown row: %v", err)
		}
	})
}

// TestLineageRoundAndCalls: the round is found by lineage and number, as TaskByKey reads it, with
// the rows it declared and no other and its sealed request (none while unsealed); a round that
// does not exist is ErrNotFound.
func TestLineageRoundAndCalls(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		r := seedRun(t, s, 1) // k0, a row of another lineage
		parts := store.SealedParts{Prefix: []byte(`{"entries":[`), Entries: [][]byte{[]byte(`{"role":"user"}`)}, Suffix: []byte(`]}`)}
		err := s.Write(ctx, func(tx *store.Tx) error {
			for _, row := range []store.Task{
				{TaskTrace: store.TaskTrace{Key: "r1", Kind: "model_task", LineageRoot: "r1", RoundNumber: 1}},
				{TaskTrace: store.TaskTrace{Key: "r1t0", Kind: "tool_task", LineageRoot: "r1t0", DeclaringTaskKey: ptr("r1")}},
				{TaskTrace: store.TaskTrace{Key: "r2", Kind: "model_task", LineageRoot: "r1", RoundNumber: 2}},
				{TaskTrace: store.TaskTrace{Key: "r1t1", Kind: "tool_task", LineageRoot: "r1t1", DeclaringTaskKey: ptr("r1")}},
				{TaskTrace: store.TaskTrace{Key: "r2t0", Kind: "tool_task", LineageRoot: "r2t0", DeclaringTaskKey: ptr("r2")}},
			} {
				row.RunID, row.Status, row.OnFailure, row.Lifetime, row.Wake, row.Visibility = r.ID, "waiting", "absorb", "turn", "auto", "collapsed"
				if err := store.InsertTask(ctx, tx, &row); err != nil {
					return err
				}
				if row.Key == "r1" {
					if _, _, err := (store.Seal{ID: row.ID, Generation: 1, Parts: parts, At: 10}).Exec(ctx, tx); err != nil {
						return err
					}
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		round, calls, sealed, err := store.LineageRoundAndCalls(ctx, s.Reader(), r.ID, "r1", 1)
		if err != nil || round.Key != "r1" || len(calls) != 2 || calls[0].Key != "r1t0" || calls[1].Key != "r1t1" {
			t.Fatalf("round %+v, calls %+v, %v", round, calls, err)
		}
		if want, err := store.TaskByKey(ctx, s.Reader(), r.ID, "r1"); err != nil || !reflect.DeepEqual(round, want) {
			t.Fatalf("round %+v, want %+v (%v)", round, want, err)
		}
		if string(sealed.Bytes()) != string(parts.Bytes()) {
			t.Fatalf("the round's sealed request %q, want %q", sealed.Bytes(), parts.Bytes())
		}
		if round, calls, sealed, err = store.LineageRoundAndCalls(ctx, s.Reader(), r.ID, "r1", 2); err != nil || round.Key != "r2" || len(calls) != 1 || calls[0].Key != "r2t0" ||
			round.SealedRequestID != nil || len(sealed.Bytes()) != 0 {
			t.Fatalf("second round %+v, calls %+v, sealed %q, %v", round, calls, sealed.Bytes(), err)
		}
		if _, _, _, err := store.LineageRoundAndCalls(ctx, s.Reader(), r.ID, "r1", 3); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("a round that does not exist: %v", err)
		}
	})
}

// TestLineageRows: a lineage's rounds and the rows they declared, whole, in creation order; rows
// of another lineage are not read.
func TestLineageRows(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		r := seedRun(t, s, 1) // k0, a row of another lineage
		err := s.Write(ctx, func(tx *store.Tx) error {
			for _, row := range []store.Task{
				{TaskTrace: store.TaskTrace{Key: "r1", Kind: "model_task", LineageRoot: "r1", RoundNumber: 1}},
				{TaskTrace: store.TaskTrace{Key: "r1t0", Kind: "tool_task", LineageRoot: "r1t0", DeclaringTaskKey: ptr("r1")}, Content: ptr(`[{"type":"text","text":"x"}]`)},
				{TaskTrace: store.TaskTrace{Key: "b1", Kind: "model_task", LineageRoot: "b1", RoundNumber: 1}},
				{TaskTrace: store.TaskTrace{Key: "b1t0", Kind: "tool_task", LineageRoot: "b1t0", DeclaringTaskKey: ptr("b1")}},
				{TaskTrace: store.TaskTrace{Key: "r2", Kind: "model_task", LineageRoot: "r1", RoundNumber: 2}},
				{TaskTrace: store.TaskTrace{Key: "r1t0c", Kind: "tool_task", LineageRoot: "r1t0c", DeclaringTaskKey: ptr("r1"), ParentKey: ptr("r1t0")}},
			} {
				row.RunID, row.Status, row.OnFailure, row.Lifetime, row.Wake, row.Visibility = r.ID, "waiting", "absorb", "turn", "auto", "collapsed"
				if err := store.InsertTask(ctx, tx, &row); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		rows, err := store.LineageRows(ctx, s.Reader(), r.ID, "r1")
		if err != nil {
			t.Fatal(err)
		}
		var keys []string
		for _, row := range rows {
			keys = append(keys, row.Key)
		}
		if !reflect.DeepEqual(keys, []string{"r1", "r1t0", "r2", "r1t0c"}) {
			t.Fatalf("rows %v", keys)
		}
		if want, err := store.TaskByKey(ctx, s.Reader(), r.ID, "r1t0"); err != nil || !reflect.DeepEqual(&rows[1], want) {
			t.Fatalf("row %+v, want %+v (%v)", rows[1], want, err)
		}
		if rows, err := store.LineageRows(ctx, s.Reader(), r.ID, "r9"); err != nil || len(rows) != 0 {
			t.Fatalf("a lineage that does not exist: %v %v", rows, err)
		}
	})
}

// TestClaimWithRow: a claim that asks for its row answers the taken row and its run as the claim
// left them, what TaskAndRunByID reads after it (whether the run holds a detached row too),
// through ClaimOne (one statement on PostgreSQL) and ClaimFirst in a transaction alike; a claim
// that takes nothing answers nothing.
func TestClaimWithRow(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		r := seedRun(t, s, 2)
		spec := store.ClaimSpec{Runnable: runnable, Now: 10, ClaimedBy: store.KernelClaimant, DefaultTimeoutMS: 1000, WithRow: true}
		check := func(c *store.Claimed) {
			t.Helper()
			if c == nil || c.Task == nil || c.Run == nil {
				t.Fatalf("claim with its row answered %+v", c)
			}
			run, task, detached, err := store.TaskAndRunByID(ctx, s.Reader(), c.ID)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(c.Task, task) || !reflect.DeepEqual(c.Run, run) || c.Detached != detached {
				t.Fatalf("claimed row %+v\nrun %+v\nread after %+v\nrun %+v\ndetached %v, read after %v", c.Task, c.Run, task, run, c.Detached, detached)
			}
			if c.Task.ClaimGeneration != c.Generation || c.Task.DeadlineAt == nil || *c.Task.DeadlineAt != c.DeadlineAt ||
				c.Task.ClaimedAt == nil || c.Run.ID != r.ID || c.Run.PublicID != r.PublicID {
				t.Fatalf("claimed row %+v of run %+v, claim %+v", c.Task, c.Run, c)
			}
		}
		c, err := s.ClaimOne(ctx, spec)
		if err != nil {
			t.Fatal(err)
		}
		check(c)
		if c.Detached {
			t.Fatal("a run without a detached row claimed as holding one")
		}
		// The second claim's run holds a detached row (its first, already claimed).
		err = s.Write(ctx, func(tx *store.Tx) error {
			if _, err := tx.Exec(ctx, `UPDATE tasks SET detached = ? WHERE id = ?`, true, c.ID); err != nil {
				return err
			}
			c, err = store.ClaimFirst(ctx, tx, spec)
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		check(c)
		if !c.Detached {
			t.Fatal("a run with a detached row claimed as holding none")
		}
		if c, err := s.ClaimOne(ctx, spec); err != nil || c != nil {
			t.Fatalf("a third claim of two rows = %+v, %v", c, err)
		}
	})
}

// TestRunStanding: the run's status and whether a row is held for a person, read in one statement; another
// workspace's run is not found.
func TestRunStanding(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		r := seedRun(t, s, 2)
		status, parked, err := store.RunStanding(ctx, s.Reader(), r.WorkspaceID, r.PublicID)
		if err != nil || status != "running" || parked {
			t.Fatalf("standing = %q %v %v, want running with nothing parked", status, parked, err)
		}
		if err := s.Write(ctx, func(tx *store.Tx) error {
			_, err := tx.Exec(ctx, `UPDATE tasks SET status = 'awaiting_input' WHERE run_id = ? AND task_key = 'k1'`, r.ID)
			return err
		}); err != nil {
			t.Fatal(err)
		}
		if status, parked, err = store.RunStanding(ctx, s.Reader(), r.WorkspaceID, r.PublicID); err != nil || status != "running" || !parked {
			t.Fatalf("standing = %q %v %v, want a parked row", status, parked, err)
		}
		if _, _, err := store.RunStanding(ctx, s.Reader(), r.WorkspaceID+1, r.PublicID); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("another workspace's run: %v, want ErrNotFound", err)
		}
	})
}

// TestSealedRequestChain: a request that repeats a base, which repeats its own, reads back byte
// for byte through the whole chain; a chain whose base is missing, or that runs in a circle, is
// an error, not a request.
func TestSealedRequestChain(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		_, tasks := seedRunRows(t, s, 5)
		var entries [][]byte
		var ids []int64
		var want []store.SealedParts
		err := s.Write(ctx, func(tx *store.Tx) error {
			for i := range 4 {
				entries = append(entries, []byte(fmt.Sprintf(`{"role":"user","n":%d}`, i)))
				p := store.SealedParts{Prefix: []byte(fmt.Sprintf(`{"round":%d,"entries":[`, i)), Entries: append([][]byte{}, entries...), Suffix: []byte(`]}`)}
				if i > 0 {
					p.BaseID, p.BaseCount = ids[i-1], i
				}
				id, _, err := (store.Seal{ID: tasks[i].ID, Generation: 1, Parts: p, At: 10}).Exec(ctx, tx)
				if err != nil {
					return err
				}
				ids, want = append(ids, id), append(want, p)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		for i, id := range ids {
			got, err := store.SealedRequest(ctx, s.Reader(), id)
			if err != nil || string(got.Bytes()) != string(want[i].Bytes()) {
				t.Fatalf("request %d: %q (%v), want %q", i, got.Bytes(), err, want[i].Bytes())
			}
		}
		setParts := func(query string, base int64) {
			t.Helper()
			err := s.Write(ctx, func(tx *store.Tx) error {
				_, err := tx.Exec(ctx, query, fmt.Sprintf(`"base":%d,"prefix"`, base), ids[0])
				return err
			})
			if err != nil {
				t.Fatal(err)
			}
		}
		// The root's index row names a base that is not there, then the request itself.
		for _, base := range []int64{ids[3] + 1000, ids[3]} {
			setParts(`UPDATE sealed_requests SET parts = REPLACE(parts, '"prefix"', ?) WHERE id = ?`, base)
			if _, err := store.SealedRequest(ctx, s.Reader(), ids[3]); err == nil {
				t.Fatalf("a chain whose root names base %d read back", base)
			}
			setParts(`UPDATE sealed_requests SET parts = REPLACE(parts, ?, '"prefix"') WHERE id = ?`, base)
		}
	})
}

// TestNamedRunnables: each named runnable takes exactly its rows. The kernel's take running,
// unclaimed, unlowered rows of running runs, within their deadline: rounds and unaddressed tool
// rows (KernelRunnable), rounds alone (KernelRoundRunnable), unaddressed tool rows alone
// (KernelToolRunnable), one run's (OfRun); an executor's claim takes its one dispatched,
// unclaimed row (DispatchedUnclaimed).
func TestNamedRunnables(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		r, rows := seedRunRows(t, s, 9)
		other, _ := seedRunRows(t, s, 1)
		const now = 1000
		// k0 a round; k1 a kernel tool row; k2 an addressed tool row; k3 a lowered call; k4 a
		// claimed round; k5 a round past its deadline; k6 a dispatched row; k7 a claimed
		// dispatched row; k8 a round within its deadline.
		setup := []string{
			`UPDATE tasks SET kind = 'model_task' WHERE id = ?`,
			`UPDATE tasks SET kind = 'tool_task' WHERE id = ?`,
			`UPDATE tasks SET addressed_role = 'runner' WHERE id = ?`,
			`UPDATE tasks SET lowered = TRUE WHERE id = ?`,
			`UPDATE tasks SET kind = 'model_task', claimed_at = 1 WHERE id = ?`,
			`UPDATE tasks SET kind = 'model_task', deadline_at = 1000 WHERE id = ?`,
			`UPDATE tasks SET status = 'dispatched', addressed_role = 'runner' WHERE id = ?`,
			`UPDATE tasks SET status = 'dispatched', addressed_role = 'runner', claimed_at = 1 WHERE id = ?`,
			`UPDATE tasks SET kind = 'model_task', deadline_at = 1001 WHERE id = ?`,
		}
		err := s.Write(ctx, func(tx *store.Tx) error {
			for i, q := range setup {
				if _, err := tx.Exec(ctx, q, rows[i].ID); err != nil {
					return err
				}
			}
			// Another run's row is a round too, but its run is not running.
			_, err := tx.Exec(ctx, `UPDATE runs SET status = 'completed' WHERE id = ?`, other.ID)
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		keys := func(rn store.Runnable) []string {
			t.Helper()
			var out []string
			for {
				var c *store.Claimed
				err := s.Write(ctx, func(tx *store.Tx) error {
					var err error
					c, err = store.ClaimFirst(ctx, tx, store.ClaimSpec{Runnable: rn, Now: now, ClaimedBy: store.KernelClaimant})
					return err
				})
				if err != nil {
					t.Fatal(err)
				}
				if c == nil {
					return out
				}
				out = append(out, c.Key)
				// The claim set claimed_at; the next look must skip the row for that alone.
			}
		}
		reset := func() {
			t.Helper()
			err := s.Write(ctx, func(tx *store.Tx) error {
				for i, q := range setup {
					if _, err := tx.Exec(ctx, `UPDATE tasks SET claimed_at = NULL WHERE id = ?`, rows[i].ID); err != nil {
						return err
					}
					if i == 4 || i == 7 {
						if _, err := tx.Exec(ctx, q, rows[i].ID); err != nil {
							return err
						}
					}
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
		}
		for _, c := range []struct {
			name string
			rn   store.Runnable
			want []string
		}{
			{"kernel", store.KernelRunnable(now), []string{"k0", "k1", "k8"}},
			{"rounds", store.KernelRoundRunnable(now), []string{"k0", "k8"}},
			{"kernel tools", store.KernelToolRunnable(now), []string{"k1"}},
			{"one run's", store.KernelRunnable(now).OfRun(r.ID), []string{"k0", "k1", "k8"}},
			{"another run's", store.KernelRunnable(now).OfRun(other.ID), nil},
			{"a dispatched row", store.DispatchedUnclaimed(rows[6].ID), []string{"k6"}},
			{"a claimed dispatched row", store.DispatchedUnclaimed(rows[7].ID), nil},
			{"a running row", store.DispatchedUnclaimed(rows[0].ID), nil},
		} {
			found, err := store.AnyRunnable(ctx, s.Reader(), c.rn)
			if err != nil || found != (len(c.want) > 0) {
				t.Fatalf("%s: AnyRunnable %v, %v", c.name, found, err)
			}
			if got := keys(c.rn); !reflect.DeepEqual(got, c.want) {
				t.Fatalf("%s: claimed %v, want %v", c.name, got, c.want)
			}
			reset()
		}
	})
}
