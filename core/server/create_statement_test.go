package server_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/nexuskernel/nexus/core/store"
	"github.com/nexuskernel/nexus/core/store/storetest"
	"github.com/nexuskernel/nexus/internal/testserver"
	"github.com/nexuskernel/nexus/sdk/announce"
	"github.com/nexuskernel/nexus/sdk/client"
)

// storedRun reads a run and its rows back with the columns that differ between two creates of
// the same body (ids, public id, clocks) normalized: dispatch and deadline become the park
// budget they imply, and the approval record loses its decision time.
func storedRun(t *testing.T, st *store.Store, publicID string) (store.Run, []store.Task) {
	t.Helper()
	r, tasks := readRun(t, st, publicID)
	run := *r
	run.ID, run.PublicID, run.CreatedAt, run.StartedAt, run.UpdatedAt = 0, "", 0, nil, 0
	for i := range tasks {
		tk := &tasks[i]
		if tk.DispatchedAt != nil && tk.DeadlineAt != nil {
			budget := *tk.DeadlineAt - *tk.DispatchedAt
			tk.DeadlineAt = &budget
		}
		if tk.Approval != nil {
			a := *tk.Approval
			a.DecidedAt = ""
			tk.Approval = &a
		}
		tk.ID, tk.RunID, tk.CreatedAt, tk.ReadyAt, tk.DispatchedAt = 0, 0, 0, nil, nil
	}
	return run, tasks
}

// createStats is the CreateRun statements a create took: written by the statement, or guarded
// (a guard failed and the transaction served it).
func createStats(st *store.Store, before store.CreateRunStats) store.CreateRunStats {
	after := st.CreateRunStats()
	return store.CreateRunStats{Written: after.Written - before.Written, Guarded: after.Guarded - before.Guarded}
}

// A new run dispatched to a Runner is written by its one statement, on both stores, and what it
// stores is what the transaction stores for the same body (a create with an Idempotency-Key is a
// transaction): the run, its row parked for the Runner, the approval record, the park clock. A
// re-announcement with another budget is read afresh by the next create. When the Runner is
// revoked, the statement's create and the transaction refuse alike. A model step is one
// statement too (its kernel wake-up rides in it), and runs to the end.
func TestCreateStatementStoresWhatTheTransactionStores(t *testing.T) {
	t.Parallel()
	for _, d := range storetest.Dialects() {
		t.Run(string(d), func(t *testing.T) {
			ctx := context.Background()
			srv := testserver.Start(t, testserver.Options{Dialect: d})
			st := srv.Server().Store()
			id, tok := newRunner(t, srv, "plan")
			runner, admin := srv.ClientWith(tok), srv.Client()
			announceBudget := func(ms int64) {
				t.Helper()
				destructive := false
				if _, err := runner.Announce(ctx, announce.Announcement{Tools: []announce.Tool{{Name: "work", TimeoutMS: &ms,
					EffectProfile: &announce.AnnouncedProfile{Kind: "read_only", Destructive: &destructive, EffectScope: "closed", Idempotency: "intrinsic", Reconciliation: "none"}}}}); err != nil {
					t.Fatal(err)
				}
			}
			announceBudget(30_000)
			body := map[string]any{"approval_mode": "bypass", "steps": []any{
				map[string]any{"tool": map[string]any{"name": "work", "input": map[string]any{"n": 1}, "route": map[string]any{"kind": "runner", "runner_executor_public_id": id}}},
				map[string]any{"tool": map[string]any{"name": "work", "input": map[string]any{"n": 2}, "route": map[string]any{"kind": "runner", "runner_executor_public_id": id}}},
			}}
			keys := 0
			create := func(keyed bool) (store.Run, []store.Task, store.CreateRunStats) {
				t.Helper()
				before := st.CreateRunStats()
				key := ""
				if keyed {
					keys++
					key = fmt.Sprintf("plan-%d", keys)
				}
				created, err := admin.CreateRun(ctx, "default", body, key)
				if err != nil {
					t.Fatal(err)
				}
				stats := createStats(st, before)
				run, tasks := storedRun(t, st, created.Run.PublicID)
				return run, tasks, stats
			}
			same := func(what string, r1 store.Run, t1 []store.Task, r2 store.Run, t2 []store.Task) {
				t.Helper()
				if !reflect.DeepEqual(r1, r2) {
					t.Fatalf("%s: runs differ\n%+v\n%+v", what, r1, r2)
				}
				if len(t1) != 2 || len(t2) != 2 {
					t.Fatalf("%s: %d and %d rows", what, len(t1), len(t2))
				}
				for i := range t1 {
					if !reflect.DeepEqual(t1[i], t2[i]) {
						t.Fatalf("%s: row %d differs\n%+v\n%+v", what, i, t1[i], t2[i])
					}
				}
			}
			want := func(what string, got store.CreateRunStats, written, guarded int64) {
				t.Helper()
				if got.Written != written || got.Guarded != guarded {
					t.Fatalf("%s: statements %+v; want %d written, %d guarded", what, got, written, guarded)
				}
			}

			byStatement, statementRows, stats := create(false)
			want("first create", stats, 1, 0)
			viaTx, txRows, stats := create(true)
			want("keyed create", stats, 0, 0)
			same("statement vs transaction", byStatement, statementRows, viaTx, txRows)
			if statementRows[0].Status != "dispatched" || statementRows[1].Status != "waiting" || *statementRows[0].DeadlineAt != 30_000 {
				t.Fatalf("rows %s/%s, budget %v", statementRows[0].Status, statementRows[1].Status, *statementRows[0].DeadlineAt)
			}

			// A model step queues for the kernel, and the kernel runs it to the end.
			before := st.CreateRunStats()
			m, err := admin.CreateRun(ctx, "default", map[string]any{"approval_mode": "bypass", "steps": []any{
				map[string]any{"model": map[string]any{"model": "mock/scripted", "prompt": "Answer.\n!mock\nround 1\nsay done"}}}}, "")
			if err != nil {
				t.Fatal(err)
			}
			want("model step", createStats(st, before), 1, 0)
			for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(20 * time.Millisecond) {
				got, err := admin.Run(ctx, "default", m.Run.PublicID)
				if err != nil {
					t.Fatal(err)
				}
				if got.Run.Status == "completed" {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("the model run is still %s: %s", got.Run.Status, got.Raw)
				}
			}

			// Another budget: the next create reads it.
			announceBudget(45_000)
			again, againRows, stats := create(false)
			want("create after a re-announcement", stats, 1, 0)
			fresh, freshRows, _ := create(true)
			same("statement vs transaction after a re-announcement", again, againRows, fresh, freshRows)
			if *againRows[0].DeadlineAt != 45_000 {
				t.Fatalf("the statement parked the row for %d ms; want the new 45000", *againRows[0].DeadlineAt)
			}

			// Revoked: both paths refuse alike; the statement, which reads the Runner itself,
			// writes nothing, and the transaction finds the word.
			if _, err := admin.RevokeExecutor(ctx, id); err != nil {
				t.Fatal(err)
			}
			before = st.CreateRunStats()
			_, errStatement := admin.CreateRun(ctx, "default", body, "")
			stats = createStats(st, before)
			_, errTx := admin.CreateRun(ctx, "default", body, "revoked")
			var e1, e2 *client.Error
			if !errors.As(errStatement, &e1) || !errors.As(errTx, &e2) || e1.Status != e2.Status || e1.Code != e2.Code || e1.Code != "runner_not_eligible" {
				t.Fatalf("a create addressing a revoked Runner: statement %v, transaction %v", errStatement, errTx)
			}
			want("create addressing a revoked Runner", stats, 0, 1)
		})
	}
}

// A create's standing is read, never remembered: the create door reads nothing, and the run's
// statement reads the standing itself. A member removed since their last create is refused
// not_found and nothing is written (the statement's guard fails and the transaction finds the
// word), even when the body has a fault of its own; a member whose role changed creates on the
// new role.
func TestCreateReadsTheStanding(t *testing.T) {
	t.Parallel()
	for _, d := range storetest.Dialects() {
		t.Run(string(d), func(t *testing.T) {
			ctx := context.Background()
			srv := testserver.Start(t, testserver.Options{Dialect: d})
			st := srv.Server().Store()
			admin := srv.Client()
			mia, err := admin.CreateUser(ctx, "default", &client.CreateUserRequest{Handle: "mia", DisplayName: "Mia", Role: "member"})
			if err != nil {
				t.Fatal(err)
			}
			member := srv.ClientWith(mia.Token)
			body := map[string]any{"approval_mode": "bypass", "start": false, "steps": []any{
				map[string]any{"model": map[string]any{"model": "mock/scripted", "prompt": "Answer."}}}}
			bad := map[string]any{"approval_mode": "sometimes", "steps": body["steps"]}
			runs := func() int {
				t.Helper()
				var n int
				if err := st.Reader().Get(ctx, &n, `SELECT count(*) FROM runs`); err != nil {
					t.Fatal(err)
				}
				return n
			}
			// create creates as Mia and answers the refusal's code ("" when created) and the
			// statements it took.
			create := func(run map[string]any) (string, store.CreateRunStats) {
				t.Helper()
				before := st.CreateRunStats()
				_, err := member.CreateRun(ctx, "default", run, "")
				stats := createStats(st, before)
				if err == nil {
					return "", stats
				}
				var e *client.Error
				if !errors.As(err, &e) {
					t.Fatal(err)
				}
				return fmt.Sprintf("%d %s", e.Status, e.Code), stats
			}
			want := func(what, code, wantCode string, got store.CreateRunStats, written, guarded int64) {
				t.Helper()
				if code != wantCode || got.Written != written || got.Guarded != guarded {
					t.Fatalf("%s: %q with statements %+v; want %q with %d written, %d guarded", what, code, got, wantCode, written, guarded)
				}
			}

			code, stats := create(body)
			want("first create", code, "", stats, 1, 0)
			code, stats = create(bad)
			want("a member's faulty body", code, "422 invalid_approval_mode", stats, 0, 0)

			// Another role: the create stands on it.
			if err := admin.RemoveMember(ctx, "default", mia.User.PublicID); err != nil {
				t.Fatal(err)
			}
			if _, err := admin.AddMember(ctx, "default", &client.AddMemberRequest{UserPublicID: mia.User.PublicID, Role: "owner"}); err != nil {
				t.Fatal(err)
			}
			code, stats = create(body)
			want("create after a role change", code, "", stats, 1, 0)

			// Removed: refused not_found before any other word, and nothing is written.
			if err := admin.RemoveMember(ctx, "default", mia.User.PublicID); err != nil {
				t.Fatal(err)
			}
			n := runs()
			code, stats = create(bad)
			want("a removed member's faulty body", code, "404 not_found", stats, 0, 0)
			code, stats = create(body)
			want("a removed member's create", code, "404 not_found", stats, 0, 1)
			if got := runs(); got != n {
				t.Fatalf("a removed member's creates wrote %d runs", got-n)
			}
		})
	}
}

// Each guard of the create statement that fails answers the word the transaction answers, the
// create door reading nothing first: a route to a Runner that does not announce the tool
// (tool_not_served), a default Runner revoked since (runner_not_eligible at its path), a workspace
// the handle does not name (not_found). The workspace named by its public id is created in by the
// statement.
func TestCreateGuardsAnswerTheTransactionsWords(t *testing.T) {
	t.Parallel()
	for _, d := range storetest.Dialects() {
		t.Run(string(d), func(t *testing.T) {
			ctx := context.Background()
			srv := testserver.Start(t, testserver.Options{Dialect: d})
			st := srv.Server().Store()
			admin := srv.Client()
			id, tok := newRunner(t, srv, "guards")
			spare, _ := newRunner(t, srv, "spare")
			destructive := false
			if _, err := srv.ClientWith(tok).Announce(ctx, announce.Announcement{Tools: []announce.Tool{{Name: "work",
				EffectProfile: &announce.AnnouncedProfile{Kind: "read_only", Destructive: &destructive, EffectScope: "closed", Idempotency: "intrinsic", Reconciliation: "none"}}}}); err != nil {
				t.Fatal(err)
			}
			if _, err := admin.RevokeExecutor(ctx, spare); err != nil {
				t.Fatal(err)
			}
			routed := func(name string) map[string]any {
				return map[string]any{"approval_mode": "bypass", "steps": []any{map[string]any{"tool": map[string]any{
					"name": name, "input": map[string]any{}, "route": map[string]any{"kind": "runner", "runner_executor_public_id": id}}}}}
			}
			// answer creates in ws, with and without a key, and answers both refusals ("" when
			// created) and the statements the keyless one took.
			keys := 0
			answer := func(ws string, run map[string]any) (string, string, store.CreateRunStats) {
				t.Helper()
				word := func(err error) string {
					if err == nil {
						return ""
					}
					var e *client.Error
					if !errors.As(err, &e) {
						t.Fatal(err)
					}
					var path string
					if raw, ok := e.Extra["path"]; ok {
						if err := json.Unmarshal(raw, &path); err != nil {
							t.Fatal(err)
						}
					}
					return fmt.Sprintf("%d %s %s", e.Status, e.Code, path)
				}
				before := st.CreateRunStats()
				_, err := admin.CreateRun(ctx, ws, run, "")
				stats := createStats(st, before)
				keys++
				_, errTx := admin.CreateRun(ctx, ws, run, fmt.Sprintf("guards-%d", keys))
				return word(err), word(errTx), stats
			}
			ws, err := admin.Workspaces(ctx)
			if err != nil {
				t.Fatal(err)
			}
			cases := []struct {
				name, ws string
				run      map[string]any
				want     string
				stats    store.CreateRunStats
			}{
				{"a routed tool the Runner does not announce", "default", routed("other"), "422 tool_not_served steps[0].tool.name", store.CreateRunStats{Guarded: 1}},
				{"a revoked default Runner", "default", map[string]any{"approval_mode": "bypass", "default_runner_executor_public_id": spare, "steps": routed("work")["steps"]},
					"422 runner_not_eligible run.default_runner_executor_public_id", store.CreateRunStats{Guarded: 1}},
				{"a handle that names no workspace", "nowhere", routed("work"), "404 not_found ", store.CreateRunStats{Guarded: 1}},
				{"the workspace by its public id", ws.Workspaces[0].PublicID, routed("work"), "", store.CreateRunStats{Written: 1}},
			}
			for _, c := range cases {
				got, gotTx, stats := answer(c.ws, c.run)
				if got != c.want || gotTx != c.want || stats != c.stats {
					t.Errorf("%s: %q (the transaction %q) with statements %+v; want %q with %+v", c.name, got, gotTx, stats, c.want, c.stats)
				}
			}
		})
	}
}
