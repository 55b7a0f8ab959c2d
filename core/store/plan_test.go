package store_test

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/nexuskernel/nexus/core/store"
	"github.com/nexuskernel/nexus/core/store/storetest"
)

// planFixture is a workspace with a Runner announcing "work", and a run of n rows to plan.
type planFixture struct {
	s      *store.Store
	ws     *store.Workspace
	runner *store.Executor
}

func newPlanFixture(t *testing.T, s *store.Store) *planFixture {
	t.Helper()
	ctx := context.Background()
	f := &planFixture{s: s}
	err := s.Write(ctx, func(tx *store.Tx) error {
		f.ws = &store.Workspace{PublicID: store.NewPublicID(), Handle: "plan", Name: "Plan"}
		if err := store.InsertWorkspace(ctx, tx, f.ws); err != nil {
			return err
		}
		f.runner = &store.Executor{PublicID: store.NewPublicID(), WorkspaceID: f.ws.ID, Kind: store.ExecutorRunner, DisplayName: "r", Status: store.ExecutorActive, CreatedAt: 1}
		if err := store.InsertExecutor(ctx, tx, f.runner); err != nil {
			return err
		}
		return store.ReplaceServedTools(ctx, tx, f.runner.ID, []store.ServedTool{{ExecutorID: f.runner.ID, WorkspaceID: f.ws.ID, Name: "work", Profile: `{"kind":"read_only"}`}})
	})
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func (f *planFixture) run(n int) (*store.Run, []store.Task) {
	r := &store.Run{PublicID: store.NewPublicID(), WorkspaceID: f.ws.ID, CreatedByKind: "user", CreatedByPublicID: store.NewPublicID(),
		Status: "running", ApprovalMode: "bypass", ApprovalRules: "[]", DeliverableTaskKey: "k0", Revision: 1,
		MainlineRoundCounter: 1, MemoryContext: "{}", CreatedAt: 5, UpdatedAt: 5}
	tasks := make([]store.Task, n)
	for i := range tasks {
		name, input := "work", fmt.Sprintf(`{"i":%d}`, i)
		tasks[i] = store.Task{Key: fmt.Sprintf("k%d", i), Kind: "tool_task", Status: "waiting", OnFailure: "propagate",
			Lifetime: "turn", Wake: "auto", Visibility: "collapsed", LineageRoot: fmt.Sprintf("k%d", i), CreatedAt: int64(i),
			ToolName: &name, ToolInput: &input}
	}
	return r, tasks
}

// subscribed listens on ch for the rest of the test and answers what it hears.
func subscribed(t *testing.T, s *store.Store, ch string) heard {
	t.Helper()
	got := make(heard, 4)
	stop, err := s.Subscribe(context.Background(), ch, got)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	return got
}

// runExists reports whether a run with this public id was written.
func (f *planFixture) runExists(t *testing.T, publicID string) bool {
	t.Helper()
	_, err := store.RunByPublicID(context.Background(), f.s.Reader(), f.ws.ID, publicID)
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		t.Fatal(err)
	}
	return err == nil
}

// A planned write is one statement: the run and its rows land as the plan recorded them, the
// updates a plan applies to its own rows included, every row with its id and the run's; its
// notification is heard; the store counts it.
func TestPlanWritesRunRowsAndNotification(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		f := newPlanFixture(t, s)
		if s.Dialect() != store.Postgres {
			r, tasks := f.run(1)
			err := s.Plan(ctx, func(tx *store.Tx) error { return store.InsertRunWithTasks(ctx, tx, r, tasks) })
			if !errors.Is(err, store.ErrPlanUnsupported) || f.runExists(t, r.PublicID) {
				t.Fatalf("SQLite plans nothing: %v", err)
			}
			return
		}
		ch := s.Channel("plan_test")
		got := subscribed(t, s, ch)
		r, tasks := f.run(3)
		approval := `{"origin":"author"}`
		err := s.Plan(ctx, func(tx *store.Tx) error {
			if !tx.Planning() {
				return errors.New("the plan's Tx does not say it plans")
			}
			if _, err := store.RunnerServing(ctx, tx, f.ws.ID, f.runner.PublicID, "work"); err != nil {
				return err
			}
			if err := store.InsertRunWithTasks(ctx, tx, r, tasks); err != nil {
				return err
			}
			if tasks[0].ID >= 0 || r.ID >= 0 {
				return fmt.Errorf("provisional ids %d, %d are not negative", r.ID, tasks[0].ID)
			}
			ok, err := store.SetTask(ctx, tx, tasks[0].ID, &store.TaskGuard{Statuses: []string{"waiting"}, UnlessRevoked: f.runner.PublicID},
				store.Assign{Col: "status", Val: "dispatched"}, store.Assign{Col: "ready_at", Val: int64(7)},
				store.Assign{Col: "deadline_at", Val: int64(9)}, store.Assign{Col: "approval", Val: &approval}, store.Assign{Col: "parent_key", Val: nil})
			if err != nil || !ok {
				return fmt.Errorf("set on a planned row: %v %v", ok, err)
			}
			if ok, err := store.SetTask(ctx, tx, tasks[1].ID, &store.TaskGuard{Statuses: []string{"dispatched"}}, store.Assign{Col: "status", Val: "failed"}); err != nil || ok {
				return fmt.Errorf("a status guard the row does not match applied: %v %v", ok, err)
			}
			return store.Notify(ctx, tx, ch, "planned")
		})
		if err != nil {
			t.Fatal(err)
		}
		if r.ID <= 0 {
			t.Fatalf("run id %d", r.ID)
		}
		first := tasks[0]
		if first.Status != "dispatched" || *first.ReadyAt != 7 || *first.DeadlineAt != 9 || *first.Approval != approval || tasks[1].Status != "waiting" {
			t.Fatalf("the plan's updates were not applied in memory: %+v", first)
		}
		for i := range tasks {
			if tasks[i].RunID != r.ID || tasks[i].ID <= 0 {
				t.Fatalf("row %d: run %d id %d", i, tasks[i].RunID, tasks[i].ID)
			}
			back, err := store.TaskByKey(ctx, s.Reader(), r.ID, tasks[i].Key)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(*back, tasks[i]) {
				t.Fatalf("row %d read back\n%+v\nwant\n%+v", i, *back, tasks[i])
			}
		}
		select {
		case p := <-got:
			if p != "planned" {
				t.Fatalf("heard %q", p)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("the plan's notification never arrived")
		}
		if st := s.PlanStats(); st.Written != 1 || st.Stale != 0 || st.Unsupported != 0 {
			t.Fatalf("stats %+v", st)
		}
	})
}

// A guard that no longer holds writes nothing and sends no notification: ErrPlanStale. The
// served-tools cache is such a guard: a plan that addressed a Runner through the cache after the
// Runner's profile changed is stale, and a transaction's read refreshes the cache.
func TestPlanStaleWritesNothing(t *testing.T) {
	t.Parallel()
	for _, d := range storetest.Dialects() {
		if d != store.Postgres {
			continue // SQLite never plans (TestPlanWritesRunRowsAndNotification)
		}
		s := storetest.Open(t, d)
		ctx := context.Background()
		f := newPlanFixture(t, s)
		ch := s.Channel("plan_stale")
		got := subscribed(t, s, ch)
		plan := func(guard bool) (*store.Run, error) {
			r, tasks := f.run(2)
			return r, s.Plan(ctx, func(tx *store.Tx) error {
				if guard {
					tx.Require(`EXISTS (SELECT 1 FROM workspaces WHERE id = ? AND handle = ?)`, f.ws.ID, "renamed")
				}
				if _, err := store.RunnerServing(ctx, tx, f.ws.ID, f.runner.PublicID, "work"); err != nil {
					return err
				}
				if err := store.InsertRunWithTasks(ctx, tx, r, tasks); err != nil {
					return err
				}
				return store.Notify(ctx, tx, ch, r.PublicID)
			})
		}
		r, err := plan(true)
		if !errors.Is(err, store.ErrPlanStale) || f.runExists(t, r.PublicID) {
			t.Fatalf("a failed guard: %v, run written %v", err, f.runExists(t, r.PublicID))
		}
		// The cache now holds the Runner's profile; change it behind the cache's back.
		if _, err := s.DB().ExecContext(ctx, `UPDATE executor_served_tools SET profile = '{"kind":"mutating"}' WHERE executor_id = $1`, f.runner.ID); err != nil {
			t.Fatal(err)
		}
		r, err = plan(false)
		if !errors.Is(err, store.ErrPlanStale) || f.runExists(t, r.PublicID) {
			t.Fatalf("a plan on a stale cache entry: %v, run written %v", err, f.runExists(t, r.PublicID))
		}
		err = s.Write(ctx, func(tx *store.Tx) error {
			got, err := store.RunnerServing(ctx, tx, f.ws.ID, f.runner.PublicID, "work")
			if err == nil && got.Profile != `{"kind":"mutating"}` {
				err = fmt.Errorf("a transaction read %s", got.Profile)
			}
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		r, err = plan(false)
		if err != nil || !f.runExists(t, r.PublicID) {
			t.Fatalf("a plan after the transaction refreshed the cache: %v", err)
		}
		select {
		case p := <-got:
			if p != r.PublicID {
				t.Fatalf("heard %q before the written plan's %q: a stale plan notified", p, r.PublicID)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("the written plan's notification never arrived")
		}
		// A revoked Runner fails the cached entry's guard too.
		if _, err := s.DB().ExecContext(ctx, `UPDATE executors SET status = 'revoked' WHERE id = $1`, f.runner.ID); err != nil {
			t.Fatal(err)
		}
		if r, err = plan(false); !errors.Is(err, store.ErrPlanStale) || f.runExists(t, r.PublicID) {
			t.Fatalf("a plan addressing a revoked Runner: %v", err)
		}
		if st := s.PlanStats(); st.Written != 1 || st.Stale != 3 {
			t.Fatalf("stats %+v", st)
		}
	}
}

// What a plan cannot hold is refused before anything is written: any statement sent with Exec,
// a locking read, a read after the insert (it could name a provisional id), an update of a row
// the plan did not write, a second insert, a run of more rows than one statement takes.
func TestPlanUnsupportedWritesNothing(t *testing.T) {
	t.Parallel()
	for _, d := range storetest.Dialects() {
		if d != store.Postgres {
			continue
		}
		s := storetest.Open(t, d)
		ctx := context.Background()
		f := newPlanFixture(t, s)
		cases := map[string]func(tx *store.Tx, r *store.Run, tasks []store.Task) error{
			"exec": func(tx *store.Tx, r *store.Run, tasks []store.Task) error {
				if err := store.InsertRunWithTasks(ctx, tx, r, tasks); err != nil {
					return err
				}
				_, err := tx.Exec(ctx, `UPDATE workspaces SET name = 'x' WHERE id = ?`, f.ws.ID)
				return err
			},
			"locking read": func(tx *store.Tx, r *store.Run, tasks []store.Task) error {
				var id int64
				if err := tx.Get(ctx, &id, `SELECT id FROM workspaces WHERE id = ? FOR UPDATE`, f.ws.ID); err != nil {
					return err
				}
				return store.InsertRunWithTasks(ctx, tx, r, tasks)
			},
			"read after insert": func(tx *store.Tx, r *store.Run, tasks []store.Task) error {
				if err := store.InsertRunWithTasks(ctx, tx, r, tasks); err != nil {
					return err
				}
				_, err := store.TaskByKey(ctx, tx, r.ID, tasks[0].Key)
				return err
			},
			"update of another row": func(tx *store.Tx, r *store.Run, tasks []store.Task) error {
				if err := store.InsertRunWithTasks(ctx, tx, r, tasks); err != nil {
					return err
				}
				_, err := store.SetTask(ctx, tx, 1, nil, store.Assign{Col: "status", Val: "failed"})
				return err
			},
			"settle sequence": func(tx *store.Tx, r *store.Run, tasks []store.Task) error {
				if err := store.InsertRunWithTasks(ctx, tx, r, tasks); err != nil {
					return err
				}
				_, err := store.SetTask(ctx, tx, tasks[0].ID, nil, store.Assign{Col: "settle_seq", Val: store.NextSettleSeqOf(r.ID)})
				return err
			},
			"second insert": func(tx *store.Tx, r *store.Run, tasks []store.Task) error {
				if err := store.InsertRunWithTasks(ctx, tx, r, tasks); err != nil {
					return err
				}
				r2, t2 := f.run(1)
				return store.InsertRunWithTasks(ctx, tx, r2, t2)
			},
			"too many rows": func(tx *store.Tx, r *store.Run, tasks []store.Task) error {
				_, more := f.run(17)
				return store.InsertRunWithTasks(ctx, tx, r, more)
			},
			"notification without a write": func(tx *store.Tx, r *store.Run, tasks []store.Task) error {
				return store.Notify(ctx, tx, s.Channel("plan_none"), "x")
			},
		}
		for name, fn := range cases {
			r, tasks := f.run(2)
			err := s.Plan(ctx, func(tx *store.Tx) error { return fn(tx, r, tasks) })
			if !errors.Is(err, store.ErrPlanUnsupported) || f.runExists(t, r.PublicID) {
				t.Errorf("%s: %v, run written %v", name, err, f.runExists(t, r.PublicID))
			}
		}
		if st := s.PlanStats(); st.Unsupported != int64(len(cases)) || st.Written != 0 {
			t.Fatalf("stats %+v", st)
		}
		// A transaction does all of it.
		r, tasks := f.run(2)
		err := s.Write(ctx, func(tx *store.Tx) error {
			if tx.Planning() {
				return errors.New("a transaction says it plans")
			}
			tx.Require(`false`) // does nothing on a transaction
			if err := store.InsertRunWithTasks(ctx, tx, r, tasks); err != nil {
				return err
			}
			_, err := store.TaskByKey(ctx, tx, r.ID, tasks[0].Key)
			return err
		})
		if err != nil || !f.runExists(t, r.PublicID) {
			t.Fatalf("the same work as a transaction: %v", err)
		}
	}
}
