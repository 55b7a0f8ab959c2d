package store_test

import (
	"context"
	"fmt"
	"reflect"
	"testing"

	"github.com/nexuskernel/nexus/core/store"
	"github.com/nexuskernel/nexus/core/store/storetest"
)

// TestInsertRunWithTasks: the run and its rows land as InsertRun and InsertTask would write
// them, each row with its own id and the run's, for no rows, a few, and more than one
// statement takes on PostgreSQL.
func TestInsertRunWithTasks(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		for _, n := range []int{0, 1, 3, 20} {
			err := s.Write(ctx, func(tx *store.Tx) error {
				w := &store.Workspace{PublicID: store.NewPublicID(), Handle: fmt.Sprintf("w%d", n), Name: "W"}
				if err := store.InsertWorkspace(ctx, tx, w); err != nil {
					return err
				}
				r := &store.Run{PublicID: store.NewPublicID(), WorkspaceID: w.ID, CreatedByKind: "user", CreatedByPublicID: store.NewPublicID(),
					Status: "running", ApprovalMode: "bypass", ApprovalRules: "[]", DeliverableTaskKey: "k0", Revision: 1,
					MainlineRoundCounter: 1, MemoryContext: "{}", CreatedAt: 5, UpdatedAt: 5}
				tasks := make([]store.Task, n)
				for i := range tasks {
					name, input := fmt.Sprintf("tool%d", i), fmt.Sprintf(`{"i":%d}`, i)
					tasks[i] = store.Task{TaskTrace: store.TaskTrace{
						Key: fmt.Sprintf("k%d", i), Kind: "tool_task", Status: "waiting", OnFailure: "propagate",
						Lifetime: "turn", Wake: "auto", Visibility: "collapsed", LineageRoot: fmt.Sprintf("k%d", i),
						CreatedAt: int64(i), ToolName: &name,
					},
						ToolInput: &input,
					}
				}
				if err := store.InsertRunWithTasks(ctx, tx, r, tasks); err != nil {
					return err
				}
				if r.ID == 0 {
					return fmt.Errorf("%d rows: the run has no id", n)
				}
				got, err := store.RunByPublicID(ctx, tx, w.ID, r.PublicID)
				if err != nil || got.ID != r.ID || got.DeliverableTaskKey != "k0" || got.CreatedAt != 5 {
					return fmt.Errorf("%d rows: run read back %+v %v", n, got, err)
				}
				ids := map[int64]bool{}
				for i := range tasks {
					if tasks[i].RunID != r.ID || tasks[i].ID == 0 || ids[tasks[i].ID] {
						return fmt.Errorf("%d rows: row %d has run %d id %d", n, i, tasks[i].RunID, tasks[i].ID)
					}
					ids[tasks[i].ID] = true
					back, err := store.TaskByKey(ctx, tx, r.ID, tasks[i].Key)
					if err != nil {
						return err
					}
					if !reflect.DeepEqual(*back, tasks[i]) {
						return fmt.Errorf("%d rows: row %d read back\n%+v\nwant\n%+v", n, i, *back, tasks[i])
					}
				}
				all, err := store.TraceTasks(ctx, tx, r.ID)
				if err != nil || len(all) != n {
					return fmt.Errorf("%d rows: the run holds %d rows (%v)", n, len(all), err)
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
		}
	})
}
