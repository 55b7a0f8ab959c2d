package store

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
)

// ClaimTokenPrefix starts every claim token, so that a leaked one is recognisable.
const ClaimTokenPrefix = "nxc_"

// claimTokenBytes is the token's entropy: 256 bits, beyond guessing.
const claimTokenBytes = 32

// ClaimSpec parameterizes the one claim primitive (runs.md §4.3). The kernel's workers and the
// executor plane's claim door differ only in which rows are runnable for them, so the predicate
// is the parameter: a SQL condition over `t` (tasks) and `r` (the task's run), with `?`
// placeholders and its arguments. Callers pass constant SQL text; values go through Args.
type ClaimSpec struct {
	// Predicate selects the runnable rows, e.g. `t.status = 'running' AND r.status = 'running'`.
	Predicate string
	Args      []any
	// Limit is the most rows one claim takes (at least 1).
	Limit int
	// Now is the claim time, Unix ms: started_at on a first claim, and the clock's new start.
	Now int64
	// DefaultTimeoutMS restarts the clock of a row without its own timeout_ms (a model task,
	// whose claim deadline is the kernel's model_timeout).
	DefaultTimeoutMS int64
	// ClaimedBy is the stored claimant, JSON: {"kernel":true} or {"executor_public_id":"…"}.
	ClaimedBy string
	// CountAttempt increments attempts (model tasks count their claims, runs.md §4.9).
	CountAttempt bool
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
	q := `SELECT t.id, t.run_id, t.task_key, t.kind FROM tasks t JOIN runs r ON r.id = t.run_id WHERE ` +
		spec.Predicate + ` ORDER BY t.dispatched_at, t.id LIMIT ?`
	if tx.Dialect() == Postgres {
		q += ` FOR UPDATE OF t SKIP LOCKED`
	}
	args := append(append([]any(nil), spec.Args...), spec.Limit)
	var rows []Claimed
	if err := tx.Select(ctx, &rows, q, args...); err != nil {
		return nil, fmt.Errorf("store: claim scan: %w", err)
	}
	attempt := 0
	if spec.CountAttempt {
		attempt = 1
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
		err = tx.Get(ctx, &out, `UPDATE tasks SET
  claim_generation = claim_generation + 1,
  claim_token_hash = ?,
  claimed_by = ?,
  claimed_at = ?,
  started_at = COALESCE(started_at, ?),
  deadline_at = ? + COALESCE(timeout_ms, ?),
  attempts = attempts + ?
WHERE id = ? RETURNING claim_generation, deadline_at`,
			rows[i].TokenHash, spec.ClaimedBy, spec.Now, spec.Now, spec.Now, spec.DefaultTimeoutMS, attempt, rows[i].ID)
		if err != nil {
			return nil, fmt.Errorf("store: claim task %d: %w", rows[i].ID, err)
		}
		rows[i].Generation = out.Generation
		rows[i].DeadlineAt = out.Deadline
	}
	return rows, nil
}
