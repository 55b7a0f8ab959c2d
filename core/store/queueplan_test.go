package store_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/nexuskernel/nexus/core/store"
	"github.com/nexuskernel/nexus/core/store/storetest"
)

// busyRuns is how many running runs the busy database holds, each with a claimed row (not in the
// queue) and a settled one: the shape of a store whose claims visited every running run (a
// plan chosen by row counts would change its mind somewhere between none and this many).
const busyRuns = 2000

// The kernel's claim reads its queue through the partial index tasks_runnable, in the index's
// order, on a database without statistics (every new SQLite database: ANALYZE never ran) as on
// one with thousands of running runs: no full scan of runs or tasks and no sort of the queue.
func TestQueuePlanUsesRunnableIndex(t *testing.T) {
	t.Parallel()
	s := storetest.Open(t, store.SQLite)
	ctx := context.Background()
	check := func(state string) {
		t.Helper()
		for name, q := range store.QueueStatements(store.SQLite, 0) {
			var rows []struct {
				ID      int    `db:"id"`
				Parent  int    `db:"parent"`
				NotUsed int    `db:"notused"`
				Detail  string `db:"detail"`
			}
			if err := s.Reader().Select(ctx, &rows, `EXPLAIN QUERY PLAN `+q.Text, q.Args...); err != nil {
				t.Fatalf("%s: %s: %v", state, name, err)
			}
			var plan []string
			for _, r := range rows {
				plan = append(plan, r.Detail)
			}
			text := strings.Join(plan, "; ")
			if !strings.Contains(text, "SCAN t USING INDEX tasks_runnable") {
				t.Errorf("%s: %s does not read the queue through tasks_runnable: %s", state, name, text)
			}
			for _, bad := range []string{"SCAN r", "USE TEMP B-TREE", "SEARCH r USING INDEX"} {
				if strings.Contains(text, bad) {
					t.Errorf("%s: %s plans %q: %s", state, name, bad, text)
				}
			}
		}
	}
	check("a fresh database")
	// One run is written as the store writes it, then copied busyRuns-1 times by one statement
	// each for runs and tasks: the race detector makes thousands of single writes slow.
	err := s.Write(ctx, func(tx *store.Tx) error {
		w := &store.Workspace{PublicID: store.NewPublicID(), Handle: "busy", Name: "Busy"}
		if err := store.InsertWorkspace(ctx, tx, w); err != nil {
			return err
		}
		r := &store.Run{PublicID: store.NewPublicID(), WorkspaceID: w.ID, CreatedByKind: "user", CreatedByPublicID: store.NewPublicID(),
			Status: "running", ApprovalMode: "bypass", ApprovalRules: "[]", DeliverableTaskKey: "k0", Revision: 1,
			MainlineRoundCounter: 1, MemoryContext: "{}", CreatedAt: 1, UpdatedAt: 1}
		claimedAt, dispatched := int64(1), int64(1)
		tasks := []store.Task{
			{TaskTrace: store.TaskTrace{Key: "k0", Kind: "model_task", Status: "running", OnFailure: "propagate", Lifetime: "turn", Wake: "auto",
				Visibility: "collapsed", LineageRoot: "k0", CreatedAt: 1, ClaimedAt: &claimedAt, DispatchedAt: &dispatched}},
			{TaskTrace: store.TaskTrace{Key: "k1", Kind: "model_task", Status: "completed", OnFailure: "propagate", Lifetime: "turn", Wake: "auto",
				Visibility: "collapsed", LineageRoot: "k1", CreatedAt: 1}},
		}
		if err := store.InsertRunWithTasks(ctx, tx, r, tasks); err != nil {
			return err
		}
		columns := func(table string, replace map[string]string) (names, values string, err error) {
			var cols []string
			if err := tx.Select(ctx, &cols, `SELECT name FROM pragma_table_info(?) WHERE name <> 'id' ORDER BY cid`, table); err != nil {
				return "", "", err
			}
			vals := make([]string, len(cols))
			for i, c := range cols {
				vals[i] = "x." + c
				if v, ok := replace[c]; ok {
					vals[i] = v
				}
			}
			return strings.Join(cols, ", "), strings.Join(vals, ", "), nil
		}
		names, values, err := columns("runs", map[string]string{"public_id": "printf('%08x-0000-7000-8000-000000000000', n.i)"})
		if err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ?)
INSERT INTO runs (`+names+`) SELECT `+values+` FROM runs x, n WHERE x.id = ?`, busyRuns-1, r.ID); err != nil {
			return fmt.Errorf("copying the run: %w", err)
		}
		names, values, err = columns("tasks", map[string]string{"run_id": "c.id"})
		if err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `INSERT INTO tasks (`+names+`) SELECT `+values+` FROM tasks x, runs c WHERE x.run_id = ? AND c.id <> ?`, r.ID, r.ID); err != nil {
			return fmt.Errorf("copying the run's tasks: %w", err)
		}
		var running int
		if err := tx.Get(ctx, &running, `SELECT COUNT(*) FROM runs WHERE status = 'running'`); err != nil || running != busyRuns {
			return fmt.Errorf("%d running runs (%v), want %d", running, err, busyRuns)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	check(fmt.Sprintf("%d running runs", busyRuns))
}
