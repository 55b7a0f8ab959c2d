package store

import (
	"context"
	"strings"
)

// InboxFilter selects one page of an executor's inbox (docs/api.md#the-executor-plane).
type InboxFilter struct {
	WorkspaceID int64
	// ExecutorPublicID names the executor: rows addressed to it, claimed or not.
	ExecutorPublicID string
	// PoolMemberID, when not zero, is the executor's internal id and adds the pool rows of the
	// names it currently announces that are unclaimed or claimed by ClaimedBy (a tool provider;
	// a Runner is never a pool member).
	PoolMemberID int64
	ClaimedBy    Claimant
	// After is the last row of the previous page; nil for the first page.
	After *InboxCursor
	Limit int
}

// InboxCursor is a position in the inbox order: dispatched_at, then run, then key.
type InboxCursor struct {
	DispatchedAt int64
	RunPublicID  string
	TaskKey      string
}

// InboxRow is one dispatched row with its run's public facts.
type InboxRow struct {
	Task
	RunPublicID          string  `db:"run_public_id"`
	WorkspacePublicID    string  `db:"workspace_public_id"`
	ConversationPublicID *string `db:"conversation_public_id"`
}

// taskColumnsOfT is the task columns over the alias t, for statements that join tasks to other
// tables.
var taskColumnsOfT = func() string {
	cols := make([]string, len(taskColumns))
	for i, c := range taskColumns {
		cols[i] = "t." + c
	}
	return strings.Join(cols, ", ")
}()

var inboxSelect = `SELECT ` + taskColumnsOfT + `, CAST(r.public_id AS TEXT) AS run_public_id,
  CAST(w.public_id AS TEXT) AS workspace_public_id, CAST(c.public_id AS TEXT) AS conversation_public_id
FROM tasks t JOIN runs r ON r.id = t.run_id JOIN workspaces w ON w.id = r.workspace_id
LEFT JOIN conversations c ON c.id = r.conversation_id`

// ExecutorInbox lists the dispatched tool rows an executor may take now, in dispatched_at, run,
// key order: rows of a running run, and claimed rows of a canceling run (a graceful stop lets
// them finish).
func ExecutorInbox(ctx context.Context, q Querier, f InboxFilter) ([]InboxRow, error) {
	var b strings.Builder
	b.WriteString(inboxSelect)
	b.WriteString(`
WHERE t.status = 'dispatched' AND t.kind = 'tool_task' AND r.workspace_id = ?
  AND (r.status = 'running' OR (r.status = 'canceling' AND t.claimed_at IS NOT NULL))
  AND (t.addressed_executor_public_id = ?`)
	args := []any{f.WorkspaceID, f.ExecutorPublicID}
	if f.PoolMemberID != 0 {
		b.WriteString(` OR (t.addressed_role = 'tool_provider' AND t.addressed_executor_public_id IS NULL
    AND t.tool_name IN (SELECT name FROM executor_served_tools WHERE executor_id = ?)
    AND (t.claimed_at IS NULL OR t.claimed_by = ?))`)
		args = append(args, f.PoolMemberID, f.ClaimedBy)
	}
	b.WriteString(`)`)
	if f.After != nil {
		b.WriteString(`
  AND (t.dispatched_at > ? OR (t.dispatched_at = ? AND (CAST(r.public_id AS TEXT) > ? OR (CAST(r.public_id AS TEXT) = ? AND t.task_key > ?))))`)
		a := f.After
		args = append(args, a.DispatchedAt, a.DispatchedAt, a.RunPublicID, a.RunPublicID, a.TaskKey)
	}
	b.WriteString(`
ORDER BY t.dispatched_at, CAST(r.public_id AS TEXT), t.task_key LIMIT ?`)
	args = append(args, f.Limit)
	var rows []InboxRow
	err := q.Select(ctx, &rows, b.String(), args...)
	return rows, err
}

// RowRef names one task row.
type RowRef struct {
	ID    int64 `db:"id"`
	RunID int64 `db:"run_id"`
}

// DispatchedFor lists the dispatched rows addressed to an executor (claimed or not) and the
// dispatched pool rows it claimed (claimedBy is its stored claimant): what its revocation settles
// (docs/api.md#executors). Rows come in run, then id order, the lock order of the settles.
func DispatchedFor(ctx context.Context, q Querier, executorPublicID string, claimedBy Claimant) ([]RowRef, error) {
	var out []RowRef
	err := q.Select(ctx, &out, `SELECT id, run_id FROM tasks
WHERE status = 'dispatched' AND (addressed_executor_public_id = ?
  OR (addressed_role = 'tool_provider' AND addressed_executor_public_id IS NULL AND claimed_by = ?))
ORDER BY run_id, id`, executorPublicID, claimedBy)
	return out, err
}

// ExecutorByID reads an executor by internal id.
func ExecutorByID(ctx context.Context, q Querier, id int64) (*Executor, error) {
	var e Executor
	err := q.Get(ctx, &e, `SELECT `+executorColumns+`
FROM executors e JOIN workspaces w ON w.id = e.workspace_id WHERE e.id = ?`, id)
	if err != nil {
		return nil, notFound(err)
	}
	return &e, nil
}

// SettledChildren lists the internal ids of a row's settled children (rows it placed, parent_key
// naming it): the operations whose bound results its final commit may link.
func SettledChildren(ctx context.Context, q Querier, runID int64, parentKey string) ([]int64, error) {
	var out []int64
	err := q.Select(ctx, &out, `SELECT id FROM tasks WHERE run_id = ? AND parent_key = ?
  AND status IN ('completed', 'failed', 'canceled', 'timed_out', 'uncertain', 'skipped') ORDER BY id`, runID, parentKey)
	return out, err
}

// runOfTaskColumns are selectRunSQL's columns named run.<column>, so that one row scans a task
// and its run side by side (taskAndRun).
var runOfTaskColumns = func() string {
	list := strings.TrimPrefix(selectRunSQL[:strings.Index(selectRunSQL, "\nFROM")], "SELECT ")
	var out []string
	for _, col := range strings.Split(list, ",") {
		col = strings.TrimSpace(col)
		expr, name, ok := strings.Cut(col, " AS ")
		if !ok {
			name = strings.TrimPrefix(col, "r.")
		}
		out = append(out, expr+` AS "run.`+name+`"`)
	}
	return strings.Join(out, ", ")
}()

// taskAndRun is one row of LockTaskOfRun and of the reads of a claimed row.
type taskAndRun struct {
	Task
	Run Run `db:"run"`
	// CreatorIn is LockTaskOfRun's creatorIn.
	CreatorIn bool `db:"creator_in_workspace"`
	// Detached is Claimed.Detached (runDetachedColumn).
	Detached bool `db:"run_detached"`
}

// runDetachedColumn answers, beside a task row t, whether its run holds a detached row (a
// branch's round, a spawn's or a send's reply): Claimed.Detached. The run's rows are read on
// the tasks' (run_id, task_key) index, in the database; nothing but the answer leaves it.
const runDetachedColumn = `EXISTS (SELECT 1 FROM tasks d WHERE d.run_id = t.run_id AND d.detached) AS run_detached`

// creatorInWorkspaceSQL reports, over a run `r`, whether its creator (a user by its workspace
// membership, an agent that was not removed) still belongs to the run's workspace: the standing
// a run's creator needs for its work to be claimed (docs/api.md#the-executor-plane). A creator of
// another kind (the kernel) always stands. PostgreSQL stores the members' public ids as uuid
// and the run's creator as text: the run's side is cast, so that the lookups stay on their
// indexes; only a user's or an agent's id, always a UUID, reaches the cast.
func creatorInWorkspaceSQL(d Dialect) string {
	id := `r.created_by_public_id`
	if d == Postgres {
		id = `CAST(r.created_by_public_id AS uuid)`
	}
	return `CASE r.created_by_kind
  WHEN '` + KindUser + `' THEN EXISTS (SELECT 1 FROM workspace_members m JOIN users u ON u.id = m.user_id
    WHERE m.workspace_id = r.workspace_id AND u.public_id = ` + id + `)
  WHEN '` + KindAgent + `' THEN EXISTS (SELECT 1 FROM agents a
    WHERE a.workspace_id = r.workspace_id AND a.public_id = ` + id + ` AND a.removed_at IS NULL)
  ELSE TRUE END AS creator_in_workspace`
}

// taskAndRunFrom joins a task (t) to its run and what runOfTaskColumns reads of it.
const taskAndRunFrom = `
FROM tasks t` + taskAndRunJoins

// taskAndRunJoins joins a task row t to its run and what the run's columns read.
const taskAndRunJoins = ` JOIN runs r ON r.id = t.run_id JOIN workspaces w ON w.id = r.workspace_id LEFT JOIN conversations c ON c.id = r.conversation_id`

// TaskAndRunByID reads a task row, its run and whether the run holds a detached row
// (Claimed.Detached) in one statement, without a lock: what a claim with ClaimSpec.WithRow
// answers on SQLite, and what that claim answers on PostgreSQL.
func TaskAndRunByID(ctx context.Context, q Querier, taskID int64) (run *Run, task *Task, detached bool, err error) {
	var row taskAndRun
	err = q.Get(ctx, &row, `SELECT `+taskColumnsOfT+`, `+runOfTaskColumns+`, `+runDetachedColumn+taskAndRunFrom+`
WHERE t.id = ?`, taskID)
	if err != nil {
		return nil, nil, false, notFound(err)
	}
	return &row.Run, &row.Task, row.Detached, nil
}

// LockTaskOfRun reads a workspace's run named by public id, without its lock, and its row by key
// under the row's lock (PostgreSQL FOR UPDATE OF the task alone), in one statement. The run's
// columns are read as the statement starts, before any wait for the row's lock. ErrNotFound with
// a nil run for an unknown run or another workspace's; ErrNotFound with the run for an unknown
// key. creatorIn is whether the run's creator still belongs to its workspace
// (creatorInWorkspaceSQL), read by the same statement rather than by one more round trip.
func LockTaskOfRun(ctx context.Context, tx *Tx, workspaceID int64, runPublicID, key string) (run *Run, task *Task, creatorIn bool, err error) {
	return taskOfRun(ctx, tx, workspaceID, runPublicID, key, false)
}

// LockRunAndTask reads a workspace's run named by public id and its row by key under the run's
// lock, then the row's (docs/development.md#how-the-kernel-runs-work), in one statement: on
// PostgreSQL FOR UPDATE OF r, t, which takes the two in that order and locks neither the
// workspace's row nor the conversation's; both rows are answered as they are once locked.
// ErrNotFound as LockTaskOfRun answers it.
func LockRunAndTask(ctx context.Context, tx *Tx, workspaceID int64, runPublicID, key string) (*Run, *Task, error) {
	run, task, _, err := taskOfRun(ctx, tx, workspaceID, runPublicID, key, true)
	return run, task, err
}

// taskOfRun is the statement of LockTaskOfRun (the row's lock and the creator's standing) and of
// LockRunAndTask (the run's lock, then the row's).
func taskOfRun(ctx context.Context, tx *Tx, workspaceID int64, runPublicID, key string, lockRun bool) (run *Run, task *Task, creatorIn bool, err error) {
	cols, lock := taskColumnsOfT+`, `+runOfTaskColumns+`, `+creatorInWorkspaceSQL(tx.Dialect()), ` FOR UPDATE OF t`
	if lockRun {
		cols, lock = taskColumnsOfT+`, `+runOfTaskColumns, ` FOR UPDATE OF r, t`
	}
	q := `SELECT ` + cols + taskAndRunFrom + `
WHERE r.workspace_id = ? AND r.public_id = ? AND t.task_key = ?`
	if tx.Dialect() == Postgres {
		q += lock
	}
	var row taskAndRun
	err = tx.Get(ctx, &row, q, workspaceID, ID(runPublicID), Key(key))
	if err == nil {
		return &row.Run, &row.Task, row.CreatorIn, nil
	}
	if err = notFound(err); err != ErrNotFound {
		return nil, nil, false, err
	}
	run, err = RunByPublicID(ctx, tx, workspaceID, runPublicID)
	if err != nil {
		return nil, nil, false, err
	}
	return run, nil, false, ErrNotFound
}
