package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"hash/maphash"
	"reflect"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/jmoiron/sqlx"
	"github.com/jmoiron/sqlx/reflectx"
	"github.com/lib/pq"
)

// A planned write (Store.Plan) is a write transaction sent as one statement. On PostgreSQL a
// transaction costs a round trip for BEGIN, one per statement and one for COMMIT; a new run of a
// few rows, dispatched at once, is an insert the server can take in one autocommit statement
// whose implicit commit is the transaction's.
//
// The plan runs the same code a transaction would, against a Tx that:
//   - sends plain reads (SELECT without a locking clause) on their own, before anything is
//     written. At READ COMMITTED, the level every PostgreSQL write transaction here runs at, such
//     a read sees what it would see as the transaction's first statements: each statement of such
//     a transaction takes a new snapshot and a plain read locks nothing;
//   - records a new run and its rows (InsertRunWithTasks) instead of writing them, with
//     provisional negative ids;
//   - applies SetTask to a recorded row in memory;
//   - collects Notify's notifications, which the statement sends;
//   - collects guards: facts the plan took from a cache (or a guarded update would have checked)
//     that the statement checks when it writes.
//
// Anything else (any other write, a locking read, a read after the insert, which could name a
// provisional id) makes the plan answer ErrPlanUnsupported before it writes anything, and the
// caller runs the same code as a transaction. The statement writes the run and its rows only
// when every guard holds; when one does not, it writes nothing and the plan answers
// ErrPlanStale, and the caller runs the transaction, which reads what changed afresh.

// ErrPlanUnsupported reports that a planned write did something a plan cannot hold; nothing was
// written.
var ErrPlanUnsupported = errors.New("store: the write cannot be planned")

// ErrPlanStale reports that a fact a planned write relied on changed before its statement ran;
// nothing was written.
var ErrPlanStale = errors.New("store: a planned write's guard no longer holds")

// plan is a planned write's record.
type plan struct {
	run    *Run
	tasks  []Task // the caller's rows, written in place
	guards []planGuard
	// refused is the first ErrPlanUnsupported the plan answered. It decides the plan's outcome
	// whatever fn made of the error (a caller that turns a failed read into a refusal of its
	// own still gets its transaction).
	refused error
	// channels and payloads are the plan's notifications (Notify), in order, sent by its
	// statement and so delivered when it commits.
	channels, payloads []string
}

// planGuard is one condition the plan's statement checks before it writes, with its arguments.
type planGuard struct {
	cond string
	args []any
}

// PlanStats counts planned writes since the store opened: Written were sent as one statement;
// Unsupported and Stale fell back to a transaction.
type PlanStats struct {
	Written, Unsupported, Stale int64
}

type planCounters struct{ written, unsupported, stale atomic.Int64 }

// PlanStats reports the store's planned-write counts.
func (s *Store) PlanStats() PlanStats {
	return PlanStats{Written: s.plans.written.Load(), Unsupported: s.plans.unsupported.Load(), Stale: s.plans.stale.Load()}
}

// Plan runs fn as a planned write (see the comment at the top of this file) and sends what it
// recorded as one statement. It answers ErrPlanUnsupported (SQLite, whose statements run in
// process, never plans) or ErrPlanStale when the caller must run fn as a transaction instead,
// and fn's own error otherwise. fn must leave the caller's state as a fresh attempt would find
// it, as Write's callers already do for a retry.
func (s *Store) Plan(ctx context.Context, fn func(tx *Tx) error) error {
	if s.dialect != Postgres {
		return ErrPlanUnsupported
	}
	tx := &Tx{querier: querier{ext: s.writer, d: s.dialect}, st: s, plan: &plan{}}
	err := fn(tx)
	switch {
	case tx.plan.refused != nil:
		err = tx.plan.refused
	case err == nil:
		err = tx.plan.write(ctx, tx)
	}
	switch {
	case errors.Is(err, ErrPlanUnsupported):
		s.plans.unsupported.Add(1)
	case errors.Is(err, ErrPlanStale):
		s.plans.stale.Add(1)
	case err == nil:
		s.plans.written.Add(1)
	}
	return err
}

// Planning reports whether tx is a planned write.
func (tx *Tx) Planning() bool { return tx != nil && tx.plan != nil }

// Require adds a guard to a planned write: cond, a boolean SQL expression with ? placeholders
// for args, must hold when the statement writes. On a transaction it does nothing: the
// transaction read the fact itself.
func (tx *Tx) Require(cond string, args ...any) {
	if tx.Planning() {
		tx.plan.guards = append(tx.plan.guards, planGuard{cond: cond, args: args})
	}
}

// Get reads one row; in a planned write, only a plain read before the insert.
func (tx *Tx) Get(ctx context.Context, dest any, query string, args ...any) error {
	if err := tx.plan.read(query); err != nil {
		return err
	}
	return tx.querier.Get(ctx, dest, query, args...)
}

// Select reads rows; in a planned write, only a plain read before the insert.
func (tx *Tx) Select(ctx context.Context, dest any, query string, args ...any) error {
	if err := tx.plan.read(query); err != nil {
		return err
	}
	return tx.querier.Select(ctx, dest, query, args...)
}

// Exec runs a statement; a planned write holds none.
func (tx *Tx) Exec(ctx context.Context, query string, args ...any) (sql.Result, error) {
	if tx.Planning() {
		return nil, tx.plan.refuse("%.40q", query)
	}
	return tx.querier.Exec(ctx, query, args...)
}

// read checks that a planned write may send query now. A nil plan (a transaction) may send
// anything.
func (p *plan) read(query string) error {
	if p == nil {
		return nil
	}
	if p.run != nil || !plainRead(query) {
		return p.refuse("%.40q", query)
	}
	return nil
}

// plainReads memoizes plainRead per statement text (a bounded set: the program's own texts).
var plainReads sync.Map

// plainRead reports whether query only reads and locks nothing: a SELECT without a locking
// clause, an advisory lock, a sequence or a notification.
func plainRead(query string) bool {
	if v, ok := plainReads.Load(query); ok {
		return v.(bool)
	}
	u := strings.ToUpper(query)
	ok := strings.HasPrefix(strings.TrimSpace(u), "SELECT")
	for _, w := range []string{" FOR UPDATE", " FOR SHARE", " FOR NO KEY UPDATE", " FOR KEY SHARE", "PG_ADVISORY", "NEXTVAL", "SETVAL", "PG_NOTIFY"} {
		if strings.Contains(u, w) {
			ok = false
		}
	}
	plainReads.Store(query, ok)
	return ok
}

// refuse records and answers ErrPlanUnsupported, with what the plan could not hold.
func (p *plan) refuse(format string, args ...any) error {
	err := fmt.Errorf("%w: "+format, append([]any{ErrPlanUnsupported}, args...)...)
	if p.refused == nil {
		p.refused = err
	}
	return err
}

// insert records a new run and its rows, giving them provisional ids: -1 for the run, -2 and
// down for the rows in order.
func (p *plan) insert(r *Run, tasks []Task) error {
	if p.run != nil || len(tasks) == 0 || len(tasks) > maxTasksWithRun {
		return p.refuse("a run of %d rows", len(tasks))
	}
	p.run, p.tasks = r, tasks
	r.ID = -1
	for i := range tasks {
		tasks[i].ID, tasks[i].RunID = -int64(i)-2, -1
	}
	return nil
}

// setTask applies SetTask to a recorded row in memory. The guard's status and claim conditions
// are the row's own, known here; its revocation condition joins the plan's guards.
func (p *plan) setTask(id int64, guard *TaskGuard, set []Assign) (bool, error) {
	i := -id - 2 // insert's numbering
	if i < 0 || i >= int64(len(p.tasks)) {
		return false, p.refuse("an update of task %d, not written by the plan", id)
	}
	t := &p.tasks[i]
	if guard != nil {
		if len(guard.Statuses) > 0 && !slices.Contains(guard.Statuses, t.Status) {
			return false, nil
		}
		if guard.Generation != nil {
			return false, p.refuse("a claim guard on a new row")
		}
		if guard.UnlessRevoked != "" {
			p.guards = append(p.guards, planGuard{cond: `NOT EXISTS (SELECT 1 FROM executors WHERE public_id = ? AND status = ?)`,
				args: []any{guard.UnlessRevoked, ExecutorRevoked}})
		}
	}
	for _, a := range set {
		if err := p.assign(t, a); err != nil {
			return false, err
		}
	}
	return true, nil
}

var taskFields = reflectx.NewMapper("db").TypeMap(reflect.TypeOf(Task{}))

// assign sets the field of t that column a.Col scans into to a.Val, as the row would read back
// after an UPDATE: nil clears a pointer; a value sets a field of its type, or a fresh pointer to
// a copy for a pointer field.
func (p *plan) assign(t *Task, a Assign) error {
	fi := taskFields.GetByPath(a.Col)
	if fi == nil || !taskColumnSet[a.Col] || a.Col == "id" {
		return fmt.Errorf("store: SetTask: unknown column %q", a.Col)
	}
	f := reflectx.FieldByIndexes(reflect.ValueOf(t).Elem(), fi.Index)
	if _, ok := a.Val.(NextSettleSeqOf); ok {
		return p.refuse("a settle sequence on a new row")
	}
	v := reflect.ValueOf(a.Val)
	switch {
	case a.Val == nil || (v.Kind() == reflect.Pointer && v.IsNil()):
		if f.Kind() != reflect.Pointer {
			return fmt.Errorf("store: SetTask: null for column %q", a.Col)
		}
		f.SetZero()
		return nil
	case v.Kind() == reflect.Pointer:
		v = v.Elem()
	}
	if f.Kind() == reflect.Pointer {
		if v.Type() != f.Type().Elem() {
			return p.refuse("a %s for column %q", v.Type(), a.Col)
		}
		p := reflect.New(v.Type())
		p.Elem().Set(v)
		f.Set(p)
		return nil
	}
	if v.Type() != f.Type() {
		return p.refuse("a %s for column %q", v.Type(), a.Col)
	}
	f.Set(v)
	return nil
}

// write sends the plan's statement: the guards, then the run, then each row, in one statement
// whose rows the guards gate; it sets the run's and the rows' ids. A plan that recorded no
// insert wrote nothing and sends nothing.
func (p *plan) write(ctx context.Context, tx *Tx) error {
	if p.run == nil {
		if len(p.guards) > 0 || len(p.channels) > 0 {
			return p.refuse("guards or notifications without a write")
		}
		return nil
	}
	var args []any
	for _, g := range p.guards {
		args = append(args, g.args...)
	}
	args = append(args, p.run.values()...)
	for i := range p.tasks {
		args = append(args, p.tasks[i].values()[1:]...)
	}
	if len(p.channels) > 0 {
		args = append(args, pq.Array(p.channels), pq.Array(p.payloads))
	}
	var ids []insertedRow
	if err := sqlx.SelectContext(ctx, tx.querier.ext, &ids, p.statement(), args...); err != nil {
		return fmt.Errorf("store: planned insert of a run and its tasks: %w", err)
	}
	if len(ids) == 0 {
		return ErrPlanStale
	}
	return setInsertedIDs("planned insert of a run and its tasks", p.run, p.tasks, ids)
}

// statement is the plan's statement, in PostgreSQL's form: its text depends only on the plan's
// shape (planShape), and is built once per shape.
func (p *plan) statement() string {
	h := maphash.Hash{}
	h.SetSeed(planSeed)
	for _, g := range p.guards {
		_, _ = h.WriteString(g.cond)
		_ = h.WriteByte(0)
	}
	shape := planShape{guards: h.Sum64(), tasks: len(p.tasks), notify: len(p.channels) > 0}
	planTexts.mu.RLock()
	t, ok := planTexts.m[shape]
	planTexts.mu.RUnlock()
	if ok && t.sameGuards(p.guards) {
		return t.text
	}
	t = planText{text: sqlx.Rebind(sqlx.DOLLAR, p.build())}
	for _, g := range p.guards {
		t.conds = append(t.conds, g.cond)
	}
	planTexts.mu.Lock()
	if planTexts.m == nil || len(planTexts.m) >= maxPlanTexts {
		planTexts.m = make(map[planShape]planText)
	}
	planTexts.m[shape] = t
	planTexts.mu.Unlock()
	return t.text
}

// build writes the plan's statement with ? placeholders: the guards, the run's INSERT gated by
// them, one INSERT per row taking the run's id, the notifications, and the ids it answers.
func (p *plan) build() string {
	var b strings.Builder
	b.WriteString(`WITH g AS (SELECT 1 AS ok`)
	for i, g := range p.guards {
		if i == 0 {
			b.WriteString(` WHERE `)
		} else {
			b.WriteString(` AND `)
		}
		b.WriteString(`(` + g.cond + `)`)
	}
	b.WriteString(planRunSQL)
	for i := range p.tasks {
		fmt.Fprintf(&b, planTaskSQL, i)
	}
	if len(p.channels) > 0 {
		// As NotifyLater's statement: the ordinality orders the payloads. Reading from r, the
		// notifications go out only with the rows.
		b.WriteString(`,
n AS (SELECT pg_notify(u.c, u.p) FROM r CROSS JOIN unnest(?::text[], ?::text[]) WITH ORDINALITY AS u(c, p, o) ORDER BY u.o)`)
	}
	b.WriteString(`
SELECT r.id AS run_id, t.id, t.task_key FROM r CROSS JOIN (`)
	for i := range p.tasks {
		if i > 0 {
			b.WriteString(` UNION ALL `)
		}
		fmt.Fprintf(&b, `SELECT id, task_key FROM t%d`, i)
	}
	b.WriteString(`) t`)
	if len(p.channels) > 0 {
		b.WriteString(` CROSS JOIN (SELECT count(*) FROM n) AS sent`)
	}
	return b.String()
}

// planShape is what a plan's statement text depends on: its guards' conditions (hashed, in
// order), its number of rows, and whether it notifies.
type planShape struct {
	guards uint64
	tasks  int
	notify bool
}

// planText is a shape's statement, with the conditions it was built from: a hash collision
// costs a rebuild, never another statement.
type planText struct {
	conds []string
	text  string
}

func (t planText) sameGuards(gs []planGuard) bool {
	if len(t.conds) != len(gs) {
		return false
	}
	for i, g := range gs {
		if t.conds[i] != g.cond {
			return false
		}
	}
	return true
}

// maxPlanTexts bounds the statements remembered by shape: a plan holds at most maxTasksWithRun rows
// and a guard per Runner tool it addresses, and the shapes a server meets number far fewer than
// this; a full memory is emptied.
const maxPlanTexts = 1024

var (
	planSeed  = maphash.MakeSeed()
	planTexts struct {
		mu sync.RWMutex
		m  map[planShape]planText
	}
)

// The plan statement's fixed parts: the run's INSERT gated by g, and one row's INSERT (with its
// CTE's number to fill in) taking the run's id.
var (
	planRunSQL = `),
r AS (INSERT INTO runs (` + strings.Join(runColumns, ", ") + `) SELECT ` + placeholders(len(runColumns)) + ` FROM g RETURNING id)`
	planTaskSQL = `,
t%d AS (INSERT INTO tasks (` + strings.Join(taskColumns[1:], ", ") + `) SELECT r.id, ` + placeholders(len(taskColumns)-2) + ` FROM r RETURNING id, task_key)`
)
