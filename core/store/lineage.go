package store

import "context"

// LineageRows reads a lineage's model rounds and every row they declared (their calls' rows and
// the rows those placed), whole, in creation order: what an earlier turn's entries are rendered
// again from for another request (the media its rounds' results carried).
func LineageRows(ctx context.Context, q Querier, runID int64, root string) ([]Task, error) {
	var ts []Task
	err := q.Select(ctx, &ts, selectTaskSQL+` WHERE run_id = ? AND ((lineage_root = ? AND kind = 'model_task')
  OR declaring_task_key IN (SELECT task_key FROM tasks WHERE run_id = ? AND lineage_root = ? AND kind = 'model_task'))
ORDER BY id`, runID, root, runID, root)
	return ts, err
}
