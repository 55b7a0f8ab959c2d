package store

import (
	"context"
	"errors"
	"fmt"
	"strings"
)

// Run is one row of runs (docs/api.md#runs). JSON-valued columns are their stored text.
type Run struct {
	ID                            int64   `db:"id"`
	PublicID                      string  `db:"public_id"`
	WorkspaceID                   int64   `db:"workspace_id"`
	WorkspacePublicID             string  `db:"workspace_public_id"`
	ConversationID                *int64  `db:"conversation_id"`
	ConversationPublicID          *string `db:"conversation_public_id"`
	CreatedByKind                 string  `db:"created_by_kind"`
	CreatedByPublicID             string  `db:"created_by_public_id"`
	AnsweringAgentPublicID        *string `db:"answering_agent_public_id"`
	Status                        string  `db:"status"`
	ApprovalMode                  string  `db:"approval_mode"`
	ApprovalRules                 string  `db:"approval_rules"`
	DefaultRunnerExecutorPublicID *string `db:"default_runner_executor_public_id"`
	DeliverableTaskKey            string  `db:"deliverable_task_key"`
	Revision                      int64   `db:"revision"`
	MainlineRoundCounter          int64   `db:"mainline_round_counter"`
	MemoryContext                 string  `db:"memory_context"`
	Answer                        *string `db:"answer"`
	StopRequestedAt               *int64  `db:"stop_requested_at"`
	StopByKind                    *string `db:"stop_by_kind"`
	StopByPublicID                *string `db:"stop_by_public_id"`
	StopForce                     *bool   `db:"stop_force"`
	CreatedAt                     int64   `db:"created_at"`
	StartedAt                     *int64  `db:"started_at"`
	CompletedAt                   *int64  `db:"completed_at"`
	UpdatedAt                     int64   `db:"updated_at"`
}

var runColumns = []string{
	"public_id", "workspace_id", "conversation_id", "created_by_kind", "created_by_public_id",
	"answering_agent_public_id", "status", "approval_mode", "approval_rules", "default_runner_executor_public_id",
	"deliverable_task_key", "revision", "mainline_round_counter", "memory_context", "answer", "stop_requested_at",
	"stop_by_kind", "stop_by_public_id", "stop_force", "created_at", "started_at", "completed_at", "updated_at",
}

// InsertRun stores r and sets its ID.
func InsertRun(ctx context.Context, q Querier, r *Run) error {
	err := q.Get(ctx, &r.ID, insertRunSQL, r.values()...)
	if err != nil {
		return fmt.Errorf("store: insert run: %w", err)
	}
	return nil
}

var insertRunSQL = `INSERT INTO runs (` + strings.Join(runColumns, ", ") + `) VALUES (` + placeholders(len(runColumns)) + `) RETURNING id`

// values lists r's columns in runColumns order.
func (r *Run) values() []any {
	return []any{r.PublicID, r.WorkspaceID, r.ConversationID, r.CreatedByKind, r.CreatedByPublicID,
		r.AnsweringAgentPublicID, r.Status, r.ApprovalMode, r.ApprovalRules, r.DefaultRunnerExecutorPublicID,
		r.DeliverableTaskKey, r.Revision, r.MainlineRoundCounter, r.MemoryContext, r.Answer, r.StopRequestedAt,
		r.StopByKind, r.StopByPublicID, r.StopForce, r.CreatedAt, r.StartedAt, r.CompletedAt, r.UpdatedAt}
}

// maxTasksWithRun bounds the task rows InsertRunWithTasks writes in the run's own statement:
// a row binds one argument per task column, and a bounded set of statement texts stays in the
// connections' statement caches (one text per row count). Further rows go in statements of
// their own.
const maxTasksWithRun = 16

// InsertRunWithTasks stores a new run and its first task rows, setting the run's ID and each
// task's RunID and ID. On PostgreSQL the run and up to maxTasksWithRun rows are one statement
// (the run's INSERT as a common table expression whose id the rows take), a round trip instead
// of one per row; SQLite, in process, inserts them one by one.
func InsertRunWithTasks(ctx context.Context, tx *Tx, r *Run, tasks []Task) error {
	first := tasks[:min(len(tasks), maxTasksWithRun)]
	if tx.Dialect() != Postgres || len(first) == 0 {
		if err := InsertRun(ctx, tx, r); err != nil {
			return err
		}
		return insertTasksOf(ctx, tx, r.ID, tasks)
	}
	cols := taskColumns[1:] // run_id, then the rest
	row := `((SELECT id FROM r), ` + placeholders(len(cols)-1) + `)`
	q := `WITH r AS (` + insertRunSQL + `)
INSERT INTO tasks (` + strings.Join(cols, ", ") + `) VALUES ` + strings.TrimSuffix(strings.Repeat(row+`, `, len(first)), `, `) + `
RETURNING id, run_id, task_key`
	args := r.values()
	for i := range first {
		args = append(args, first[i].values()[1:]...)
	}
	var ids []insertedRow
	if err := tx.Select(ctx, &ids, q, args...); err != nil {
		return fmt.Errorf("store: insert run with its tasks: %w", err)
	}
	if err := setInsertedIDs("insert run with its tasks", r, first, ids); err != nil {
		return err
	}
	return insertTasksOf(ctx, tx, r.ID, tasks[len(first):])
}

// insertedRow is what a statement inserting a run and its rows returns per row.
type insertedRow struct {
	ID    int64  `db:"id"`
	RunID int64  `db:"run_id"`
	Key   string `db:"task_key"`
}

// setInsertedIDs gives r and each of tasks the ids the statement (what, for errors) returned,
// matched by task key.
func setInsertedIDs(what string, r *Run, tasks []Task, ids []insertedRow) error {
	if len(ids) != len(tasks) {
		return fmt.Errorf("store: %s: %d rows written of %d", what, len(ids), len(tasks))
	}
	byKey := make(map[string]int64, len(ids))
	for _, id := range ids {
		byKey[id.Key] = id.ID
		r.ID = id.RunID
	}
	for i := range tasks {
		id, ok := byKey[tasks[i].Key]
		if !ok {
			return fmt.Errorf("store: %s: no id for task %s", what, tasks[i].Key)
		}
		tasks[i].ID, tasks[i].RunID = id, r.ID
	}
	return nil
}

// insertTasksOf inserts task rows of run runID one by one.
func insertTasksOf(ctx context.Context, tx *Tx, runID int64, tasks []Task) error {
	for i := range tasks {
		tasks[i].RunID = runID
		if err := InsertTask(ctx, tx, &tasks[i]); err != nil {
			return err
		}
	}
	return nil
}

const selectRunSQL = `SELECT r.id, r.public_id, r.workspace_id, w.public_id AS workspace_public_id, r.conversation_id,
  c.public_id AS conversation_public_id, r.created_by_kind, r.created_by_public_id, r.answering_agent_public_id,
  r.status, r.approval_mode, r.approval_rules, r.default_runner_executor_public_id, r.deliverable_task_key,
  r.revision, r.mainline_round_counter, r.memory_context, r.answer, r.stop_requested_at, r.stop_by_kind,
  r.stop_by_public_id, r.stop_force, r.created_at, r.started_at, r.completed_at, r.updated_at
FROM runs r JOIN workspaces w ON w.id = r.workspace_id LEFT JOIN conversations c ON c.id = r.conversation_id`

// RunByPublicID reads a run of one workspace; another workspace's run is not found.
func RunByPublicID(ctx context.Context, q Querier, workspaceID int64, publicID string) (*Run, error) {
	var r Run
	if err := q.Get(ctx, &r, selectRunSQL+` WHERE r.workspace_id = ? AND r.public_id = ?`, workspaceID, ID(publicID)); err != nil {
		return nil, notFound(err)
	}
	return &r, nil
}

// RunStanding is what a waiting run read decides on before it waits: the run's status and
// whether one of its rows is held for a person (needs_approval or awaiting_input, the held rows
// the inbox lists), in one statement. ErrNotFound for another workspace's run.
func RunStanding(ctx context.Context, q Querier, workspaceID int64, publicID string) (status string, held bool, err error) {
	var row struct {
		Status string `db:"status"`
		Held   bool   `db:"held"`
	}
	err = q.Get(ctx, &row, `SELECT r.status, EXISTS (SELECT 1 FROM tasks t WHERE t.run_id = r.id
  AND t.status IN ('needs_approval', 'awaiting_input')) AS held
FROM runs r WHERE r.workspace_id = ? AND r.public_id = ?`, workspaceID, ID(publicID))
	return row.Status, row.Held, notFound(err)
}

// RunByID reads a run.
func RunByID(ctx context.Context, q Querier, id int64) (*Run, error) {
	var r Run
	if err := q.Get(ctx, &r, selectRunSQL+` WHERE r.id = ?`, id); err != nil {
		return nil, notFound(err)
	}
	return &r, nil
}

// LockRun takes the run's lock (docs/development.md#how-the-kernel-runs-work) and reads the row
// under it, in one statement: on PostgreSQL the read locks the run's row (FOR UPDATE OF r) and
// answers it as it is once locked; SQLite's immediate transaction already holds the lock.
func LockRun(ctx context.Context, tx *Tx, id int64) (*Run, error) {
	q := selectRunSQL + ` WHERE r.id = ?`
	if tx.Dialect() == Postgres {
		q += ` FOR UPDATE OF r`
	}
	var r Run
	if err := tx.Get(ctx, &r, q, id); err != nil {
		if err = notFound(err); errors.Is(err, ErrNotFound) {
			return nil, err
		}
		return nil, fmt.Errorf("store: lock run %d: %w", id, err)
	}
	return &r, nil
}

// A run changes state only through the named statements below, as a task does (transitions.go):
// one statement each, with the values it writes as fields.

// StartRun moves a pending run to running (Status), started now.
type StartRun struct {
	ID     int64
	Status string
	At     int64
}

// Exec writes the start.
func (r StartRun) Exec(ctx context.Context, q Querier) error {
	return runExec(ctx, q, "start", r.ID, `UPDATE runs SET status = ?, started_at = ?, updated_at = ? WHERE id = ?`, r.Status, r.At, r.At, r.ID)
}

// ReviseRun records an append (docs/api.md#runs): the run's new revision and deliverable, and a
// new status when Status is not "" (an append that resumes a run that needed attention).
type ReviseRun struct {
	ID          int64
	Revision    int64
	Deliverable string
	Status      string
	At          int64
}

// Exec writes the revision.
func (r ReviseRun) Exec(ctx context.Context, q Querier) error {
	return runExec(ctx, q, "revise", r.ID, `UPDATE runs SET revision = ?, deliverable_task_key = ?, updated_at = ?, status = COALESCE(?, status) WHERE id = ?`,
		r.Revision, r.Deliverable, r.At, nullIfEmpty(r.Status), r.ID)
}

// RequestStop records who asked a run to stop, when, and whether with force (docs/api.md#runs).
type RequestStop struct {
	ID    int64
	At    int64
	By    Member
	Force bool
}

// Exec writes the request.
func (r RequestStop) Exec(ctx context.Context, q Querier) error {
	return runExec(ctx, q, "stop", r.ID, `UPDATE runs SET stop_requested_at = ?, stop_by_kind = ?, stop_by_public_id = ?, stop_force = ? WHERE id = ?`,
		r.At, r.By.Kind, r.By.PublicID, r.Force, r.ID)
}

// MoveRun moves a run to another status of its lifecycle (docs/api.md#runs); CompletedAt, when
// not nil, ends it.
type MoveRun struct {
	ID          int64
	Status      string
	At          int64
	CompletedAt *int64
}

// Exec writes the status.
func (r MoveRun) Exec(ctx context.Context, q Querier) error {
	return runExec(ctx, q, "move", r.ID, `UPDATE runs SET status = ?, updated_at = ?, completed_at = COALESCE(?, completed_at) WHERE id = ?`,
		r.Status, r.At, r.CompletedAt, r.ID)
}

// CompleteRun completes a run with its answer, the output of its deliverable row (Deliverable, a
// task id), copied in the statement: the trace the engine holds carries no output.
type CompleteRun struct {
	ID          int64
	Status      string
	Deliverable int64
	At          int64
}

// Exec writes the completion.
func (r CompleteRun) Exec(ctx context.Context, q Querier) error {
	return runExec(ctx, q, "complete", r.ID, `UPDATE runs SET answer = (SELECT COALESCE(output, '') FROM tasks WHERE id = ?), status = ?, updated_at = ?, completed_at = ? WHERE id = ?`,
		r.Deliverable, r.Status, r.At, r.At, r.ID)
}

// PlantRound moves a run's mainline onto a round the engine planted (a wake round): the round
// counter and the deliverable.
type PlantRound struct {
	ID          int64
	Counter     int64
	Deliverable string
}

// Exec writes the move.
func (r PlantRound) Exec(ctx context.Context, q Querier) error {
	return runExec(ctx, q, "plant a round of", r.ID, `UPDATE runs SET mainline_round_counter = ?, deliverable_task_key = ? WHERE id = ?`,
		r.Counter, r.Deliverable, r.ID)
}

// runExec runs one run statement.
func runExec(ctx context.Context, q Querier, what string, id int64, query string, args ...any) error {
	if _, err := q.Exec(ctx, query, args...); err != nil {
		return fmt.Errorf("store: %s run %d: %w", what, id, err)
	}
	return nil
}

// RunFilter narrows a run listing.
type RunFilter struct {
	Status               string
	ConversationPublicID string
	// BeforeID pages: only runs with a smaller id (newest first).
	BeforeID int64
	Limit    int
}

// RunsOfWorkspace lists runs newest first.
func RunsOfWorkspace(ctx context.Context, q Querier, workspaceID int64, f RunFilter) ([]Run, error) {
	where := []string{`r.workspace_id = ?`}
	args := []any{workspaceID}
	if f.Status != "" {
		where = append(where, `r.status = ?`)
		args = append(args, f.Status)
	}
	if f.ConversationPublicID != "" {
		where = append(where, `c.public_id = ?`)
		args = append(args, ID(f.ConversationPublicID))
	}
	if f.BeforeID > 0 {
		where = append(where, `r.id < ?`)
		args = append(args, f.BeforeID)
	}
	args = append(args, f.Limit)
	var rs []Run
	err := q.Select(ctx, &rs, selectRunSQL+` WHERE `+strings.Join(where, " AND ")+` ORDER BY r.id DESC LIMIT ?`, args...)
	return rs, err
}

// RunIDsWithStatus lists the ids of runs in one status (crash recovery scans live runs).
func RunIDsWithStatus(ctx context.Context, q Querier, status string) ([]int64, error) {
	var ids []int64
	err := q.Select(ctx, &ids, `SELECT id FROM runs WHERE status = ? ORDER BY id`, status)
	return ids, err
}
