package store

import (
	"context"
	"crypto/rand"
	"net/url"

	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"github.com/jmoiron/sqlx"
)

// ClaimTokenPrefix starts every claim token, so that a leaked one is recognisable.
const ClaimTokenPrefix = "nxc_"

// claimTokenBytes is the token's entropy: 256 bits, beyond guessing.
const claimTokenBytes = 32

// ClaimSpec parameterizes the one claim primitive (docs/development.md#how-the-kernel-runs-work).
// The kernel's workers and the executor plane's claim door differ only in which rows are runnable
// for them, so those rows are the parameter (Runnable).
type ClaimSpec struct {
	// Runnable names the rows the claim may take, and whether they are the kernel's queue, read
	// through its index on SQLite (Runnable.from).
	Runnable Runnable
	// Limit is the most rows one claim takes (at least 1).
	Limit int
	// Now is the claim time, Unix ms: started_at on a first claim, and the clock's new start.
	Now int64
	// DefaultTimeoutMS restarts the clock of a row without its own timeout_ms (a model task,
	// whose claim deadline is the kernel's model_timeout).
	DefaultTimeoutMS int64
	// ClaimedBy is the stored claimant: KernelClaimant or an ExecutorClaimant.
	ClaimedBy Claimant
	// Instance is the claiming instance (docs/operations.md#instance-liveness-and-takeover) of a
	// kernel claim or of a claim a plugin's host makes for its executor, stored as
	// claimed_instance so that a survivor can release the claims of a dead one; empty (NULL) for
	// an HTTP executor's claim, which belongs to no instance and which its deadline alone settles.
	Instance string
	// Relaxed lets a claim commit without waiting for its flush to disk (Store.WriteRelaxed).
	// It is for claims whose every effect is itself a later, synchronous write to this
	// database, as the kernel's are: that write flushes the log up to and including the claim,
	// so a claim lost in a database crash took nothing durable with it and the row is simply
	// claimed again. An executor's claim hands its token to the outside world and must not be
	// relaxed. The flush is most of a claim's latency (B8). Only ClaimOne reads it: Claim runs
	// in the caller's transaction, which commits as the caller decides.
	Relaxed bool
	// CountAttemptKind, when set, increments attempts on taken rows of that kind (model tasks
	// count their claims, docs/development.md#how-the-kernel-runs-work).
	CountAttemptKind string
	// WithRow has ClaimOne and ClaimFirst answer the taken row and its run as the claim left
	// them (Claimed.Task, Claimed.Run, Claimed.Detached: TaskAndRunByID's columns): on
	// PostgreSQL in the claim's one statement, the UPDATE inside a WITH; on SQLite by a read in
	// the claim's transaction.
	// It is for a claimant that reads the row next, as the kernel's worker does.
	WithRow bool
}

// instance is Instance as stored: NULL when empty.
func (spec ClaimSpec) instance() any {
	if spec.Instance == "" {
		return nil
	}
	return spec.Instance
}

// Claimed is one row a claim took, with the token that fences every later write under it. The
// token is returned once; only its SHA-256 is stored.
type Claimed struct {
	ID         int64  `db:"id"`
	RunID      int64  `db:"run_id"`
	Key        string `db:"task_key"`
	Kind       string `db:"kind"`
	Generation int64
	Token      string
	TokenHash  []byte
	DeadlineAt int64
	// Task and Run are the taken row and its run, when the claim asked for them (WithRow).
	Task *Task
	Run  *Run
	// Detached, with WithRow, is whether the run held a detached row (a branch's round, a
	// spawn's or a send's reply) as the claim read it. Only such a row carries a result that no
	// call pairs, so a round of a run without one has none to deliver when it seals; a row that
	// arrives after the claim is delivered as one that arrives after the seal is.
	Detached bool
}

// HashClaimToken is the stored form of a claim token.
func HashClaimToken(token string) []byte {
	h := sha256.Sum256([]byte(token))
	return h[:]
}

// NewClaimToken mints a claim token.
func NewClaimToken() (string, error) {
	var b [claimTokenBytes]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("store: claim token: %w", err)
	}
	return ClaimTokenPrefix + base64.RawURLEncoding.EncodeToString(b[:]), nil
}

// Claim takes up to spec.Limit runnable rows in one transaction: PostgreSQL selects them FOR
// UPDATE OF tasks SKIP LOCKED (only task rows are locked, never the run row the predicate
// reads), SQLite selects them inside the writer's immediate transaction, whose database lock
// makes the claim exclusive. Each taken row atomically gets a new generation, a fresh token's
// hash, its claimant and claim time, started_at on its first claim, and a restarted clock
// (deadline_at = now + timeout_ms). Rows are taken in dispatched_at, id order.
func Claim(ctx context.Context, tx *Tx, spec ClaimSpec) ([]Claimed, error) {
	if spec.Limit < 1 {
		spec.Limit = 1
	}
	q := claimSQL(tx.Dialect(), spec.Runnable)
	args := append(append([]any(nil), spec.Runnable.args...), spec.Limit)
	var rows []Claimed
	if err := tx.Select(ctx, &rows, q, args...); err != nil {
		return nil, fmt.Errorf("store: claim scan: %w", err)
	}
	for i := range rows {
		tok, err := NewClaimToken()
		if err != nil {
			return nil, err
		}
		rows[i].Token = tok
		rows[i].TokenHash = HashClaimToken(tok)
		var out struct {
			Generation int64 `db:"claim_generation"`
			Deadline   int64 `db:"deadline_at"`
		}
		err = tx.Get(ctx, &out, claimTake+`WHERE id = ? RETURNING claim_generation, deadline_at`,
			rows[i].TokenHash, spec.ClaimedBy, spec.instance(), spec.Now, spec.Now, spec.Now, spec.DefaultTimeoutMS, spec.CountAttemptKind, rows[i].ID)
		if err != nil {
			return nil, fmt.Errorf("store: claim task %d: %w", rows[i].ID, err)
		}
		rows[i].Generation = out.Generation
		rows[i].DeadlineAt = out.Deadline
	}
	return rows, nil
}

// ClaimOne takes at most one runnable row, the shape every kernel worker and every executor
// claim door uses. On PostgreSQL it is one autocommitted statement,
// `UPDATE … WHERE id = (SELECT … FOR UPDATE OF t SKIP LOCKED) RETURNING …`: the same lock, the
// same compare-free take, in one round trip instead of four, which is most of a wake-up's
// latency. On SQLite it is the same statement (ClaimFirst) inside the writer's immediate
// transaction, which takes the one write lock: a look on a reader (AnyRunnable) comes first, so
// that a claim that would find nothing does not queue beside the writes that do work.
func (s *Store) ClaimOne(ctx context.Context, spec ClaimSpec) (*Claimed, error) {
	if s.dialect != Postgres {
		if found, err := AnyRunnable(ctx, s.Reader(), spec.Runnable); err != nil || !found {
			return nil, err
		}
		var got *Claimed
		write := s.Write
		if spec.Relaxed {
			write = s.WriteRelaxed
		}
		err := write(ctx, func(tx *Tx) error {
			var err error
			got, err = ClaimFirst(ctx, tx, spec)
			return err
		})
		if err != nil {
			return nil, err
		}
		return got, nil
	}
	tok, err := NewClaimToken()
	if err != nil {
		return nil, err
	}
	q := Querier(querier{ext: s.writer, d: s.dialect})
	if spec.Relaxed {
		db, err := s.relaxedPool()
		if err != nil {
			return nil, err
		}
		q = querier{ext: db, d: s.dialect}
	}
	return claimFirst(ctx, q, spec, tok)
}

// ClaimFirst is Claim of at most one row in the caller's transaction, as one statement on
// both stores: `UPDATE … WHERE id = (SELECT … LIMIT 1 [FOR UPDATE OF t SKIP LOCKED]) RETURNING
// …`, the same rows, lock and take as Claim's SELECT then UPDATE, one round trip fewer. nil
// when no row is runnable.
func ClaimFirst(ctx context.Context, tx *Tx, spec ClaimSpec) (*Claimed, error) {
	tok, err := NewClaimToken()
	if err != nil {
		return nil, err
	}
	return claimFirst(ctx, tx, spec, tok)
}

// claimFirst is the one statement of ClaimOne and ClaimFirst, taking the row with tok.
func claimFirst(ctx context.Context, q Querier, spec ClaimSpec, tok string) (*Claimed, error) {
	c := Claimed{Token: tok, TokenHash: HashClaimToken(tok)}
	args := []any{c.TokenHash, spec.ClaimedBy, spec.instance(), spec.Now, spec.Now, spec.Now, spec.DefaultTimeoutMS, spec.CountAttemptKind}
	args = append(args, spec.Runnable.args...)
	var row struct {
		ID         int64  `db:"id"`
		RunID      int64  `db:"run_id"`
		Key        string `db:"task_key"`
		Kind       string `db:"kind"`
		Generation int64  `db:"claim_generation"`
		Deadline   int64  `db:"deadline_at"`
	}
	update := claimFirstSQL(q.Dialect(), spec.Runnable)
	var err error
	if spec.WithRow && q.Dialect() == Postgres {
		var tr taskAndRun
		err = q.Get(ctx, &tr, `WITH claimed AS (`+update+`*)
SELECT `+taskColumnsOfT+`, `+runOfTaskColumns+`, `+runDetachedColumn+`
FROM claimed t`+taskAndRunJoins, args...)
		row.ID, row.RunID, row.Key, row.Kind, row.Generation = tr.ID, tr.RunID, tr.Key, tr.Kind, tr.ClaimGeneration
		if tr.DeadlineAt != nil {
			row.Deadline = *tr.DeadlineAt
		}
		c.Task, c.Run, c.Detached = &tr.Task, &tr.Run, tr.Detached
	} else {
		err = q.Get(ctx, &row, update+`id, run_id, task_key, kind, claim_generation, deadline_at`, args...)
	}
	if err != nil {
		if err = notFound(err); err == ErrNotFound {
			return nil, nil
		}
		return nil, fmt.Errorf("store: claim: %w", err)
	}
	c.ID, c.RunID, c.Key, c.Kind, c.Generation, c.DeadlineAt = row.ID, row.RunID, row.Key, row.Kind, row.Generation, row.Deadline
	if spec.WithRow && c.Task == nil {
		if c.Run, c.Task, c.Detached, err = TaskAndRunByID(ctx, q, c.ID); err != nil {
			return nil, fmt.Errorf("store: claimed row %d: %w", c.ID, err)
		}
	}
	return &c, nil
}

// claimTake is what a claim writes to the row it takes, with its arguments in this order: the
// token's hash, the claimant, the instance, now three times, the default timeout, the kind whose
// attempts count (ClaimSpec).
const claimTake = `UPDATE tasks SET
  claim_generation = claim_generation + 1,
  claim_token_hash = ?,
  claimed_by = ?,
  claimed_instance = ?,
  claimed_at = ?,
  started_at = COALESCE(started_at, ?),
  deadline_at = ? + COALESCE(timeout_ms, ?),
  attempts = attempts + CASE WHEN kind = ? THEN 1 ELSE 0 END
`

// claimFirstSQL is claimFirst's statement up to its RETURNING list.
func claimFirstSQL(d Dialect, runnable Runnable) string {
	lock := ``
	if d == Postgres {
		lock = ` FOR UPDATE OF t SKIP LOCKED`
	}
	return claimTake + `WHERE id = (SELECT t.id FROM ` + runnable.from(d) + ` WHERE ` + runnable.cond + `
  ORDER BY t.dispatched_at, t.id LIMIT 1` + lock + `)
RETURNING `
}

// claimSQL is Claim's SELECT.
func claimSQL(d Dialect, runnable Runnable) string {
	q := `SELECT t.id, t.run_id, t.task_key, t.kind FROM ` + runnable.from(d) + ` WHERE ` +
		runnable.cond + ` ORDER BY t.dispatched_at, t.id LIMIT ?`
	if d == Postgres {
		q += ` FOR UPDATE OF t SKIP LOCKED`
	}
	return q
}

// relaxedPoolSize bounds the relaxed-write connections: a kernel claim is one statement and a
// round's seal one short transaction, so as many connections as the default kernel worker pool
// has workers (eight) never make a worker wait; a larger pool queues its seals here.
const relaxedPoolSize = 8

// relaxedPool opens the pool whose sessions run with synchronous_commit = off.
func (s *Store) relaxedPool() (*sqlx.DB, error) {
	s.relaxedOnce.Do(func() {
		u, err := url.Parse(withSessionDefaults(s.dsn))
		if err != nil {
			s.relaxedErr = fmt.Errorf("store: relaxed pool: %w", err)
			return
		}
		q := u.Query()
		// lib/pq passes unknown connection parameters to the server as run-time settings.
		q.Set("synchronous_commit", "off")
		u.RawQuery = q.Encode()
		db, err := openPostgresDB(u.String(), s.counts)
		if err != nil {
			s.relaxedErr = fmt.Errorf("store: relaxed pool: %w", err)
			return
		}
		db.SetMaxOpenConns(relaxedPoolSize)
		db.SetMaxIdleConns(relaxedPoolSize)
		s.relaxed = db
	})
	return s.relaxed, s.relaxedErr
}

// AnyRunnable reports whether some row is runnable, read without a lock: a worker's look before it
// opens the transaction that would lock and claim one. It decides nothing but whether to look:
// the claim reads the rows again under its lock.
func AnyRunnable(ctx context.Context, q Querier, runnable Runnable) (bool, error) {
	var one int
	err := notFound(q.Get(ctx, &one, anyRunnableSQL(q.Dialect(), runnable), runnable.args...))
	if err == ErrNotFound {
		return false, nil
	}
	return err == nil, err
}

// LockRunWithRunnable finds a run that has a runnable row and takes that run's lock, skipping runs
// another transaction holds: the first step of a claim that will settle in the same transaction,
// taken in the lock order (the run before its task rows,
// docs/development.md#how-the-kernel-runs-work). ok is false when no such run is free.
func LockRunWithRunnable(ctx context.Context, tx *Tx, runnable Runnable) (runID int64, ok bool, err error) {
	err = tx.Get(ctx, &runID, lockRunSQL(tx.Dialect(), runnable), runnable.args...)
	if err = notFound(err); err == ErrNotFound {
		return 0, false, nil
	}
	return runID, err == nil, err
}

// anyRunnableSQL is AnyRunnable's statement.
func anyRunnableSQL(d Dialect, runnable Runnable) string {
	return `SELECT 1 FROM ` + runnable.from(d) + ` WHERE ` + runnable.cond + ` LIMIT 1`
}

// lockRunSQL is LockRunWithRunnable's statement.
func lockRunSQL(d Dialect, runnable Runnable) string {
	q := `SELECT r.id FROM ` + runnable.from(d) + ` WHERE ` + runnable.cond + ` ORDER BY t.dispatched_at, t.id LIMIT 1`
	if d == Postgres {
		q += ` FOR UPDATE OF r SKIP LOCKED`
	}
	return q
}
