package store_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/nexuskernel/nexus/core/store"
	"github.com/nexuskernel/nexus/core/store/storetest"
)

// createFixture is a workspace with a member, an agent and a Runner, and another workspace with
// an agent of its own.
type createFixture struct {
	s             *store.Store
	ws, other     *store.Workspace
	user          *store.User
	agent, agent2 *store.Agent
	// runner is a Runner of ws, otherRunner one of other.
	runner, otherRunner *store.Executor
}

// newCreateFixture writes a fixture into s; n tells its handles from those of the other
// fixtures of s.
func newCreateFixture(t *testing.T, s *store.Store, n int) *createFixture {
	t.Helper()
	ctx := context.Background()
	f := &createFixture{s: s}
	err := s.Write(ctx, func(tx *store.Tx) error {
		f.ws = &store.Workspace{PublicID: store.NewPublicID(), Handle: fmt.Sprintf("create-%d", n), Name: "Create"}
		f.other = &store.Workspace{PublicID: store.NewPublicID(), Handle: fmt.Sprintf("other-%d", n), Name: "Other"}
		for _, w := range []*store.Workspace{f.ws, f.other} {
			if err := store.InsertWorkspace(ctx, tx, w); err != nil {
				return err
			}
		}
		f.user = &store.User{PublicID: store.NewPublicID(), Handle: fmt.Sprintf("mia-%d", n), DisplayName: "Mia", CreatedAt: 1}
		if err := store.InsertUser(ctx, tx, f.user); err != nil {
			return err
		}
		if err := store.InsertMembership(ctx, tx, f.ws.ID, f.user.ID, store.RoleMember, 1); err != nil {
			return err
		}
		f.agent = &store.Agent{PublicID: store.NewPublicID(), WorkspaceID: f.ws.ID, Handle: "a", DisplayName: "A", StewardUserID: f.user.ID, CreatedAt: 1}
		f.agent2 = &store.Agent{PublicID: store.NewPublicID(), WorkspaceID: f.other.ID, Handle: "b", DisplayName: "B", StewardUserID: f.user.ID, CreatedAt: 1}
		for _, a := range []*store.Agent{f.agent, f.agent2} {
			if err := store.InsertAgent(ctx, tx, a); err != nil {
				return err
			}
		}
		f.runner = &store.Executor{PublicID: store.NewPublicID(), WorkspaceID: f.ws.ID, Kind: store.ExecutorRunner, DisplayName: "r", Status: store.ExecutorActive, CreatedAt: 1}
		f.otherRunner = &store.Executor{PublicID: store.NewPublicID(), WorkspaceID: f.other.ID, Kind: store.ExecutorRunner, DisplayName: "o", Status: store.ExecutorActive, CreatedAt: 1}
		for _, e := range []*store.Executor{f.runner, f.otherRunner} {
			if err := store.InsertExecutor(ctx, tx, e); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// run is a new run of n tool rows of the fixture's workspace, the first parked for the Runner.
func (f *createFixture) run(n int) (*store.Run, []store.Task) {
	r := &store.Run{PublicID: store.NewPublicID(), WorkspaceID: f.ws.ID, CreatedByKind: "user", CreatedByPublicID: f.user.PublicID,
		Status: "running", ApprovalMode: "bypass", ApprovalRules: "[]", DeliverableTaskKey: fmt.Sprintf("k%d", n-1), Revision: 1,
		MainlineRoundCounter: 1, MemoryContext: "{}", CreatedAt: 5, UpdatedAt: 5}
	tasks := make([]store.Task, n)
	for i := range tasks {
		name, input := "work", fmt.Sprintf(`{"i":%d}`, i)
		tasks[i] = store.Task{TaskTrace: store.TaskTrace{
			Key: fmt.Sprintf("k%d", i), Kind: "tool_task", Status: "waiting", OnFailure: "propagate",
			Lifetime: "turn", Wake: "auto", Visibility: "collapsed", LineageRoot: fmt.Sprintf("k%d", i),
			CreatedAt: int64(i), ToolName: &name,
		},
			ToolInput: &input,
		}
	}
	dispatched, deadline, role := int64(5), int64(30_005), "runner"
	tasks[0].Status, tasks[0].DispatchedAt, tasks[0].DeadlineAt = "dispatched", &dispatched, &deadline
	tasks[0].AddressedRole, tasks[0].AddressedExecutorPublicID = &role, &f.runner.PublicID
	return r, tasks
}

// subscribed listens on ch for the rest of the test and answers what it hears.
func subscribed(t *testing.T, s *store.Store, ch string) heard {
	t.Helper()
	got := make(heard, 4)
	subscribe(t, s, ch, got)
	return got
}

func (f *createFixture) member() store.Standing {
	return store.Standing{WorkspaceID: f.ws.ID, UserID: f.user.ID, Role: store.RoleMember}
}

func (f *createFixture) runExists(t *testing.T, publicID string) bool {
	t.Helper()
	_, err := store.RunByPublicID(context.Background(), f.s.Reader(), f.ws.ID, publicID)
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		t.Fatal(err)
	}
	return err == nil
}

// CreateRun writes the run and its rows as given, every id set, and sends its notification once
// written (PostgreSQL); a failed guard writes nothing and sends nothing. The store counts both.
func TestCreateRunWritesRowsAndNotification(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		f := newCreateFixture(t, s, 0)
		ch := s.Channel("create_run_test")
		var got heard
		if s.Dialect() == store.Postgres {
			got = subscribed(t, s, ch)
		}
		r, tasks := f.run(3)
		stmt := &store.CreateRun{Run: r, Tasks: tasks, Standing: f.member(), UnlessRevoked: []string{f.runner.PublicID},
			Notify: []store.Notification{{Channel: ch, Payload: "one"}, {Channel: ch, Payload: "two"}}}
		if err := s.CreateRun(ctx, stmt); err != nil {
			t.Fatal(err)
		}
		back, err := store.RunByPublicID(ctx, s.Reader(), f.ws.ID, r.PublicID)
		if err != nil || back.ID != r.ID || back.Status != "running" || back.DeliverableTaskKey != "k2" {
			t.Fatalf("run read back %+v, %v; wrote id %d", back, err, r.ID)
		}
		for i, tk := range tasks {
			row, err := store.TaskByID(ctx, s.Reader(), tk.ID)
			if err != nil || row.RunID != r.ID || row.Key != tk.Key || row.Status != tk.Status || *row.ToolInput != *tk.ToolInput {
				t.Fatalf("row %d read back %+v, %v", i, row, err)
			}
		}
		if row, _ := store.TaskByID(ctx, s.Reader(), tasks[0].ID); row.DeadlineAt == nil || *row.DeadlineAt != 30_005 {
			t.Fatalf("the parked row lost its deadline: %+v", row)
		}
		if got != nil {
			for _, want := range []string{"one", "two"} {
				select {
				case p := <-got:
					if p != want {
						t.Fatalf("heard %q, want %q", p, want)
					}
				case <-time.After(5 * time.Second):
					t.Fatalf("never heard %q", want)
				}
			}
		}

		// Removed from the workspace: nothing is written and nothing heard.
		if err := s.Write(ctx, func(tx *store.Tx) error {
			_, err := store.DeleteMembership(ctx, tx, f.ws.ID, f.user.ID)
			return err
		}); err != nil {
			t.Fatal(err)
		}
		r2, tasks2 := f.run(1)
		err = s.CreateRun(ctx, &store.CreateRun{Run: r2, Tasks: tasks2, Standing: f.member(), Notify: []store.Notification{{Channel: ch, Payload: "three"}}})
		if !errors.Is(err, store.ErrGuardFailed) || f.runExists(t, r2.PublicID) {
			t.Fatalf("a removed member's statement: %v, written %v", err, f.runExists(t, r2.PublicID))
		}
		if got != nil {
			select {
			case p := <-got:
				t.Fatalf("a statement that wrote nothing sent %q", p)
			case <-time.After(200 * time.Millisecond):
			}
		}
		if st := s.CreateRunStats(); st.Written != 1 || st.Guarded != 1 {
			t.Fatalf("stats %+v; want 1 written, 1 guarded", st)
		}
		// Out of bounds: refused before anything is sent.
		r3, tasks3 := f.run(store.MaxCreateRunTasks + 1)
		if err := s.CreateRun(ctx, &store.CreateRun{Run: r3, Tasks: tasks3, Standing: f.member()}); err == nil || errors.Is(err, store.ErrGuardFailed) {
			t.Fatalf("a statement of %d rows: %v", len(tasks3), err)
		}
	})
}

// Each guard of CreateRun refuses exactly what the create's transaction refuses when it reads
// the same fact itself, on both stores: the standing the transaction rereads (the membership and
// role a user's read finds, the workspace an agent's row names), and the revocation a dispatch's
// UPDATE checks (Dispatch.UnlessRevoked). For every case the statement writes the run if and only
// if the transaction's read accepts it, and a refused statement leaves no run behind.
func TestCreateRunGuardsRefuseWhatTheTransactionRefuses(t *testing.T) {
	t.Parallel()
	type guardCase struct {
		name string
		// change happens between the request's reads and its write.
		change func(ctx context.Context, f *createFixture) error
		// stmt fills the statement's guards as the request decided them.
		stmt func(f *createFixture, c *store.CreateRun)
		// accepts is the transaction's own read of the same fact.
		accepts func(ctx context.Context, f *createFixture, tx *store.Tx) (bool, error)
		// want is whether both write.
		want bool
	}
	nothing := func(context.Context, *createFixture) error { return nil }
	// userStanding is the transaction's read of a user's standing (identity's, through
	// WorkspaceWithRole): it accepts a membership of at least the role the door needs.
	userStanding := func(role string) func(ctx context.Context, f *createFixture, tx *store.Tx) (bool, error) {
		return func(ctx context.Context, f *createFixture, tx *store.Tx) (bool, error) {
			w, err := store.WorkspaceWithRole(ctx, tx, f.ws.PublicID, true, f.user.ID)
			return err == nil && w.Role != "" && (role != store.RoleOwner || w.Role == store.RoleOwner), err
		}
	}
	// agentStanding is the transaction's read of an agent's standing: the workspace its row names.
	agentStanding := func(a func(f *createFixture) *store.Agent) func(ctx context.Context, f *createFixture, tx *store.Tx) (bool, error) {
		return func(ctx context.Context, f *createFixture, tx *store.Tx) (bool, error) {
			var ws int64
			err := tx.Get(ctx, &ws, `SELECT workspace_id FROM agents WHERE id = ?`, a(f).ID)
			return err == nil && ws == f.ws.ID, err
		}
	}
	// parks is the transaction's dispatch of the run's first row, guarded by its addressee's
	// revocation; the transaction is rolled back.
	parks := func(ctx context.Context, f *createFixture, tx *store.Tx) (bool, error) {
		r, tasks := f.run(1)
		tasks[0].Status = "waiting"
		if err := store.InsertRunWithTasks(ctx, tx, r, tasks); err != nil {
			return false, err
		}
		return store.Dispatch{ID: tasks[0].ID, Status: "dispatched", At: 1, UnlessRevoked: f.runner.PublicID}.Exec(ctx, tx)
	}
	standing := func(g func(f *createFixture) store.Standing) func(f *createFixture, c *store.CreateRun) {
		return func(f *createFixture, c *store.CreateRun) { c.Standing = g(f) }
	}
	member := func(f *createFixture) store.Standing { return f.member() }
	// eligible is the transaction's read of a default Runner (the create door's): an active
	// Runner of the workspace.
	eligibleOf := func(ex func(f *createFixture) *store.Executor) func(ctx context.Context, f *createFixture, tx *store.Tx) (bool, error) {
		return func(ctx context.Context, f *createFixture, tx *store.Tx) (bool, error) {
			e, err := store.ExecutorByPublicID(ctx, tx, ex(f).PublicID)
			return err == nil && e.WorkspaceID == f.ws.ID && e.Kind == store.ExecutorRunner && e.Status == store.ExecutorActive, err
		}
	}
	eligible := eligibleOf(func(f *createFixture) *store.Executor { return f.runner })
	eligibleOther := eligibleOf(func(f *createFixture) *store.Executor { return f.otherRunner })
	revoke := func(ctx context.Context, f *createFixture) error {
		return f.s.Write(ctx, func(tx *store.Tx) error {
			_, err := store.RevokeExecutor(ctx, tx, f.runner.ID, 3)
			return err
		})
	}
	cases := []guardCase{
		{"a member as read", nothing, standing(member), userStanding(store.RoleMember), true},
		{"a member removed since", func(ctx context.Context, f *createFixture) error {
			return f.s.Write(ctx, func(tx *store.Tx) error {
				_, err := store.DeleteMembership(ctx, tx, f.ws.ID, f.user.ID)
				return err
			})
		}, standing(member), userStanding(store.RoleMember), false},
		{"a member made owner since", func(ctx context.Context, f *createFixture) error {
			return f.s.Write(ctx, func(tx *store.Tx) error {
				if _, err := store.DeleteMembership(ctx, tx, f.ws.ID, f.user.ID); err != nil {
					return err
				}
				return store.InsertMembership(ctx, tx, f.ws.ID, f.user.ID, store.RoleOwner, 2)
			})
		}, standing(member), userStanding(store.RoleMember), true},
		{"an owner's standing held by a member", nothing, standing(func(f *createFixture) store.Standing {
			return store.Standing{WorkspaceID: f.ws.ID, UserID: f.user.ID, Role: store.RoleOwner}
		}), userStanding(store.RoleOwner), false},
		{"a member of the workspace by handle", nothing, standing(func(f *createFixture) store.Standing {
			return store.Standing{WorkspaceHandle: f.ws.Handle, UserID: f.user.ID, Role: store.RoleMember}
		}), userStanding(store.RoleMember), true},
		{"a member of the workspace by public id", nothing, standing(func(f *createFixture) store.Standing {
			return store.Standing{WorkspacePublicID: f.ws.PublicID, UserID: f.user.ID, Role: store.RoleMember}
		}), userStanding(store.RoleMember), true},
		{"a member removed since, by handle", func(ctx context.Context, f *createFixture) error {
			return f.s.Write(ctx, func(tx *store.Tx) error {
				_, err := store.DeleteMembership(ctx, tx, f.ws.ID, f.user.ID)
				return err
			})
		}, standing(func(f *createFixture) store.Standing {
			return store.Standing{WorkspaceHandle: f.ws.Handle, UserID: f.user.ID, Role: store.RoleMember}
		}), userStanding(store.RoleMember), false},
		{"an unknown handle", nothing, standing(func(f *createFixture) store.Standing {
			return store.Standing{WorkspaceHandle: f.ws.Handle + "-gone", UserID: f.user.ID, Role: store.RoleMember}
		}), func(ctx context.Context, f *createFixture, tx *store.Tx) (bool, error) {
			_, err := store.WorkspaceWithRole(ctx, tx, f.ws.Handle+"-gone", false, f.user.ID)
			return err == nil, err
		}, false},
		{"a member of another workspace", nothing, standing(func(f *createFixture) store.Standing {
			return store.Standing{WorkspaceID: f.other.ID, UserID: f.user.ID, Role: store.RoleMember}
		}), func(ctx context.Context, f *createFixture, tx *store.Tx) (bool, error) {
			w, err := store.WorkspaceWithRole(ctx, tx, f.other.PublicID, true, f.user.ID)
			return err == nil && w.Role == store.RoleMember, err
		}, false},
		{"an agent of the workspace", nothing, standing(func(f *createFixture) store.Standing {
			return store.Standing{WorkspaceID: f.ws.ID, AgentID: f.agent.ID}
		}), agentStanding(func(f *createFixture) *store.Agent { return f.agent }), true},
		{"an agent of another workspace", nothing, standing(func(f *createFixture) store.Standing {
			return store.Standing{WorkspaceID: f.ws.ID, AgentID: f.agent2.ID}
		}), agentStanding(func(f *createFixture) *store.Agent { return f.agent2 }), false},
		{"an agent of another workspace, by handle", nothing, standing(func(f *createFixture) store.Standing {
			return store.Standing{WorkspaceHandle: f.ws.Handle, AgentID: f.agent2.ID}
		}), agentStanding(func(f *createFixture) *store.Agent { return f.agent2 }), false},
		{"an active default Runner", nothing, func(f *createFixture, c *store.CreateRun) {
			c.Standing, c.DefaultRunner = f.member(), f.runner.PublicID
		}, eligible, true},
		{"a default Runner revoked since", revoke, func(f *createFixture, c *store.CreateRun) {
			c.Standing, c.DefaultRunner = f.member(), f.runner.PublicID
		}, eligible, false},
		{"a default Runner of another workspace", nothing, func(f *createFixture, c *store.CreateRun) {
			c.Standing, c.DefaultRunner = f.member(), f.otherRunner.PublicID
		}, eligibleOther, false},
		{"an active addressee", nothing, func(f *createFixture, c *store.CreateRun) {
			c.Standing, c.UnlessRevoked = f.member(), []string{f.runner.PublicID}
		}, parks, true},
		{"an addressee revoked since", func(ctx context.Context, f *createFixture) error {
			return f.s.Write(ctx, func(tx *store.Tx) error {
				_, err := store.RevokeExecutor(ctx, tx, f.runner.ID, 3)
				return err
			})
		}, func(f *createFixture, c *store.CreateRun) {
			c.Standing, c.UnlessRevoked = f.member(), []string{f.runner.PublicID}
		}, parks, false},
	}
	errRollback := errors.New("rolled back")
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		for i, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				ctx := context.Background()
				f := newCreateFixture(t, s, i)
				if err := tc.change(ctx, f); err != nil {
					t.Fatal(err)
				}
				var accepts bool
				err := f.s.Write(ctx, func(tx *store.Tx) error {
					var err error
					if accepts, err = tc.accepts(ctx, f, tx); err != nil && !errors.Is(err, store.ErrNotFound) {
						return err
					}
					return errRollback
				})
				if !errors.Is(err, errRollback) {
					t.Fatal(err)
				}
				r, tasks := f.run(2)
				stmt := &store.CreateRun{Run: r, Tasks: tasks}
				tc.stmt(f, stmt)
				err = f.s.CreateRun(ctx, stmt)
				written := err == nil
				if err != nil && !errors.Is(err, store.ErrGuardFailed) {
					t.Fatal(err)
				}
				if written != accepts || written != f.runExists(t, r.PublicID) || written != tc.want {
					t.Fatalf("the statement wrote %v (%v); the transaction accepts %v; want %v", written, err, accepts, tc.want)
				}
			})
		}
	})
}

// A Served row takes its address from the Runner's announcement in the statement itself, on both
// stores alike: the frozen target and profile, the budget (the row's own, else the announced
// one, else the default) and, dispatched, the deadline from it. The statement writes nothing when
// the Runner does not announce the name, announced it before the frozen address was stored, is
// revoked, or is another workspace's.
func TestCreateRunAddressesServedRows(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		announced := int64(45_000)
		serve := func(f *createFixture, ex *store.Executor, tools ...store.ServedTool) {
			t.Helper()
			for i := range tools {
				tools[i].WorkspaceID = ex.WorkspaceID
			}
			if err := s.Write(ctx, func(tx *store.Tx) error { return store.ReplaceServedTools(ctx, tx, ex.ID, tools) }); err != nil {
				t.Fatal(err)
			}
		}
		work := func(name string, timeout *int64) store.ServedTool {
			return store.ServedTool{Name: name, Profile: `{"kind":"read_only"}`, TimeoutMS: timeout,
				FrozenTarget: `{"target":"` + name + `"}`, FrozenProfile: `{"profile":"` + name + `"}`}
		}
		// statement is a run of three rows of which the first two are served by runner's work
		// and fetch: the first dispatched at 5, the second with a budget of its own.
		statement := func(f *createFixture, runner *store.Executor) *store.CreateRun {
			r, tasks := f.run(3)
			own := int64(7_000)
			tasks[1].TimeoutMS = &own
			fetch := "fetch"
			tasks[1].ToolName = &fetch
			tasks[0].DeadlineAt = nil
			return &store.CreateRun{Run: r, Tasks: tasks, Standing: store.Standing{WorkspaceHandle: f.ws.Handle, UserID: f.user.ID, Role: store.RoleMember},
				Served: []store.Served{{Task: 0, RunnerPublicID: runner.PublicID, Name: "work", DefaultTimeoutMS: 30_000},
					{Task: 1, RunnerPublicID: runner.PublicID, Name: "fetch", DefaultTimeoutMS: 30_000}}}
		}

		f := newCreateFixture(t, s, 100)
		serve(f, f.runner, work("work", &announced), work("fetch", nil))
		c := statement(f, f.runner)
		if err := s.CreateRun(ctx, c); err != nil {
			t.Fatal(err)
		}
		if c.Run.WorkspaceID != f.ws.ID || c.Run.WorkspacePublicID != f.ws.PublicID {
			t.Fatalf("the run's workspace %d %s; want %d %s", c.Run.WorkspaceID, c.Run.WorkspacePublicID, f.ws.ID, f.ws.PublicID)
		}
		_, stored := readRows(t, s, c.Run.PublicID)
		for i, want := range []struct {
			target, profile   *string
			timeout, deadline *int64
		}{
			{ptr(`{"target":"work"}`), ptr(`{"profile":"work"}`), ptr(int64(45_000)), ptr(int64(45_005))},
			{ptr(`{"target":"fetch"}`), ptr(`{"profile":"fetch"}`), ptr(int64(7_000)), nil},
			{nil, nil, nil, nil},
		} {
			for _, got := range []store.Task{c.Tasks[i], stored[i]} {
				if !same(got.Target, want.target) || !same(got.EffectProfile, want.profile) || !same(got.TimeoutMS, want.timeout) || !same(got.DeadlineAt, want.deadline) {
					t.Fatalf("row %d: target %v profile %v timeout %v deadline %v; want %v %v %v %v", i,
						str(got.Target), str(got.EffectProfile), str(got.TimeoutMS), str(got.DeadlineAt),
						str(want.target), str(want.profile), str(want.timeout), str(want.deadline))
				}
			}
		}
		// The default budget when neither the row nor the announcement gives one.
		c = statement(f, f.runner)
		c.Tasks[0].ToolName = ptr("fetch")
		c.Served[0].Name = "fetch"
		if err := s.CreateRun(ctx, c); err != nil {
			t.Fatal(err)
		}
		if *c.Tasks[0].TimeoutMS != 30_000 || *c.Tasks[0].DeadlineAt != 30_005 {
			t.Fatalf("the default budget: %d, deadline %d", *c.Tasks[0].TimeoutMS, *c.Tasks[0].DeadlineAt)
		}

		guarded := []struct {
			name  string
			setup func(f *createFixture) *store.CreateRun
		}{
			{"a name the Runner does not announce", func(f *createFixture) *store.CreateRun {
				serve(f, f.runner, work("work", nil))
				return statement(f, f.runner)
			}},
			{"a name announced before the frozen address", func(f *createFixture) *store.CreateRun {
				old := work("fetch", nil)
				old.FrozenTarget, old.FrozenProfile = "", ""
				serve(f, f.runner, work("work", nil), old)
				return statement(f, f.runner)
			}},
			{"a revoked Runner", func(f *createFixture) *store.CreateRun {
				serve(f, f.runner, work("work", nil), work("fetch", nil))
				if err := s.Write(ctx, func(tx *store.Tx) error {
					_, err := store.RevokeExecutor(ctx, tx, f.runner.ID, 3)
					return err
				}); err != nil {
					t.Fatal(err)
				}
				return statement(f, f.runner)
			}},
			{"another workspace's Runner", func(f *createFixture) *store.CreateRun {
				serve(f, f.otherRunner, work("work", nil), work("fetch", nil))
				return statement(f, f.otherRunner)
			}},
		}
		for i, g := range guarded {
			f := newCreateFixture(t, s, 101+i)
			c := g.setup(f)
			if err := s.CreateRun(ctx, c); !errors.Is(err, store.ErrGuardFailed) {
				t.Fatalf("%s: %v; want ErrGuardFailed", g.name, err)
			}
			if f.runExists(t, c.Run.PublicID) {
				t.Fatalf("%s: the run was written", g.name)
			}
		}
	})
}

// readRows reads a run's rows back in id order.
func readRows(t *testing.T, s *store.Store, publicID string) (int64, []store.Task) {
	t.Helper()
	ctx := context.Background()
	var id int64
	if err := s.Reader().Get(ctx, &id, `SELECT id FROM runs WHERE public_id = ?`, publicID); err != nil {
		t.Fatal(err)
	}
	var ids []int64
	if err := s.Reader().Select(ctx, &ids, `SELECT id FROM tasks WHERE run_id = ? ORDER BY id`, id); err != nil {
		t.Fatal(err)
	}
	out := make([]store.Task, len(ids))
	for i, tid := range ids {
		row, err := store.TaskByID(ctx, s.Reader(), tid)
		if err != nil {
			t.Fatal(err)
		}
		out[i] = *row
	}
	return id, out
}

func same[T comparable](a, b *T) bool { return (a == nil) == (b == nil) && (a == nil || *a == *b) }

func str[T any](p *T) string {
	if p == nil {
		return "nil"
	}
	return fmt.Sprint(*p)
}
