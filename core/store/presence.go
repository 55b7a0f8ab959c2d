package store

import "context"

// MarkExecutorConnected records that an event stream of the executor opened at at: its
// connected_at becomes at, and its last_seen_at moves forward to at.
func MarkExecutorConnected(ctx context.Context, q Querier, executorID, at int64) error {
	_, err := q.Exec(ctx, `UPDATE executors SET connected_at = ?,
    last_seen_at = CASE WHEN last_seen_at IS NULL OR last_seen_at < ? THEN ? ELSE last_seen_at END
WHERE id = ?`, at, at, at, executorID)
	return err
}

// ClearExecutorConnected clears connected_at when it is still connectedAt, the opening this
// caller recorded: a stream opened later (on another instance) keeps its own.
func ClearExecutorConnected(ctx context.Context, q Querier, executorID, connectedAt int64) error {
	_, err := q.Exec(ctx, `UPDATE executors SET connected_at = NULL WHERE id = ? AND connected_at = ?`, executorID, connectedAt)
	return err
}

// TouchExecutors records at as the last request of several executors (those holding open event
// streams), never moving last_seen_at backwards.
func TouchExecutors(ctx context.Context, q Querier, executorIDs []int64, at int64) error {
	if len(executorIDs) == 0 {
		return nil
	}
	query, args, err := expandIn(`UPDATE executors SET last_seen_at = ? WHERE id IN (?) AND (last_seen_at IS NULL OR last_seen_at < ?)`,
		at, executorIDs, at)
	if err != nil {
		return err
	}
	_, err = q.Exec(ctx, query, args...)
	return err
}
