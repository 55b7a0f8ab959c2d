package store

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"

	"github.com/lib/pq"
)

// CreateRun is the statement that writes a new run and its first rows in one round trip on
// PostgreSQL, when every guard it carries still holds
// (docs/development.md#how-a-door-reaches-the-store). Its guards are conditions of the statement itself, so nothing it writes stands on a fact read
// earlier: the caller's standing in the workspace, and the executors its rows are parked for.
type CreateRun struct {
	// Run is the run to write; its ID is set once written.
	Run *Run
	// Tasks are the run's rows, as they are written (their first readiness applied); each one's
	// ID and RunID are set once written. At most MaxCreateRunTasks.
	Tasks []Task
	// Standing is the caller's membership the run is created on.
	Standing Standing
	// UnlessRevoked are the executors (public ids) rows are parked for: the run is written only
	// while none of them is revoked, as a dispatch parks a row in a transaction (TaskGuard).
	UnlessRevoked []string
	// Notify are notifications sent when the statement commits (PostgreSQL; nothing on SQLite).
	Notify []Notification
}

// Standing is a caller's membership of a workspace as a write checks it: a user's membership
// row with this role, or an agent's row in the workspace.
type Standing struct {
	WorkspaceID int64
	// UserID is the user's row id; 0 for an agent.
	UserID int64
	// Role is the user's role (owner or member); unused for an agent.
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

// standingCond is Standing's condition with its arguments: the same condition StandingHolds reads.
func (g Standing) cond() (string, []any) {
	if g.UserID != 0 {
		return `EXISTS (SELECT 1 FROM workspace_members m WHERE m.workspace_id = ? AND m.user_id = ? AND m.role = ?)`,
			[]any{g.WorkspaceID, g.UserID, g.Role}
	}
	return `EXISTS (SELECT 1 FROM agents a WHERE a.id = ? AND a.workspace_id = ?)`, []any{g.AgentID, g.WorkspaceID}
}

// unlessRevokedCond is the condition of one UnlessRevoked executor, TaskGuard's.
const unlessRevokedCond = `NOT EXISTS (SELECT 1 FROM executors WHERE public_id = ? AND status = ?)`

// guards is the statement's guards as one condition with its arguments.
func (c *CreateRun) guards() (string, []any) {
	cond, args := c.Standing.cond()
	conds := []string{cond}
	for _, id := range c.UnlessRevoked {
		conds = append(conds, unlessRevokedCond)
		args = append(args, id, ExecutorRevoked)
	}
	return strings.Join(conds, " AND "), args
}

// StandingHolds reads whether a standing holds, by the condition CreateRun checks.
func StandingHolds(ctx context.Context, q Querier, g Standing) (bool, error) {
	cond, args := g.cond()
	var ok bool
	err := q.Get(ctx, &ok, `SELECT `+cond, args...)
	return ok, err
}

// CreateRun writes c's run and rows when every guard holds, and answers ErrGuardFailed, having
// written nothing, when one does not. On PostgreSQL it is one statement: a guard row, the run's
// INSERT from it, each row's INSERT from the run, the notifications from the run, so that nothing
// is written, and nothing sent, without the guard row. SQLite, in process, runs the run's INSERT
// from the guard row and then the rows in one immediate transaction.
func (s *Store) CreateRun(ctx context.Context, c *CreateRun) error {
	if len(c.Tasks) == 0 || len(c.Tasks) > MaxCreateRunTasks {
		return fmt.Errorf("store: CreateRun: %d rows; want 1 to %d", len(c.Tasks), MaxCreateRunTasks)
	}
	var err error
	if s.dialect == Postgres {
		err = s.createRunPostgres(ctx, c)
	} else {
		err = s.createRunSQLite(ctx, c)
	}
	switch {
	case errors.Is(err, ErrGuardFailed):
		s.createRuns.guarded.Add(1)
	case err == nil:
		s.createRuns.written.Add(1)
	}
	return err
}

func (s *Store) createRunPostgres(ctx context.Context, c *CreateRun) error {
	cond, args := c.guards()
	var b strings.Builder
	b.WriteString(`WITH g AS (SELECT 1 AS ok WHERE ` + cond + `),
r AS (INSERT INTO runs (` + createRunColumns + `) SELECT ` + createRunValues + ` FROM g RETURNING id)`)
	args = append(args, c.Run.values()...)
	for i := range c.Tasks {
		fmt.Fprintf(&b, `,
t%d AS (INSERT INTO tasks (%s) SELECT r.id, %s FROM r RETURNING id, run_id, task_key)`, i, createTaskColumns, createTaskValues)
		args = append(args, c.Tasks[i].values()[1:]...)
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
SELECT t.id, t.run_id, t.task_key FROM (`)
	for i := range c.Tasks {
		if i > 0 {
			b.WriteString(` UNION ALL `)
		}
		fmt.Fprintf(&b, `SELECT id, run_id, task_key FROM t%d`, i)
	}
	b.WriteString(`) t`)
	if len(c.Notify) > 0 {
		b.WriteString(` CROSS JOIN (SELECT count(*) FROM n) AS sent`)
	}
	var ids []insertedRow
	if err := (querier{ext: s.writer, d: s.dialect}).Select(ctx, &ids, b.String(), args...); err != nil {
		return fmt.Errorf("store: CreateRun: %w", err)
	}
	if len(ids) == 0 {
		return ErrGuardFailed
	}
	return setInsertedIDs("CreateRun", c.Run, c.Tasks, ids)
}

func (s *Store) createRunSQLite(ctx context.Context, c *CreateRun) error {
	cond, args := c.guards()
	return s.Write(ctx, func(tx *Tx) error {
		var ids []int64
		q := `INSERT INTO runs (` + createRunColumns + `) SELECT ` + createRunValues + ` WHERE ` + cond + ` RETURNING id`
		if err := tx.Select(ctx, &ids, q, append(c.Run.values(), args...)...); err != nil {
			return fmt.Errorf("store: CreateRun: %w", err)
		}
		if len(ids) == 0 {
			return ErrGuardFailed
		}
		c.Run.ID = ids[0]
		return insertTasksOf(ctx, tx, c.Run.ID, c.Tasks)
	})
}

// The statement's fixed parts: the run's columns and placeholders, and a row's, but for its run
// id, which the row takes from the run's INSERT.
var (
	createRunColumns  = strings.Join(runColumns, ", ")
	createRunValues   = placeholders(len(runColumns))
	createTaskColumns = strings.Join(taskColumns[1:], ", ")
	createTaskValues  = placeholders(len(taskColumns) - 2)
)
