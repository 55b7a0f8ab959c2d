package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"hash/maphash"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/jmoiron/sqlx/reflectx"
	"github.com/lib/pq"

	"github.com/nexuskernel/nexus/internal/memo"
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
//
// Plans of concurrent callers share statements (sendPlan, planGroup): one plan that finds no
// statement in flight goes out alone at once; the plans sent while one is in flight queue, and
// the next statement carries them together, each as a chain of its own that its own guards gate.

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
// Unsupported and Stale fell back to a transaction; Grouped were sent in a statement that
// carried other plans too (planGroup), whatever their outcome.
type PlanStats struct {
	Written, Unsupported, Stale, Grouped int64
}

type planCounters struct{ written, unsupported, stale atomic.Int64 }

// PlanStats reports the store's planned-write counts.
func (s *Store) PlanStats() PlanStats {
	return PlanStats{Written: s.plans.written.Load(), Unsupported: s.plans.unsupported.Load(), Stale: s.plans.stale.Load(),
		Grouped: s.planGroup.grouped.Load()}
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
		err = s.sendPlan(ctx, tx.plan)
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

// plainReads memoizes plainRead per statement text, bounded as the PostgreSQL forms are
// (maxRebound): the program's own texts, and one per shape of those built per call.
var plainReads = memo.Map[string, bool]{Max: maxRebound}

// plainRead reports whether query only reads and locks nothing: a SELECT without a locking
// clause, an advisory lock, a sequence or a notification.
func plainRead(query string) bool {
	if ok, known := plainReads.Get(query); known {
		return ok
	}
	u := strings.ToUpper(query)
	ok := strings.HasPrefix(strings.TrimSpace(u), "SELECT")
	for _, w := range []string{" FOR UPDATE", " FOR SHARE", " FOR NO KEY UPDATE", " FOR KEY SHARE", "PG_ADVISORY", "NEXTVAL", "SETVAL", "PG_NOTIFY"} {
		if strings.Contains(u, w) {
			ok = false
		}
	}
	plainReads.Put(query, ok)
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

// sendPlan sends a plan that recorded fn's writes. A plan that wrote nothing has nothing to send.
// The others go out through the store's plan group (planGroup): on their own when a statement
// slot is free, else together with the plans that queued meanwhile.
func (s *Store) sendPlan(ctx context.Context, p *plan) error {
	if p.run == nil {
		if len(p.guards) > 0 || len(p.channels) > 0 {
			return p.refuse("guards or notifications without a write")
		}
		return nil
	}
	g := &s.planGroup
	g.mu.Lock()
	if g.sending < planStatementsInFlight {
		g.sending++
		g.mu.Unlock()
		defer g.next(s) // the slot passes on however the statement ends
		return s.writePlans(ctx, []*plan{p})[0]
	}
	q := &queuedPlan{p: p, done: make(chan error, 1)}
	g.queue = append(g.queue, q)
	g.mu.Unlock()
	// A queued plan is written by the statement of its group whatever its caller does meanwhile:
	// the caller waits for the answer, so that it never reports as failed a run that was written.
	return <-q.done
}

// planStatementsInFlight bounds the planned statements a store has in flight at once. A plan
// that finds the slot busy waits for the next statement, which carries the plans queued
// meanwhile: on PostgreSQL a statement's own cost (its round trip, its execution start and its
// commit) is about half of a small insert's, so a statement of several plans costs each much
// less. Measured on 2 cores (B6), one statement in flight serves 4 concurrent creators about 35%
// more creates per second than no grouping, and 16 of them about 60% more; two in flight split
// the groups and gain little at 4. A create alone never waits.
const planStatementsInFlight = 1

// planGroupTimeout bounds a group's statement, which no request's context governs: a statement
// of a few small inserts takes milliseconds, and a database that has not answered in this long
// is better reported to the plans' callers (nothing is written) than waited for while every
// create of the instance queues behind it.
const planGroupTimeout = 30 * time.Second

// maxPlansPerStatement bounds the plans one statement carries: eight plans of maxTasksWithRun
// rows take some 6,000 parameters, a tenth of PostgreSQL's 65,535, and a larger group saves
// little more per plan than it costs to plan the statement.
const maxPlansPerStatement = 8

// planGroup is a store's plans queued for a statement, and how many of its statements are in
// flight.
type planGroup struct {
	mu      sync.Mutex
	queue   []*queuedPlan
	sending int
	// grouped counts the plans that were sent in a statement with others (PlanStats.Grouped).
	grouped atomic.Int64
}

type queuedPlan struct {
	p    *plan
	done chan error
}

// next hands the slot of a statement that finished to the plans queued meanwhile, which a
// goroutine of their own sends as one statement, or gives the slot back.
func (g *planGroup) next(s *Store) {
	g.mu.Lock()
	if len(g.queue) == 0 {
		g.sending--
		g.mu.Unlock()
		return
	}
	// A statement carries a power of two of plans, so that a load meets few statement texts,
	// each prepared and planned once per connection rather than once per group size.
	n := 1
	for n*2 <= min(len(g.queue), maxPlansPerStatement) {
		n *= 2
	}
	batch := slices.Clone(g.queue[:n])
	g.queue = slices.Delete(g.queue, 0, n)
	g.mu.Unlock()
	go func() {
		plans := make([]*plan, len(batch))
		for i, q := range batch {
			plans[i] = q.p
		}
		if len(plans) > 1 {
			g.grouped.Add(int64(len(plans)))
		}
		defer g.next(s)
		// The statement belongs to no one request: it runs to its end whatever its callers do,
		// within planGroupTimeout.
		ctx, cancel := context.WithTimeout(context.Background(), planGroupTimeout)
		defer cancel()
		for i, err := range s.writePlans(ctx, plans) {
			batch[i].done <- err
		}
	}()
}

// writePlans sends plans as one statement and answers each plan's outcome: nil (its run and
// rows were written, with their ids set), ErrPlanStale (a guard of its own failed: its part
// wrote nothing, the others' stand), or the statement's error. One plan's fault (a notification
// PostgreSQL refuses, say) fails the whole statement, so a group that fails is sent again plan
// by plan, for each plan's own answer.
func (s *Store) writePlans(ctx context.Context, plans []*plan) []error {
	errs := make([]error, len(plans))
	var args []any
	for _, p := range plans {
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
	}
	var ids []insertedRow
	if err := sqlx.SelectContext(ctx, s.writer, &ids, planStatement(plans), args...); err != nil {
		if len(plans) > 1 {
			for i, p := range plans {
				errs[i] = s.writePlans(ctx, []*plan{p})[0]
			}
			return errs
		}
		errs[0] = fmt.Errorf("store: planned insert of a run and its tasks: %w", err)
		return errs
	}
	byPlan := make([][]insertedRow, len(plans))
	for _, id := range ids {
		if id.Plan < 0 || id.Plan >= len(plans) {
			return failAll(errs, fmt.Errorf("store: planned insert answered plan %d of %d", id.Plan, len(plans)))
		}
		byPlan[id.Plan] = append(byPlan[id.Plan], id)
	}
	for i, p := range plans {
		if len(byPlan[i]) == 0 {
			errs[i] = ErrPlanStale
			continue
		}
		errs[i] = setInsertedIDs("planned insert of a run and its tasks", p.run, p.tasks, byPlan[i])
	}
	return errs
}

func failAll(errs []error, err error) []error {
	for i := range errs {
		errs[i] = err
	}
	return errs
}

// planStatement is the statement of plans, in PostgreSQL's form. Its text depends only on the
// plans' shapes (their guards' conditions, numbers of rows, and whether they notify), and is
// built once per sequence of shapes.
func planStatement(plans []*plan) string {
	h := maphash.Hash{}
	h.SetSeed(planSeed)
	for _, p := range plans {
		for _, g := range p.guards {
			_, _ = h.WriteString(g.cond)
			_ = h.WriteByte(0)
		}
		_ = h.WriteByte(1)
		_, _ = h.WriteString(strconv.Itoa(len(p.tasks)))
		if len(p.channels) > 0 {
			_ = h.WriteByte(2)
		}
		_ = h.WriteByte(3)
	}
	key := h.Sum64()
	t, ok := planTexts.Get(key)
	if ok && t.fits(plans) {
		return t.text
	}
	t = planText{text: sqlx.Rebind(sqlx.DOLLAR, buildPlans(plans))}
	for _, p := range plans {
		t.shapes = append(t.shapes, shapeOf(p))
	}
	planTexts.Put(key, t)
	return t.text
}

// buildPlans writes the statement of plans with ? placeholders. Plan k is a chain of its own:
// gk holds a row when every guard of the plan holds, rk inserts the run from it, tk_i insert the
// rows taking the run's id, nk sends the notifications once the run was inserted; the answer is
// each written row's plan, run id, id and key. A plan whose guard fails writes nothing and is
// absent from the answer; the chains of the others do not depend on it.
func buildPlans(plans []*plan) string {
	var b strings.Builder
	b.WriteString(`WITH `)
	for k, p := range plans {
		if k > 0 {
			b.WriteString(`,
`)
		}
		fmt.Fprintf(&b, `g%d AS (SELECT 1 AS ok`, k)
		for i, g := range p.guards {
			if i == 0 {
				b.WriteString(` WHERE `)
			} else {
				b.WriteString(` AND `)
			}
			b.WriteString(`(` + g.cond + `)`)
		}
		fmt.Fprintf(&b, `),
r%d AS (INSERT INTO runs (%s) SELECT %s FROM g%d RETURNING id)`, k, planRunColumns, planRunValues, k)
		for i := range p.tasks {
			fmt.Fprintf(&b, `,
t%d_%d AS (INSERT INTO tasks (%s) SELECT r%d.id, %s FROM r%d RETURNING id, task_key)`, k, i, planTaskColumns, k, planTaskValues, k)
		}
		if len(p.channels) > 0 {
			// As NotifyLater's statement: the ordinality orders the payloads. Reading from rk,
			// the notifications go out only with the plan's rows.
			fmt.Fprintf(&b, `,
n%d AS (SELECT pg_notify(u.c, u.p) FROM r%d CROSS JOIN unnest(?::text[], ?::text[]) WITH ORDINALITY AS u(c, p, o) ORDER BY u.o)`, k, k)
		}
	}
	for k, p := range plans {
		if k > 0 {
			b.WriteString(`
UNION ALL`)
		}
		fmt.Fprintf(&b, `
SELECT %d AS plan, r%d.id AS run_id, t.id, t.task_key FROM r%d CROSS JOIN (`, k, k, k)
		for i := range p.tasks {
			if i > 0 {
				b.WriteString(` UNION ALL `)
			}
			fmt.Fprintf(&b, `SELECT id, task_key FROM t%d_%d`, k, i)
		}
		b.WriteString(`) t`)
		if len(p.channels) > 0 {
			fmt.Fprintf(&b, ` CROSS JOIN (SELECT count(*) FROM n%d) AS sent%d`, k, k)
		}
	}
	return b.String()
}

// planShape is what a plan's part of a statement depends on.
type planShape struct {
	conds  []string
	tasks  int
	notify bool
}

func shapeOf(p *plan) planShape {
	sh := planShape{tasks: len(p.tasks), notify: len(p.channels) > 0}
	for _, g := range p.guards {
		sh.conds = append(sh.conds, g.cond)
	}
	return sh
}

// planText is a statement with the shapes it was built for: a hash collision costs a rebuild,
// never another statement.
type planText struct {
	shapes []planShape
	text   string
}

func (t planText) fits(plans []*plan) bool {
	if len(t.shapes) != len(plans) {
		return false
	}
	for i, p := range plans {
		sh := t.shapes[i]
		if sh.tasks != len(p.tasks) || sh.notify != (len(p.channels) > 0) || len(sh.conds) != len(p.guards) {
			return false
		}
		for j, g := range p.guards {
			if sh.conds[j] != g.cond {
				return false
			}
		}
	}
	return true
}

// maxPlanTexts bounds the statements remembered by shape: the sequences of plan shapes a server
// meets number far fewer than this; a full memory is emptied.
const maxPlanTexts = 1024

var (
	planSeed  = maphash.MakeSeed()
	planTexts = memo.Map[uint64, planText]{Max: maxPlanTexts}
)

// The plan statement's fixed parts: the run's columns and placeholders, and a row's, but for its
// run id, which the row takes from its plan's run.
var (
	planRunColumns  = strings.Join(runColumns, ", ")
	planRunValues   = placeholders(len(runColumns))
	planTaskColumns = strings.Join(taskColumns[1:], ", ")
	planTaskValues  = placeholders(len(taskColumns) - 2)
)
