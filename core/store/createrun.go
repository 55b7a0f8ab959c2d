package store

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"

	"github.com/lib/pq"
)

// CreateRun is the statement that writes a new run and its first rows in one round trip on
// PostgreSQL, when every guard it carries still holds
// (docs/development.md#how-a-door-reaches-the-store). Its guards are conditions of the statement
// itself, so nothing it writes stands on a fact read earlier: the caller's standing in the
// workspace (which the statement finds by the route's reference), the Runner the run defaults
// to, the Runners its rows are addressed to (whose announcements the rows take their address
// from), and the executors its rows are parked for.
type CreateRun struct {
	// Run is the run to write; its ID is set once written, and its WorkspaceID and
	// WorkspacePublicID are the workspace's that Standing found.
	Run *Run
	// Tasks are the run's rows, as they are written (their first readiness applied); each one's
	// ID and RunID are set once written, and a Served row's address columns. At most
	// MaxCreateRunTasks.
	Tasks []Task
	// Standing is the caller's membership the run is created on.
	Standing Standing
	// DefaultRunner, when not "", is the public id of the Runner the run defaults to: the run is
	// written only while it is an active Runner of the workspace.
	DefaultRunner string
	// Served are the rows addressed to a Runner's tool, whose address the statement reads.
	Served []Served
	// UnlessRevoked are the executors (public ids) rows are parked for: the run is written only
	// while none of them is revoked, as a dispatch parks a row in a transaction (Dispatch).
	UnlessRevoked []string
	// Notify are notifications sent when the statement commits (PostgreSQL; nothing on SQLite).
	Notify []Notification
}

// Served is a row addressed to a Runner's tool by its route, whose address the statement reads
// itself: the run is written only while the Runner is an active Runner of the workspace that
// announces the name with the address frozen beside it (ServedTool's FrozenTarget and
// FrozenProfile), and the row takes that target and effect profile, its park budget (its own
// TimeoutMS, else the announced timeout_ms, else DefaultTimeoutMS) and, when it is dispatched,
// its deadline (DispatchedAt plus the budget).
type Served struct {
	// Task is the row's index in Tasks.
	Task int
	// RunnerPublicID is the Runner the route names, Name the tool.
	RunnerPublicID, Name string
	// DefaultTimeoutMS is the budget of a row whose step and announcement give none.
	DefaultTimeoutMS int64
}

// Standing is a caller's membership of a workspace as a write checks it: a user's membership
// row with at least this role, or an agent's row in the workspace. The workspace is named by
// its row id (a caller a door already read) or, for a write that reads the standing only in its
// statement, by the route's reference: its public id or its handle.
type Standing struct {
	// WorkspaceID is the workspace's row id; 0 when the reference names it.
	WorkspaceID int64
	// WorkspacePublicID or WorkspaceHandle is the route's reference when WorkspaceID is 0.
	WorkspacePublicID, WorkspaceHandle string
	// UserID is the user's row id; 0 for an agent.
	UserID int64
	// Role is the least role the user must hold: member (any membership) or owner; unused for
	// an agent.
	Role string
	// AgentID is the agent's row id; 0 for a user.
	AgentID int64
}

// Notification is one NOTIFY a statement sends.
type Notification struct {
	Channel, Payload string
}

// MaxCreateRunTasks bounds the rows a CreateRun statement writes: each row is a part of the
// statement binding one argument per task column, and the statement texts (one per row count)
// stay few. A larger run is written by a transaction.
const MaxCreateRunTasks = maxTasksWithRun

// ErrGuardFailed reports that a guard of a statement no longer held: nothing was written, and the
// caller runs its ordinary transaction, which reads the facts afresh and finds the refusal word.
var ErrGuardFailed = errors.New("store: a guard of the statement does not hold")

// CreateRunStats counts CreateRun statements since the store opened: Written wrote their run,
// Guarded found a guard failed and wrote nothing.
type CreateRunStats struct {
	Written, Guarded int64
}

type createRunCounters struct{ written, guarded atomic.Int64 }

// CreateRunStats reports the store's CreateRun counts.
func (s *Store) CreateRunStats() CreateRunStats {
	return CreateRunStats{Written: s.createRuns.written.Load(), Guarded: s.createRuns.guarded.Load()}
}

// workspace is the condition naming Standing's workspace w, with its argument.
func (g Standing) workspace() (string, any) {
	switch {
	case g.WorkspaceID != 0:
		return `w.id = ?`, g.WorkspaceID
	case g.WorkspacePublicID != "":
		return `w.public_id = ?`, ID(g.WorkspacePublicID)
	}
	return `w.handle = ?`, g.WorkspaceHandle
}

// cond is Standing's condition on the workspace w, with its arguments: the same condition
// StandingHolds reads.
func (g Standing) cond() (string, []any) {
	if g.UserID != 0 {
		if g.Role == RoleOwner {
			return `EXISTS (SELECT 1 FROM workspace_members m WHERE m.workspace_id = w.id AND m.user_id = ? AND m.role = ?)`,
				[]any{g.UserID, RoleOwner}
		}
		return `EXISTS (SELECT 1 FROM workspace_members m WHERE m.workspace_id = w.id AND m.user_id = ?)`, []any{g.UserID}
	}
	return `EXISTS (SELECT 1 FROM agents a WHERE a.id = ? AND a.workspace_id = w.id)`, []any{g.AgentID}
}

// unlessRevokedCond is the condition of one UnlessRevoked executor, Dispatch's.
const unlessRevokedCond = `NOT EXISTS (SELECT 1 FROM executors WHERE public_id = ? AND status = ?)`

// defaultRunnerCond is DefaultRunner's condition: an active Runner of the workspace w.
const defaultRunnerCond = `EXISTS (SELECT 1 FROM executors d WHERE d.public_id = ? AND d.workspace_id = w.id AND d.kind = ? AND d.status = ?)`

// guardRow is the statement's guard row as one SELECT with its arguments: the workspace the
// standing names (its id and public id) when every guard holds, and for each Served row i its
// target (t<i>), effect profile (p<i>) and park budget (o<i>); no row when a guard fails.
func (c *CreateRun) guardRow() (string, []any) {
	var cols, joins strings.Builder
	var args []any
	cols.WriteString(`w.id AS workspace_id, w.public_id AS workspace_public_id`)
	for i, sv := range c.Served {
		fmt.Fprintf(&cols, `, s%d.frozen_target AS t%d, s%d.frozen_profile AS p%d,
  COALESCE(CAST(? AS BIGINT), CASE WHEN s%d.timeout_ms > 0 THEN s%d.timeout_ms END, CAST(? AS BIGINT)) AS o%d`, i, i, i, i, i, i, i)
		args = append(args, c.Tasks[sv.Task].TimeoutMS, sv.DefaultTimeoutMS)
	}
	for i, sv := range c.Served {
		fmt.Fprintf(&joins, `
JOIN executors e%d ON e%d.public_id = ? AND e%d.workspace_id = w.id AND e%d.kind = ? AND e%d.status = ?
JOIN executor_served_tools s%d ON s%d.executor_id = e%d.id AND s%d.name = ? AND s%d.frozen_target IS NOT NULL AND s%d.frozen_profile IS NOT NULL`,
			i, i, i, i, i, i, i, i, i, i, i)
		args = append(args, ID(sv.RunnerPublicID), ExecutorRunner, ExecutorActive, sv.Name)
	}
	ws, wsArg := c.Standing.workspace()
	cond, condArgs := c.Standing.cond()
	conds := []string{ws, cond}
	args = append(append(args, wsArg), condArgs...)
	if c.DefaultRunner != "" {
		conds = append(conds, defaultRunnerCond)
		args = append(args, ID(c.DefaultRunner), ExecutorRunner, ExecutorActive)
	}
	for _, id := range c.UnlessRevoked {
		conds = append(conds, unlessRevokedCond)
		args = append(args, ID(id), ExecutorRevoked)
	}
	return `SELECT ` + cols.String() + `
FROM workspaces w` + joins.String() + `
WHERE ` + strings.Join(conds, " AND "), args
}

// StandingHolds reads whether a standing holds, by the condition CreateRun checks.
func StandingHolds(ctx context.Context, q Querier, g Standing) (bool, error) {
	ws, wsArg := g.workspace()
	cond, args := g.cond()
	var n int
	err := q.Get(ctx, &n, `SELECT COUNT(*) FROM workspaces w WHERE `+ws+` AND `+cond, append([]any{wsArg}, args...)...)
	if errors.Is(err, ErrMalformedID) {
		return false, nil
	}
	return n > 0, err
}

// CreateRun writes c's run and rows when every guard holds, and answers ErrGuardFailed, having
// written nothing, when one does not. On PostgreSQL it is one statement: the guard row, the run's
// INSERT from it, each row's INSERT from the run (a Served row's address from the guard row), the
// notifications from the run, so that nothing is written, and nothing sent, without the guard
// row. SQLite, in process, reads the guard row and then writes the run and its rows in one
// immediate transaction.
func (s *Store) CreateRun(ctx context.Context, c *CreateRun) error {
	if len(c.Tasks) == 0 || len(c.Tasks) > MaxCreateRunTasks {
		return fmt.Errorf("store: CreateRun: %d rows; want 1 to %d", len(c.Tasks), MaxCreateRunTasks)
	}
	for _, sv := range c.Served {
		if sv.Task < 0 || sv.Task >= len(c.Tasks) {
			return fmt.Errorf("store: CreateRun: served row %d of %d", sv.Task, len(c.Tasks))
		}
	}
	var err error
	if s.dialect == Postgres {
		err = s.createRunPostgres(ctx, c)
	} else {
		err = s.createRunSQLite(ctx, c)
	}
	if errors.Is(err, ErrMalformedID) {
		// A malformed id names no row a guard could find: the statement was not sent.
		err = ErrGuardFailed
	}
	switch {
	case errors.Is(err, ErrGuardFailed):
		s.createRuns.guarded.Add(1)
	case err == nil:
		s.createRuns.written.Add(1)
	}
	return err
}

// servedColumns are the columns of a Served row the statement takes from the guard row, by the
// expression the row's INSERT writes for row i.
var servedColumns = map[string]string{
	"target":         "g.t%d",
	"effect_profile": "g.p%d",
	"timeout_ms":     "g.o%d",
}

// createdRow is what the PostgreSQL statement answers per row: its ids, the address columns the
// statement may have read, and the workspace.
type createdRow struct {
	insertedRow
	Target            *string `db:"target"`
	EffectProfile     *string `db:"effect_profile"`
	TimeoutMS         *int64  `db:"timeout_ms"`
	DeadlineAt        *int64  `db:"deadline_at"`
	WorkspaceID       int64   `db:"workspace_id"`
	WorkspacePublicID string  `db:"workspace_public_id"`
}

func (s *Store) createRunPostgres(ctx context.Context, c *CreateRun) error {
	guard, args := c.guardRow()
	served := map[int]int{}
	for i, sv := range c.Served {
		served[sv.Task] = i
	}
	var b strings.Builder
	b.WriteString(`WITH g AS (` + guard + `),
r AS (INSERT INTO runs (` + createRunColumns + `) SELECT ` + createRunValues + ` FROM g RETURNING id)`)
	args = append(args, runValuesButWorkspace(c.Run)...)
	for i := range c.Tasks {
		values, vals := createTaskValues, c.Tasks[i].values()[1:]
		if j, ok := served[i]; ok {
			values, vals = servedTaskValues(&c.Tasks[i], j, vals)
		}
		fmt.Fprintf(&b, `,
t%d AS (INSERT INTO tasks (%s) SELECT r.id, %s FROM r CROSS JOIN g
  RETURNING id, run_id, task_key, target, effect_profile, timeout_ms, deadline_at)`, i, createTaskColumns, values)
		args = append(args, vals...)
	}
	if len(c.Notify) > 0 {
		// The ordinality keeps the payloads in order; reading from r, they go out only with the run.
		b.WriteString(`,
n AS (SELECT pg_notify(u.c, u.p) FROM r CROSS JOIN unnest(?::text[], ?::text[]) WITH ORDINALITY AS u(c, p, o) ORDER BY u.o)`)
		channels, payloads := make([]string, len(c.Notify)), make([]string, len(c.Notify))
		for i, n := range c.Notify {
			channels[i], payloads[i] = n.Channel, n.Payload
		}
		args = append(args, pq.Array(channels), pq.Array(payloads))
	}
	b.WriteString(`
SELECT t.*, g.workspace_id, g.workspace_public_id FROM (`)
	for i := range c.Tasks {
		if i > 0 {
			b.WriteString(` UNION ALL `)
		}
		fmt.Fprintf(&b, `SELECT * FROM t%d`, i)
	}
	b.WriteString(`) t CROSS JOIN g`)
	if len(c.Notify) > 0 {
		b.WriteString(` CROSS JOIN (SELECT count(*) FROM n) AS sent`)
	}
	var rows []createdRow
	if err := (querier{ext: s.writer, d: s.dialect}).Select(ctx, &rows, b.String(), args...); err != nil {
		return fmt.Errorf("store: CreateRun: %w", err)
	}
	if len(rows) == 0 {
		return ErrGuardFailed
	}
	ids := make([]insertedRow, len(rows))
	for i, row := range rows {
		ids[i] = row.insertedRow
	}
	if err := setInsertedIDs("CreateRun", c.Run, c.Tasks, ids); err != nil {
		return err
	}
	c.Run.WorkspaceID, c.Run.WorkspacePublicID = rows[0].WorkspaceID, rows[0].WorkspacePublicID
	byKey := make(map[string]*createdRow, len(rows))
	for i := range rows {
		byKey[rows[i].Key] = &rows[i]
	}
	for _, sv := range c.Served {
		t, row := &c.Tasks[sv.Task], byKey[c.Tasks[sv.Task].Key]
		t.Target, t.EffectProfile, t.TimeoutMS, t.DeadlineAt = row.Target, row.EffectProfile, row.TimeoutMS, row.DeadlineAt
	}
	return nil
}

// servedTaskValues is the VALUES list of Served row t (the j-th) with its arguments vals: the
// address columns from the guard row, the deadline from the budget when it is dispatched.
func servedTaskValues(t *Task, j int, vals []any) (string, []any) {
	exprs := make([]string, 0, len(vals))
	out := make([]any, 0, len(vals))
	for k, col := range taskColumns[2:] {
		if e, ok := servedColumns[col]; ok {
			exprs = append(exprs, fmt.Sprintf(e, j))
			continue
		}
		if col == "deadline_at" {
			if t.DispatchedAt == nil {
				exprs = append(exprs, "NULL")
			} else {
				exprs = append(exprs, fmt.Sprintf("CAST(? AS BIGINT) + g.o%d", j))
				out = append(out, *t.DispatchedAt)
			}
			continue
		}
		exprs = append(exprs, "?")
		out = append(out, vals[k])
	}
	return strings.Join(exprs, ", "), out
}

func (s *Store) createRunSQLite(ctx context.Context, c *CreateRun) error {
	guard, args := c.guardRow()
	return s.Write(ctx, func(tx *Tx) error {
		rows, err := tx.ext.QueryContext(ctx, guard, args...)
		if err != nil {
			return fmt.Errorf("store: CreateRun: %w", err)
		}
		defer rows.Close()
		if !rows.Next() {
			if err := rows.Err(); err != nil {
				return fmt.Errorf("store: CreateRun: %w", err)
			}
			return ErrGuardFailed
		}
		type address struct {
			target, profile string
			budget          int64
		}
		addrs := make([]address, len(c.Served))
		dest := []any{&c.Run.WorkspaceID, &c.Run.WorkspacePublicID}
		for i := range addrs {
			dest = append(dest, &addrs[i].target, &addrs[i].profile, &addrs[i].budget)
		}
		if err := rows.Scan(dest...); err != nil {
			return fmt.Errorf("store: CreateRun: %w", err)
		}
		if err := rows.Close(); err != nil {
			return fmt.Errorf("store: CreateRun: %w", err)
		}
		for i, sv := range c.Served {
			t, a := &c.Tasks[sv.Task], addrs[i]
			t.Target, t.EffectProfile, t.TimeoutMS = &a.target, &a.profile, &a.budget
			if t.DispatchedAt != nil {
				deadline := *t.DispatchedAt + a.budget
				t.DeadlineAt = &deadline
			}
		}
		if err := InsertRun(ctx, tx, c.Run); err != nil {
			return err
		}
		return insertTasksOf(ctx, tx, c.Run.ID, c.Tasks)
	})
}

// runValuesButWorkspace is the run's values in runColumns order without its workspace_id, which
// the statement takes from the guard row.
func runValuesButWorkspace(r *Run) []any {
	v := r.values()
	return append(v[:runWorkspaceColumn:runWorkspaceColumn], v[runWorkspaceColumn+1:]...)
}

// The statement's fixed parts: the run's columns and placeholders, and a row's, but for its run
// id, which the row takes from the run's INSERT.
// The run's workspace_id is the guard row's.
var (
	createRunColumns   = strings.Join(runColumns, ", ")
	runWorkspaceColumn = slices.Index(runColumns, "workspace_id")
	createRunValues    = func() string {
		v := strings.Split(placeholders(len(runColumns)), ", ")
		v[runWorkspaceColumn] = "g.workspace_id"
		return strings.Join(v, ", ")
	}()
	createTaskColumns = strings.Join(taskColumns[1:], ", ")
	createTaskValues  = placeholders(len(taskColumns) - 2)
)
