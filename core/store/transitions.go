package store

import (
	"context"
	"errors"
	"fmt"
	"strings"
)

// A task row changes state only through the named statements of this file
// (docs/development.md#how-the-kernel-runs-work): each is a Go struct whose fields are what it
// writes and the guards it checks, and each is one statement, one round trip, whatever its fields
// hold. A statement has one text per shape of its guards, so that connections keep it prepared.
// A guard that no longer holds writes nothing and answers false: the caller decides what that
// means (a claim lost to a stop or the sweeper, a row that moved under a lock it holds).
//
// The statuses a statement writes are its caller's (the engine's vocabulary); the store checks
// and writes them as given.

// Fence is the claim a write is fenced by: the row changes only while it is still under this
// claim generation and token hash (docs/development.md#how-the-kernel-runs-work).
type Fence struct {
	Generation int64
	TokenHash  []byte
}

// Failure is the error a row settles with: error_key, and error_detail ("" is none).
type Failure struct {
	Key, Detail string
}

// guard is a statement's compare-and-set: the row's status, its claim (or only a claim's
// generation), and the executor it is parked for, each optional.
type guard struct {
	from  string
	claim *Fence
	// claimed, when not nil, is the generation of a claim the row must still be held by, whoever
	// holds its token.
	claimed       *int64
	unlessRevoked string
}

// where writes the statement's WHERE clause for row id with the guard's conditions, and their
// arguments.
func (g guard) where(b *strings.Builder, args []any, id int64) []any {
	b.WriteString(` WHERE id = ?`)
	args = append(args, id)
	if g.from != "" {
		b.WriteString(` AND status = ?`)
		args = append(args, g.from)
	}
	if g.claim != nil {
		b.WriteString(` AND claim_generation = ? AND claim_token_hash = ?`)
		args = append(args, g.claim.Generation, g.claim.TokenHash)
	}
	if g.claimed != nil {
		b.WriteString(` AND claim_generation = ? AND claimed_at IS NOT NULL`)
		args = append(args, *g.claimed)
	}
	if g.unlessRevoked != "" {
		b.WriteString(` AND ` + unlessRevokedCond)
		args = append(args, g.unlessRevoked, ExecutorRevoked)
	}
	return args
}

// nextSettleSeqOfRow is the settlement number of the row an UPDATE of tasks settles: one more
// than the largest of its run's, computed in the UPDATE under the run's lock, so that unpaired
// results are delivered in settlement order (docs/development.md#how-the-kernel-runs-work) without
// a read before.
const nextSettleSeqOfRow = `(SELECT COALESCE(MAX(s.settle_seq), 0) + 1 FROM tasks s WHERE s.run_id = tasks.run_id)`

// exec runs an UPDATE of one row and reports whether it took the row.
func exec(ctx context.Context, q Querier, what string, id int64, query string, args []any) (bool, error) {
	res, err := q.Exec(ctx, query, args...)
	if err != nil {
		return false, fmt.Errorf("store: %s task %d: %w", what, id, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return false, fmt.Errorf("store: %s task %d: %w", what, id, err)
	}
	return n == 1, nil
}

// execInto runs an UPDATE of one row that answers the row's trace into into, or only its id when
// into is nil, and reports whether it took the row.
func execInto(ctx context.Context, q Querier, what string, id int64, b *strings.Builder, args []any, into *TaskTrace) (bool, error) {
	var err error
	if into == nil {
		var got int64
		b.WriteString(` RETURNING id`)
		err = q.Get(ctx, &got, b.String(), args...)
	} else {
		b.WriteString(` RETURNING ` + traceColumnList)
		err = q.Get(ctx, into, b.String(), args...)
	}
	if err = notFound(err); errors.Is(err, ErrNotFound) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("store: %s task %d: %w", what, id, err)
	}
	return true, nil
}

// Dispatch parks a row that readiness or an approval let through: running in the kernel's queue
// (a model round, a kernel tool row) or dispatched for its executor, its park clock started
// (dispatched_at, and deadline_at, none for a round, which the claim's clock bounds). It writes
// the gate's part of the transition with it: ready_at and the approval record, when given.
type Dispatch struct {
	ID     int64
	Status string
	At     int64
	// Deadline is the park's end; nil for none.
	Deadline *int64
	// ReadyAt and Approval, when not nil, are written with the park (readiness's ready_at, the
	// gate's record); nil keeps the row's.
	ReadyAt  *int64
	Approval *Approval
	// UnlessRevoked, when not "", is the executor the row is parked for: the row parks only while
	// that executor is not revoked, a condition of this statement rather than of a read before it.
	UnlessRevoked string
}

// Exec writes the park; false when the row's executor was revoked.
func (d Dispatch) Exec(ctx context.Context, q Querier) (bool, error) {
	var b strings.Builder
	b.WriteString(`UPDATE tasks SET ready_at = COALESCE(?, ready_at), approval = COALESCE(?, approval), status = ?, dispatched_at = ?, deadline_at = ?`)
	args := guard{unlessRevoked: d.UnlessRevoked}.where(&b, []any{d.ReadyAt, d.Approval, d.Status, d.At, d.Deadline}, d.ID)
	return exec(ctx, q, "dispatch", d.ID, b.String(), args)
}

// Hold holds a row at the approval gate (needs_approval) until a decision or its deadline.
type Hold struct {
	ID       int64
	Status   string
	ReadyAt  int64
	Deadline int64
}

// Exec writes the hold.
func (h Hold) Exec(ctx context.Context, q Querier) error {
	_, err := exec(ctx, q, "hold", h.ID, `UPDATE tasks SET ready_at = ?, status = ?, deadline_at = ? WHERE id = ?`,
		[]any{h.ReadyAt, h.Status, h.Deadline, h.ID})
	return err
}

// Fail settles a row that ends without a result of its own: skipped behind a failed
// predecessor, canceled, timed out or uncertain by the expiry rule, denied at the gate, failed
// because its executor was revoked or its round's provider failed. Its output is empty; the
// settlement number is computed in the statement.
type Fail struct {
	ID     int64
	Status string
	Error  Failure
	At     int64
	// From and Claim guard the settle: the row's status and its claim; "" and nil for none (a
	// settle under the run's lock of a row the caller just read).
	From  string
	Claim *Fence
	// ReadyAt, Approval and Resolution, when not nil, are written with the settle (the gate's
	// ready_at and record when it denies, failure_resolution when a cancel resolves the
	// failure); nil keeps the row's.
	ReadyAt    *int64
	Approval   *Approval
	Resolution *string
}

// Exec writes the settle and, when into is not nil, reads the row's trace as it left it into
// into; false when a guard no longer holds.
func (f Fail) Exec(ctx context.Context, q Querier, into *TaskTrace) (bool, error) {
	var b strings.Builder
	b.WriteString(`UPDATE tasks SET ready_at = COALESCE(?, ready_at), approval = COALESCE(?, approval),
  failure_resolution = COALESCE(?, failure_resolution), status = ?, error_key = ?, error_detail = ?, output = '',
  completed_at = ?, settle_seq = ` + nextSettleSeqOfRow)
	args := guard{from: f.From, claim: f.Claim}.where(&b, []any{f.ReadyAt, f.Approval, f.Resolution, f.Status,
		f.Error.Key, nullIfEmpty(f.Error.Detail), f.At}, f.ID)
	return execInto(ctx, q, "fail", f.ID, &b, args, into)
}

// Result is a row's result as it settles with one: the text projection, the content blocks
// (core/envelope's, stored as given), the structured value, the title and metadata.
type Result struct {
	// IsError is nil for none.
	IsError *bool
	Output  string
	// Content, StructuredContent and Metadata are stored JSON, nil for none.
	Content           *string
	StructuredContent *string
	Metadata          *string
	// Title nil keeps the title the row took while it waited (a kernel call's).
	Title *string
}

// Settle settles a row with its result: an executor's commit, a kernel tool's outcome, a
// member's answer to an ask, the work a waiting call observed, a reply a delegation row carries.
// The row stops awaiting a child; the settlement number is computed in the statement.
type Settle struct {
	ID     int64
	Status string
	Result Result
	// Error is the failure a failed row carries with its result; nil for none.
	Error *Failure
	// ResolvedBy is who resolved an await; nil for none.
	ResolvedBy *Member
	// DeliveredWith, when not "", marks the result delivered with the settle (a reply that an
	// await took first): delivered_with and result_delivered_at At.
	DeliveredWith string
	At            int64
	// From and Claim guard the settle: the status the row must still have (every settle names
	// it) and, for a claimed row, its claim.
	From  string
	Claim *Fence
}

// update writes the settle's statement into b and answers its arguments.
func (s Settle) update(b *strings.Builder) []any {
	var key, detail *string
	if s.Error != nil {
		key, detail = &s.Error.Key, nullIfEmpty(s.Error.Detail)
	}
	var with, deliveredAt any
	if s.DeliveredWith != "" {
		with, deliveredAt = s.DeliveredWith, s.At
	}
	b.WriteString(`UPDATE tasks SET status = ?, is_error = ?, output = ?, content = ?, structured_content = ?,
  title = COALESCE(?, title), metadata = ?, error_key = ?, error_detail = ?, resolved_by = ?,
  delivered_with = COALESCE(?, delivered_with), result_delivered_at = COALESCE(?, result_delivered_at),
  awaiting_child = NULL, completed_at = ?, settle_seq = ` + nextSettleSeqOfRow)
	r := s.Result
	args := []any{s.Status, r.IsError, r.Output, r.Content, r.StructuredContent, r.Title, r.Metadata, key, detail,
		s.ResolvedBy, with, deliveredAt, s.At}
	return guard{from: s.From, claim: s.Claim}.where(b, args, s.ID)
}

// Exec writes the settle and, when into is not nil, reads the row's trace as it left it into
// into; false when a guard no longer holds.
func (s Settle) Exec(ctx context.Context, q Querier, into *TaskTrace) (bool, error) {
	var b strings.Builder
	args := s.update(&b)
	return execInto(ctx, q, "settle", s.ID, &b, args, into)
}

// ExecTrace writes the settle and answers the trace of every row of run runID, the row's run, as
// the settle left it, for readiness, which follows (updateAndTrace); false and no trace when a
// guard no longer holds.
func (s Settle) ExecTrace(ctx context.Context, q Querier, runID int64) (bool, []TaskTrace, error) {
	var b strings.Builder
	args := s.update(&b)
	return updateAndTrace(ctx, q, s.ID, b.String(), args, runID, "", nil)
}

// SettleRound settles a claimed model round with its answer (docs/development.md#how-the-kernel-runs-work):
// the answer's text, finish, usage, content and calls, or the expansion's refusal; with it the
// run's round counter and deliverable when the expansion moved them. It answers the run's trace
// as it left it, for readiness and re-pointing, which follow.
type SettleRound struct {
	ID     int64
	Status string
	Output string
	Finish string
	Usage  *Usage
	// Content is the answer as one text block, AnswerContent its ordered parts when they hold
	// provider blocks: stored JSON, nil for none.
	Content       *string
	AnswerContent *string
	// Calls are the answer's calls as expanded; nil for none.
	Calls AnswerCalls
	// Error is the expansion's refusal; nil for none.
	Error *Failure
	At    int64
	// From and Claim fence the settle: the round settles only while it has this status under
	// this claim.
	From  string
	Claim Fence
	// Run, when not nil, is what the expansion moved on the round's run.
	Run *RoundMove
}

// RoundMove is what a round's expansion moves on its run: the mainline round counter and the
// deliverable, each nil when unchanged.
type RoundMove struct {
	Counter     *int64
	Deliverable *string
}

// Exec writes the settle and answers the trace of every row of run runID as it left it; false and
// no trace when the claim no longer holds.
func (s SettleRound) Exec(ctx context.Context, q Querier, runID int64) (bool, []TaskTrace, error) {
	var key, detail *string
	if s.Error != nil {
		key, detail = &s.Error.Key, nullIfEmpty(s.Error.Detail)
	}
	var b strings.Builder
	b.WriteString(`UPDATE tasks SET status = ?, output = ?, finish = ?, usage = ?, is_error = ?, content = ?, answer_content = ?,
  answer_calls = ?, error_key = ?, error_detail = ?, completed_at = ?, settle_seq = ` + nextSettleSeqOfRow)
	args := guard{from: s.From, claim: &s.Claim}.where(&b, []any{s.Status, s.Output, s.Finish, s.Usage, false, s.Content,
		s.AnswerContent, s.Calls, key, detail, s.At}, s.ID)
	var run string
	var runArgs []any
	if m := s.Run; m != nil {
		run, runArgs = `UPDATE runs SET mainline_round_counter = COALESCE(?, mainline_round_counter),
  deliverable_task_key = COALESCE(?, deliverable_task_key) WHERE id = ?`, []any{m.Counter, m.Deliverable, runID}
	}
	return updateAndTrace(ctx, q, s.ID, b.String(), args, runID, run, runArgs)
}

// updateAndTrace runs update, the UPDATE of row id (a settle), and run, an UPDATE of its run ("" for
// none), then reads the trace of run runID, in one transaction step: on PostgreSQL one statement
// (the UPDATEs inside a WITH, the row answered as its UPDATE left it beside the run's other rows),
// on SQLite the three in turn. A guard that no longer holds answers false and no trace, and leaves
// the run's UPDATE written, for the caller's rollback.
func updateAndTrace(ctx context.Context, q Querier, id int64, update string, args []any, runID int64, run string, runArgs []any) (bool, []TaskTrace, error) {
	if q.Dialect() != Postgres {
		if run != "" {
			if _, err := q.Exec(ctx, run, runArgs...); err != nil {
				return false, nil, fmt.Errorf("store: update run %d: %w", runID, err)
			}
		}
		ok, err := exec(ctx, q, "settle", id, update, args)
		if err != nil || !ok {
			return false, nil, err
		}
		ts, err := TraceTasks(ctx, q, runID)
		return err == nil, ts, err
	}
	with := `WITH `
	if run != "" {
		with += `run AS (` + run + `), `
		args = append(runArgs, args...)
	}
	// The statement's one snapshot holds the row as it was: the run's other rows are read from
	// it (with the rows this transaction wrote before), the row itself from what its UPDATE
	// answers, and nothing when that UPDATE took none.
	var ts []TaskTrace
	err := q.Select(ctx, &ts, with+`set_row AS (`+update+` RETURNING `+traceColumnList+`)
SELECT `+traceColumnList+` FROM set_row
UNION ALL
SELECT `+traceColumnList+` FROM tasks WHERE run_id = ? AND id <> ? AND EXISTS (SELECT 1 FROM set_row)
ORDER BY id`, append(args, runID, id)...)
	if err != nil {
		return false, nil, fmt.Errorf("store: settle task %d and trace run %d: %w", id, runID, err)
	}
	if len(ts) == 0 {
		return false, nil, nil
	}
	return true, ts, nil
}

// AwaitChild leaves a claimed kernel call waiting on a row it placed
// (docs/agent-tools.md#delegation-and-conversations): awaiting_child, lowered out of every claim,
// its claim and clock cleared (the child's park carries one), and the title it waits under.
type AwaitChild struct {
	ID    int64
	Child string
	// Title is the call's title while it waits; nil keeps the row's.
	Title *string
	// From and Claim fence the write: the call waits only while running under its claim.
	From  string
	Claim Fence
}

// Exec writes the wait; false when the claim no longer holds.
func (a AwaitChild) Exec(ctx context.Context, q Querier) (bool, error) {
	var b strings.Builder
	b.WriteString(`UPDATE tasks SET awaiting_child = ?, lowered = ?, deadline_at = NULL, claimed_at = NULL, claimed_by = NULL,
  claim_token_hash = NULL, title = COALESCE(?, title)`)
	args := guard{from: a.From, claim: &a.Claim}.where(&b, []any{a.Child, true, a.Title}, a.ID)
	return exec(ctx, q, "await", a.ID, b.String(), args)
}

// Release ends a row's claim without settling it (the expiry rule's release of a row that may run
// again): its claimant, token and clock are cleared and the row is runnable again.
type Release struct {
	ID int64
}

// Exec writes the release.
func (r Release) Exec(ctx context.Context, q Querier) error {
	_, err := exec(ctx, q, "release", r.ID, `UPDATE tasks SET claimed_at = NULL, claim_token_hash = NULL, claimed_by = NULL, deadline_at = NULL WHERE id = ?`,
		[]any{r.ID})
	return err
}

// ReleaseClaim ends a claim of a row parked for its executors without settling it, so that they
// may claim it again at once (docs/operations.md#instance-liveness-and-takeover: a replayable call
// a dead instance's plugin held): the claimant, the token's hash, the instance and the claim time
// are cleared, and the park's clock restarts to end at Deadline. The generation stays, so the next
// claim is the one after it, and a write fenced on the released claim changes nothing.
type ReleaseClaim struct {
	ID       int64
	Deadline int64
	// From and Generation guard the release: the row is released only while it has this status
	// and is still held by the claim of this generation. The releaser holds no token (the claim
	// was another instance's): the generation names the claim.
	From       string
	Generation int64
}

// Exec writes the release; false when the row is no longer in its status under that claim.
func (r ReleaseClaim) Exec(ctx context.Context, q Querier) (bool, error) {
	var b strings.Builder
	b.WriteString(`UPDATE tasks SET claimed_at = NULL, claim_token_hash = NULL, claimed_by = NULL, claimed_instance = NULL, deadline_at = ?`)
	args := guard{from: r.From, claimed: &r.Generation}.where(&b, []any{r.Deadline}, r.ID)
	return exec(ctx, q, "release the claim of", r.ID, b.String(), args)
}

// Extend moves a claimed row's deadline (docs/api.md#the-executor-plane), only while the row is
// still in its status under the claim.
type Extend struct {
	ID       int64
	Deadline int64
	From     string
	Claim    Fence
}

// Exec writes the deadline; false when the claim no longer holds.
func (x Extend) Exec(ctx context.Context, q Querier) (bool, error) {
	var b strings.Builder
	b.WriteString(`UPDATE tasks SET deadline_at = ?`)
	args := guard{from: x.From, claim: &x.Claim}.where(&b, []any{x.Deadline}, x.ID)
	return exec(ctx, q, "extend", x.ID, b.String(), args)
}

// Deliver marks a settled row's result delivered (docs/development.md#how-the-kernel-runs-work):
// With names what carried it (a sealing round's key, a turn), At is when.
type Deliver struct {
	ID   int64
	With string
	At   int64
}

// Exec writes the mark.
func (d Deliver) Exec(ctx context.Context, q Querier) error {
	_, err := exec(ctx, q, "deliver", d.ID, `UPDATE tasks SET result_delivered_at = ?, delivered_with = ? WHERE id = ?`,
		[]any{d.At, d.With, d.ID})
	return err
}

// Repoint moves a waiting row's predecessors (after_keys): readers of an expanding round move onto
// its continuation.
type Repoint struct {
	ID    int64
	After Strings
}

// Exec writes the predecessors.
func (r Repoint) Exec(ctx context.Context, q Querier) error {
	_, err := exec(ctx, q, "repoint", r.ID, `UPDATE tasks SET after_keys = ? WHERE id = ?`, []any{r.After, r.ID})
	return err
}
