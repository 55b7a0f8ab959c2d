package store_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/nexuskernel/nexus/core/store"
	"github.com/nexuskernel/nexus/core/store/storetest"
)

// queuePredicate has the shape of the kernel's runnable predicates (core/runs/scheduler.go):
// the partial index's condition, then the row's and the run's own.
const queuePredicate = store.RunnableCondition + ` AND t.lowered = ? AND r.status = 'running'
 AND (t.kind = 'model_task' OR (t.kind = 'tool_task' AND t.addressed_role IS NULL))
 AND (t.deadline_at IS NULL OR t.deadline_at > ?)`

// busyRuns is how many running runs the busy database holds, each with a claimed row (not in the
// queue) and a settled one: the shape of a store whose claims visited every running run.
const busyRuns = 3000

// The kernel's claim reads its queue through the partial index tasks_runnable, in the index's
// order, on a database without statistics (every new SQLite database: ANALYZE never ran) as on
// one with thousands of running runs: no full scan of runs or tasks and no sort of the queue.
func TestQueuePlanUsesRunnableIndex(t *testing.T) {
	s := storetest.Open(t, store.SQLite)
	ctx := context.Background()
	check := func(state string) {
		t.Helper()
		for name, q := range store.QueueStatements(store.SQLite, queuePredicate) {
			var rows []struct {
				ID      int    `db:"id"`
				Parent  int    `db:"parent"`
				NotUsed int    `db:"notused"`
				Detail  string `db:"detail"`
			}
			if err := s.Reader().Select(ctx, &rows, `EXPLAIN QUERY PLAN `+q, false, 0, false, 0, false, 0, false, 0, false, 0); err != nil {
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
	err := s.Write(ctx, func(tx *store.Tx) error {
		w := &store.Workspace{PublicID: store.NewPublicID(), Handle: "busy", Name: "Busy"}
		if err := store.InsertWorkspace(ctx, tx, w); err != nil {
			return err
		}
		for i := 0; i < busyRuns; i++ {
			r := &store.Run{PublicID: store.NewPublicID(), WorkspaceID: w.ID, CreatedByKind: "user", CreatedByPublicID: store.NewPublicID(),
				Status: "running", ApprovalMode: "bypass", ApprovalRules: "[]", DeliverableTaskKey: "k0", Revision: 1,
				MainlineRoundCounter: 1, MemoryContext: "{}", CreatedAt: int64(i), UpdatedAt: int64(i)}
			claimedAt, dispatched := int64(i), int64(i)
			tasks := []store.Task{
				{Key: "k0", Kind: "model_task", Status: "running", OnFailure: "propagate", Lifetime: "turn", Wake: "auto",
					Visibility: "collapsed", LineageRoot: "k0", CreatedAt: int64(i), ClaimedAt: &claimedAt, DispatchedAt: &dispatched},
				{Key: "k1", Kind: "model_task", Status: "completed", OnFailure: "propagate", Lifetime: "turn", Wake: "auto",
					Visibility: "collapsed", LineageRoot: "k1", CreatedAt: int64(i)},
			}
			if err := store.InsertRunWithTasks(ctx, tx, r, tasks); err != nil {
				return fmt.Errorf("run %d: %w", i, err)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	check(fmt.Sprintf("%d running runs", busyRuns))
}
