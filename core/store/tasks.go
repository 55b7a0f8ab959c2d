package store

import (
	"context"
	"fmt"
	"strings"
)

// TaskTrace is a task row's trace: the columns a run read, readiness and run-state evaluation
// need (docs/development.md#how-the-kernel-runs-work), everything but the large frozen fields and
// result bodies, so that re-evaluating a run stays cheap. TraceTasks reads a run's traces; a
// transition that needs only the trace takes one, and a whole row (Task) carries its own.
// Optional columns are pointers (nil is SQL NULL); JSON-valued columns are Go types the store
// decodes once as it reads them (columns.go).
type TaskTrace struct {
	ID                int64   `db:"id"`
	RunID             int64   `db:"run_id"`
	Key               string  `db:"task_key"`
	Kind              string  `db:"kind"`
	Status            string  `db:"status"`
	Mainline          bool    `db:"mainline"`
	Origin            string  `db:"origin"`
	ParentKey         *string `db:"parent_key"`
	DeclaringTaskKey  *string `db:"declaring_task_key"`
	AfterKeys         Strings `db:"after_keys"`
	OnFailure         string  `db:"on_failure"`
	Lifetime          string  `db:"lifetime"`
	Wake              string  `db:"wake"`
	Detached          bool    `db:"detached"`
	Visibility        string  `db:"visibility"`
	FailureResolution *string `db:"failure_resolution"`
	LineageRoot       string  `db:"lineage_root"`
	RoundNumber       int64   `db:"round_number"`
	Model             *string `db:"model"`
	Finish            *string `db:"finish"`
	Attempts          int64   `db:"attempts"`

	ToolName                  *string   `db:"tool_name"`
	ToolAlias                 *string   `db:"tool_alias"`
	ToolCallID                *string   `db:"tool_call_id"`
	AddressedRole             *string   `db:"addressed_role"`
	AddressedExecutorPublicID *string   `db:"addressed_executor_public_id"`
	Target                    *string   `db:"target"`
	TimeoutMS                 *int64    `db:"timeout_ms"`
	DeadlineAt                *int64    `db:"deadline_at"`
	ClaimGeneration           int64     `db:"claim_generation"`
	ClaimedBy                 *Claimant `db:"claimed_by"`
	ClaimedAt                 *int64    `db:"claimed_at"`
	AwaitingChild             *string   `db:"awaiting_child"`
	Lowered                   bool      `db:"lowered"`
	AwaitKind                 *string   `db:"await_kind"`

	Approval      *Approval `db:"approval"`
	IsError       *bool     `db:"is_error"`
	ErrorKey      *string   `db:"error_key"`
	ErrorDetail   *string   `db:"error_detail"`
	DeliveredWith *string   `db:"delivered_with"`
	SettleSeq     *int64    `db:"settle_seq"`

	CreatedAt         int64  `db:"created_at"`
	ReadyAt           *int64 `db:"ready_at"`
	DispatchedAt      *int64 `db:"dispatched_at"`
	StartedAt         *int64 `db:"started_at"`
	CompletedAt       *int64 `db:"completed_at"`
	ResultDeliveredAt *int64 `db:"result_delivered_at"`
}

// Task is one whole row of the tasks table, the one queue (docs/api.md#runs,
// docs/development.md#how-the-kernel-runs-work): its trace and every other column. The run
// engine owns the meaning of its values; this package moves them.
type Task struct {
	TaskTrace

	Prompt          *string     `db:"prompt"`
	Instructions    *string     `db:"instructions"`
	Attachments     Attachments `db:"attachments"`
	Results         Strings     `db:"results"`
	ToolDefinitions *string     `db:"tool_definitions"`
	SkillCatalog    *string     `db:"skill_catalog"`
	Environment     *string     `db:"environment"`
	AnswerCalls     AnswerCalls `db:"answer_calls"`
	// AnswerContent is the answer's ordered content when it holds provider blocks (internal).
	AnswerContent   *string `db:"answer_content"`
	Usage           *Usage  `db:"usage"`
	RequestBytes    *int64  `db:"request_bytes"`
	SealedRequestID *int64  `db:"sealed_request_id"`
	HistoryEntries  *int64  `db:"history_entries"`

	ToolInput     *string `db:"tool_input"`
	Route         *Route  `db:"route"`
	EffectProfile *string `db:"effect_profile"`
	// DefinitionPin is a pinned import's definition digest, which a pool claim compares with
	// the claimant's own (docs/agent-tools.md#pinned-imports); nil when the call is not pinned.
	DefinitionPin  *string `db:"definition_pin"`
	ClaimTokenHash []byte  `db:"claim_token_hash"`
	ModelDefaults  *string `db:"model_defaults"`
	Scope          *string `db:"scope"`

	Options         Strings          `db:"options"`
	Multi           *bool            `db:"multi"`
	AddressedMember *AddressedMember `db:"addressed_member"`
	WaitSpec        *WaitSpec        `db:"wait_spec"`
	ResolvedBy      *Member          `db:"resolved_by"`

	Output            *string `db:"output"`
	Content           *string `db:"content"`
	StructuredContent *string `db:"structured_content"`
	Title             *string `db:"title"`
	Metadata          *string `db:"metadata"`
}

// TaskRef names a row: its id, its run's and its key.
type TaskRef struct {
	ID    int64  `db:"id"`
	RunID int64  `db:"run_id"`
	Key   string `db:"task_key"`
}

// taskColumns lists every column of tasks in a fixed order: the insert and the reads use it.
var taskColumns = []string{
	"id", "run_id", "task_key", "kind", "status", "mainline", "origin", "parent_key", "declaring_task_key",
	"after_keys", "on_failure", "lifetime", "wake", "detached", "visibility", "failure_resolution",
	"lineage_root", "round_number", "model", "prompt", "instructions", "attachments", "results",
	"tool_definitions", "skill_catalog", "environment", "finish", "answer_calls", "usage", "attempts",
	"request_bytes", "sealed_request_id", "history_entries", "tool_name", "tool_alias", "tool_input",
	"tool_call_id", "route", "target", "addressed_role", "addressed_executor_public_id", "effect_profile",
	"timeout_ms", "deadline_at", "claim_generation", "claim_token_hash", "claimed_by", "claimed_at",
	"awaiting_child", "lowered", "model_defaults", "scope", "await_kind", "options", "multi", "addressed_member",
	"wait_spec", "resolved_by", "approval", "is_error", "output", "content", "structured_content", "title",
	"metadata", "error_key", "error_detail", "delivered_with", "settle_seq", "created_at", "ready_at",
	"dispatched_at", "started_at", "completed_at", "result_delivered_at", "answer_content", "definition_pin",
}

func (t *Task) values() []any {
	return []any{
		t.RunID, t.Key, t.Kind, t.Status, t.Mainline, t.Origin, t.ParentKey, t.DeclaringTaskKey,
		t.AfterKeys, t.OnFailure, t.Lifetime, t.Wake, t.Detached, t.Visibility, t.FailureResolution,
		t.LineageRoot, t.RoundNumber, t.Model, t.Prompt, t.Instructions, t.Attachments, t.Results,
		t.ToolDefinitions, t.SkillCatalog, t.Environment, t.Finish, t.AnswerCalls, t.Usage, t.Attempts,
		t.RequestBytes, t.SealedRequestID, t.HistoryEntries, t.ToolName, t.ToolAlias, t.ToolInput,
		t.ToolCallID, t.Route, t.Target, t.AddressedRole, t.AddressedExecutorPublicID, t.EffectProfile,
		t.TimeoutMS, t.DeadlineAt, t.ClaimGeneration, t.ClaimTokenHash, t.ClaimedBy, t.ClaimedAt,
		t.AwaitingChild, t.Lowered, t.ModelDefaults, t.Scope, t.AwaitKind, t.Options, t.Multi, t.AddressedMember,
		t.WaitSpec, t.ResolvedBy, t.Approval, t.IsError, t.Output, t.Content, t.StructuredContent, t.Title,
		t.Metadata, t.ErrorKey, t.ErrorDetail, t.DeliveredWith, t.SettleSeq, t.CreatedAt, t.ReadyAt,
		t.DispatchedAt, t.StartedAt, t.CompletedAt, t.ResultDeliveredAt, t.AnswerContent, t.DefinitionPin,
	}
}

var insertTaskSQL = func() string {
	cols := taskColumns[1:]
	return `INSERT INTO tasks (` + strings.Join(cols, ", ") + `) VALUES (` +
		strings.TrimSuffix(strings.Repeat("?, ", len(cols)), ", ") + `) RETURNING id`
}()

// InsertTask stores t and sets its ID.
func InsertTask(ctx context.Context, q Querier, t *Task) error {
	if err := q.Get(ctx, &t.ID, insertTaskSQL, t.values()...); err != nil {
		return fmt.Errorf("store: insert task %s: %w", t.Key, err)
	}
	return nil
}

var selectTaskSQL = `SELECT ` + strings.Join(taskColumns, ", ") + ` FROM tasks`

// TaskByKey reads one task of a run.
func TaskByKey(ctx context.Context, q Querier, runID int64, key string) (*Task, error) {
	var t Task
	if err := q.Get(ctx, &t, selectTaskSQL+` WHERE run_id = ? AND task_key = ?`, runID, Key(key)); err != nil {
		return nil, notFound(err)
	}
	return &t, nil
}

// TaskByID reads one task.
func TaskByID(ctx context.Context, q Querier, id int64) (*Task, error) {
	var t Task
	if err := q.Get(ctx, &t, selectTaskSQL+` WHERE id = ?`, id); err != nil {
		return nil, notFound(err)
	}
	return &t, nil
}

// LockTask reads one task under a row lock (PostgreSQL FOR UPDATE; on SQLite the immediate
// transaction already holds the database lock).
func LockTask(ctx context.Context, tx *Tx, id int64) (*Task, error) {
	var t Task
	if err := tx.Get(ctx, &t, selectTaskSQL+` WHERE id = ?`+forUpdate(tx), id); err != nil {
		return nil, notFound(err)
	}
	return &t, nil
}

// traceColumns are TaskTrace's columns.
var traceColumns = []string{
	"id", "run_id", "task_key", "kind", "status", "mainline", "origin", "parent_key", "declaring_task_key",
	"after_keys", "on_failure", "lifetime", "wake", "detached", "visibility", "failure_resolution",
	"lineage_root", "round_number", "model", "finish", "attempts", "tool_name", "tool_alias", "tool_call_id",
	"addressed_role", "addressed_executor_public_id", "target", "timeout_ms", "deadline_at", "claim_generation",
	"claimed_by", "claimed_at", "awaiting_child", "lowered", "await_kind", "approval", "is_error",
	"error_key", "error_detail", "delivered_with", "settle_seq", "created_at", "ready_at", "dispatched_at",
	"started_at", "completed_at", "result_delivered_at",
}

// traceColumnList is traceColumns as a select list, joined once.
var traceColumnList = strings.Join(traceColumns, ", ")

// TracesOf is the traces of rows, in their order.
func TracesOf(rows []Task) []TaskTrace {
	out := make([]TaskTrace, len(rows))
	for i := range rows {
		out[i] = rows[i].TaskTrace
	}
	return out
}

// TraceTasks reads the trace of every task of a run, in creation order.
func TraceTasks(ctx context.Context, q Querier, runID int64) ([]TaskTrace, error) {
	var ts []TaskTrace
	err := q.Select(ctx, &ts, `SELECT `+traceColumnList+` FROM tasks WHERE run_id = ? ORDER BY id`, runID)
	return ts, err
}

// DueTasks lists up to limit task ids whose park has expired (deadline_at ≤ now) in a status the
// expiry rule settles (docs/development.md#how-the-kernel-runs-work), locking them with SKIP LOCKED
// on PostgreSQL so that several sweepers never take the same row.
func DueTasks(ctx context.Context, tx *Tx, now int64, limit int) ([]TaskRef, error) {
	var ts []TaskRef
	q := `SELECT id, run_id, task_key FROM tasks
WHERE deadline_at IS NOT NULL AND deadline_at <= ? AND status IN ('running', 'dispatched', 'awaiting_input', 'needs_approval')
ORDER BY deadline_at, id LIMIT ?`
	if tx.Dialect() == Postgres {
		q += ` FOR UPDATE SKIP LOCKED`
	}
	err := tx.Select(ctx, &ts, q, now, limit)
	return ts, err
}

// NextSettleSeq returns the next settlement sequence number of a run: unpaired results are
// delivered in settlement order (docs/development.md#how-the-kernel-runs-work), which creation
// order does not give. A row born settled reads it for its INSERT; a transition that settles a row
// computes it in its own statement.
func NextSettleSeq(ctx context.Context, q Querier, runID int64) (int64, error) {
	var n int64
	err := q.Get(ctx, &n, nextSettleSeqSQL, runID)
	return n, err
}

// nextSettleSeqSQL computes NextSettleSeq for the run bound to its one placeholder.
const nextSettleSeqSQL = `SELECT COALESCE(MAX(settle_seq), 0) + 1 FROM tasks WHERE run_id = ?`

func placeholders(n int) string {
	return strings.TrimSuffix(strings.Repeat("?, ", n), ", ")
}

func forUpdate(q Querier) string {
	if q.Dialect() == Postgres {
		return ` FOR UPDATE`
	}
	return ``
}

// LineageRoundAndCalls reads the model round of a lineage with this round number, the rows it
// declared (its calls' rows, in creation order) and its sealed request: what a continuation's
// seal reads of the round before it. The rows and the request's index row are one statement; the
// request is empty when the round was never sealed. ErrNotFound when the lineage has no such
// round.
func LineageRoundAndCalls(ctx context.Context, q Querier, runID int64, root string, round int64) (*Task, []Task, SealedParts, error) {
	// Both halves read the run's rows only (its index), the round's by its lineage and number.
	theRound := func(alias string) string {
		return alias + `lineage_root = ? AND ` + alias + `round_number = ? AND ` + alias + `kind = 'model_task'`
	}
	var rows []struct {
		Task
		sealedHead
	}
	err := q.Select(ctx, &rows, `SELECT `+taskColumnsOfT+`, s.parts AS sealed_parts, s.sha256 AS sealed_sha256
FROM tasks t LEFT JOIN sealed_requests s ON s.id = t.sealed_request_id
WHERE t.run_id = ? AND (`+theRound("t.")+` OR t.declaring_task_key = (SELECT task_key FROM tasks WHERE run_id = ? AND `+theRound("")+`))
ORDER BY t.id`,
		runID, root, round, runID, root, round)
	if err != nil {
		return nil, nil, SealedParts{}, err
	}
	for i, r := range rows {
		if r.Kind != "model_task" || r.LineageRoot != root || r.RoundNumber != round {
			continue
		}
		calls := make([]Task, 0, len(rows)-1)
		for j := range rows {
			if j != i {
				calls = append(calls, rows[j].Task)
			}
		}
		var parts SealedParts
		if r.SealedRequestID != nil {
			if parts, err = sealedFrom(ctx, q, *r.SealedRequestID, r.sealedHead); err != nil {
				return nil, nil, SealedParts{}, err
			}
		}
		return &r.Task, calls, parts, nil
	}
	return nil, nil, SealedParts{}, ErrNotFound
}

// LastLineageRound reads the newest model round of a lineage.
func LastLineageRound(ctx context.Context, q Querier, runID int64, root string) (*Task, error) {
	var t Task
	err := q.Get(ctx, &t, selectTaskSQL+` WHERE run_id = ? AND lineage_root = ? AND kind = 'model_task' ORDER BY round_number DESC LIMIT 1`, runID, root)
	if err != nil {
		return nil, notFound(err)
	}
	return &t, nil
}

// HeldRow is a held approval with its run's public facts.
type HeldRow struct {
	Task
	RunPublicID          string  `db:"run_public_id"`
	WorkspacePublicID    string  `db:"workspace_public_id"`
	ConversationPublicID *string `db:"conversation_public_id"`
}

// HeldForMember lists held approvals for a member, oldest first: rows of runs the member
// created (a user) or whose answering agent's steward is the member; for an agent, rows of runs
// it answers or created.
func HeldForMember(ctx context.Context, q Querier, kind, publicID string, afterID int64, limit int) ([]HeldRow, error) {
	var who string
	args := []any{}
	if kind == KindAgent {
		who = `(r.answering_agent_public_id = ? OR (r.created_by_kind = 'agent' AND r.created_by_public_id = ?))`
		args = append(args, publicID, publicID)
	} else {
		who = `((r.created_by_kind = 'user' AND r.created_by_public_id = ?) OR (r.created_by_kind <> 'user' AND EXISTS (
  SELECT 1 FROM agents a JOIN users u ON u.id = a.steward_user_id WHERE CAST(a.public_id AS TEXT) = r.answering_agent_public_id AND CAST(u.public_id AS TEXT) = ?)))`
		args = append(args, publicID, publicID)
	}
	args = append(args, afterID, limit)
	var rows []HeldRow
	err := q.Select(ctx, &rows, `SELECT `+taskColumnsOfT+`, r.public_id AS run_public_id, w.public_id AS workspace_public_id,
  c.public_id AS conversation_public_id
FROM tasks t JOIN runs r ON r.id = t.run_id JOIN workspaces w ON w.id = r.workspace_id LEFT JOIN conversations c ON c.id = r.conversation_id
WHERE t.status = 'needs_approval' AND `+who+` AND t.id > ? ORDER BY t.id LIMIT ?`, args...)
	return rows, err
}

// LastSealedRound reads the newest sealed model round of a lineage.
func LastSealedRound(ctx context.Context, q Querier, runID int64, root string) (*Task, error) {
	var t Task
	err := q.Get(ctx, &t, selectTaskSQL+` WHERE run_id = ? AND lineage_root = ? AND kind = 'model_task' AND sealed_request_id IS NOT NULL
ORDER BY round_number DESC LIMIT 1`, runID, root)
	if err != nil {
		return nil, notFound(err)
	}
	return &t, nil
}
