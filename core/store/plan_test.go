package store_test

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
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

// postgresPlanFixture is a plan fixture on a fresh PostgreSQL store, and false when this run has
// no PostgreSQL: SQLite never plans (TestPlanWritesRunRowsAndNotification).
func postgresPlanFixture(t *testing.T) (*planFixture, bool) {
	t.Helper()
	s, ok := storetest.Postgres(t)
	if !ok {
		return nil, false
	}
	return newPlanFixture(t, s), true
}

// subscribed listens on ch for the rest of the test and answers what it hears.
func subscribed(t *testing.T, s *store.Store, ch string) heard {
	t.Helper()
	got := make(heard, 4)
	subscribe(t, s, ch, got)
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
	f, ok := postgresPlanFixture(t)
	if !ok {
		return
	}
	s, ctx := f.s, context.Background()
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

// What a plan cannot hold is refused before anything is written: any statement sent with Exec,
// a locking read, a read after the insert (it could name a provisional id), an update of a row
// the plan did not write, a second insert, a run of more rows than one statement takes.
func TestPlanUnsupportedWritesNothing(t *testing.T) {
	t.Parallel()
	f, ok := postgresPlanFixture(t)
	if !ok {
		return
	}
	s, ctx := f.s, context.Background()
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

// Plans that queue while a statement is in flight go out together, as one statement of one
// chain per plan: a plan whose own guard fails writes nothing and notifies nothing, and the
// others stand, each with its own ids. A group PostgreSQL refuses as a whole (here, one plan's
// notification is too long for it) is sent again plan by plan, so that only the faulty plan
// fails.
func TestPlansQueuedTogether(t *testing.T) {
	t.Parallel()
	f, ok := postgresPlanFixture(t)
	if !ok {
		return
	}
	s, ctx := f.s, context.Background()
	ch := s.Channel("plan_group")
	got := subscribed(t, s, ch)
	type outcome struct {
		run   *store.Run
		tasks []store.Task
		err   error
	}
	// group sends one plan per payload, all queued behind a held slot; a payload "stale"
	// adds a guard that fails.
	group := func(payloads ...string) []outcome {
		t.Helper()
		queued, release := store.HoldPlanSlots(s)
		out := make([]outcome, len(payloads))
		done := make(chan struct{})
		for i, p := range payloads {
			go func() {
				defer func() { done <- struct{}{} }()
				r, tasks := f.run(i + 1)
				err := s.Plan(ctx, func(tx *store.Tx) error {
					if p == "stale" {
						tx.Require(`EXISTS (SELECT 1 FROM workspaces WHERE id = ? AND handle = ?)`, f.ws.ID, "renamed")
					}
					if _, err := store.RunnerServing(ctx, tx, f.ws.ID, f.runner.PublicID, "work"); err != nil {
						return err
					}
					if err := store.InsertRunWithTasks(ctx, tx, r, tasks); err != nil {
						return err
					}
					return store.Notify(ctx, tx, ch, p)
				})
				out[i] = outcome{r, tasks, err}
			}()
		}
		for deadline := time.Now().Add(10 * time.Second); queued() < len(payloads); time.Sleep(time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("%d of %d plans queued", queued(), len(payloads))
			}
		}
		release()
		for range payloads {
			<-done
		}
		return out
	}
	written := func(o outcome) {
		t.Helper()
		if o.err != nil || o.run.ID <= 0 || !f.runExists(t, o.run.PublicID) {
			t.Fatalf("plan of %d rows: %v, run %d", len(o.tasks), o.err, o.run.ID)
		}
		for _, tk := range o.tasks {
			back, err := store.TaskByKey(ctx, s.Reader(), o.run.ID, tk.Key)
			if err != nil || back.ID != tk.ID || tk.RunID != o.run.ID {
				t.Fatalf("row %s of run %d: id %d, read back %+v %v", tk.Key, o.run.ID, tk.ID, back, err)
			}
		}
	}
	heard := func(want ...string) {
		t.Helper()
		var all []string
		for range want {
			select {
			case p := <-got:
				all = append(all, p)
			case <-time.After(10 * time.Second):
				t.Fatalf("heard %q; want %q", all, want)
			}
		}
		slices.Sort(all)
		slices.Sort(want)
		if !slices.Equal(all, want) {
			t.Fatalf("heard %q; want %q", all, want)
		}
	}

	before := s.PlanStats()
	out := group("a", "stale", "b", "c")
	for i, o := range out {
		if i == 1 {
			if !errors.Is(o.err, store.ErrPlanStale) || f.runExists(t, o.run.PublicID) {
				t.Fatalf("the stale plan of the group: %v", o.err)
			}
			continue
		}
		written(o)
	}
	heard("a", "b", "c")
	after := s.PlanStats()
	if after.Written-before.Written != 3 || after.Stale-before.Stale != 1 || after.Grouped-before.Grouped != 4 {
		t.Fatalf("stats %+v, then %+v; want 3 written, 1 stale, 4 grouped", before, after)
	}

	before = s.PlanStats()
	out = group("d", strings.Repeat("x", 9000))
	written(out[0])
	if out[1].err == nil || errors.Is(out[1].err, store.ErrPlanStale) || errors.Is(out[1].err, store.ErrPlanUnsupported) || f.runExists(t, out[1].run.PublicID) {
		t.Fatalf("the plan PostgreSQL refuses: %v", out[1].err)
	}
	heard("d")
	select {
	case p := <-got:
		t.Fatalf("heard %.20q from the refused plan", p)
	case <-time.After(100 * time.Millisecond):
	}
	if after := s.PlanStats(); after.Written-before.Written != 1 || after.Grouped-before.Grouped != 2 {
		t.Fatalf("stats %+v, then %+v; want 1 written, 2 grouped", before, after)
	}
}

// Plans sent from many goroutines at once, grouped as they queue, each land whole: every run
// with its own rows, each row with its run's id.
func TestPlansConcurrent(t *testing.T) {
	t.Parallel()
	f, ok := postgresPlanFixture(t)
	if !ok {
		return
	}
	s, ctx := f.s, context.Background()
	const goroutines, each = 16, 10
	errs := make(chan error, goroutines)
	for g := 0; g < goroutines; g++ {
		go func() {
			for i := 0; i < each; i++ {
				r, tasks := f.run(1 + (g+i)%3)
				err := s.Plan(ctx, func(tx *store.Tx) error { return store.InsertRunWithTasks(ctx, tx, r, tasks) })
				if err == nil {
					for _, tk := range tasks {
						back, rerr := store.TaskByKey(ctx, s.Reader(), r.ID, tk.Key)
						if rerr != nil || back.ID != tk.ID || back.RunID != r.ID {
							err = fmt.Errorf("run %d row %s: id %d, read back %+v %v", r.ID, tk.Key, tk.ID, back, rerr)
							break
						}
					}
				}
				if err != nil {
					errs <- err
					return
				}
			}
			errs <- nil
		}()
	}
	for g := 0; g < goroutines; g++ {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	var runs int
	if err := s.Reader().Get(ctx, &runs, `SELECT count(*) FROM runs WHERE workspace_id = ?`, f.ws.ID); err != nil {
		t.Fatal(err)
	}
	if st := s.PlanStats(); runs != goroutines*each || st.Written != goroutines*each {
		t.Fatalf("%d runs, stats %+v; want %d", runs, st, goroutines*each)
	}
}
