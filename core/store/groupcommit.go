package store

import (
	"context"
	"database/sql"
	"fmt"
	"sync"

	"github.com/jmoiron/sqlx"
)

// maxGroup bounds the writes one SQLite group commit carries. A group holds the one writer
// connection from its first write to its commit, so a write queued behind a full group waits
// for the whole group; 64 short writes (a claim or a commit is well under a millisecond of
// statements) keep that wait near one flush while a burst of claims still shares its flush.
const maxGroup = 64

// writeGroup is the queue in front of SQLite's one writer connection (Write): the writes that
// arrive while a transaction holds the connection wait here, and the next leader runs them
// together in one IMMEDIATE transaction, each in a savepoint of its own, and commits them with
// one flush (group commit). A write's savepoint rolls back when it fails, so it changes nothing,
// as its own transaction's rollback would; its caller hears of it once the group's commit is
// durable (synchronous = FULL), never before. A write runs alone, exactly as before, when
// nothing waits beside it.
type writeGroup struct {
	mu      sync.Mutex
	pending []*groupedWrite
	// leading says that a leader is running a group; a write that arrives meanwhile waits.
	leading bool
}

// groupedWrite is one caller's write waiting in the queue.
type groupedWrite struct {
	ctx context.Context
	fn  func(tx *Tx) error
	// done receives the write's outcome once its group committed or rolled back.
	done chan groupOutcome
	// lead receives the leadership of the next group: the waiter runs it itself.
	lead chan struct{}
}

// groupOutcome is a write's outcome; panicked carries a panic of fn to its own goroutine.
type groupOutcome struct {
	err      error
	panicked any
	hasPanic bool
}

// writeGrouped is Write on SQLite: fn joins the queue and runs in the next group.
func (s *Store) writeGrouped(ctx context.Context, fn func(tx *Tx) error) error {
	w := &groupedWrite{ctx: ctx, fn: fn, done: make(chan groupOutcome, 1), lead: make(chan struct{}, 1)}
	g := &s.group
	g.mu.Lock()
	g.pending = append(g.pending, w)
	lead := !g.leading
	if lead {
		g.leading = true
	}
	g.mu.Unlock()
	for {
		if lead {
			s.leadGroups(w)
		}
		select {
		case out := <-w.done:
			if out.hasPanic {
				panic(out.panicked)
			}
			return out.err
		case <-w.lead:
			lead = true
		}
	}
}

// leadGroups runs groups from the queue until own's has run, then hands the leadership to the
// first write still waiting, so that no caller leads for others' sake beyond its own group.
func (s *Store) leadGroups(own *groupedWrite) {
	g := &s.group
	for {
		g.mu.Lock()
		n := min(len(g.pending), maxGroup)
		batch := append([]*groupedWrite(nil), g.pending[:n]...)
		g.pending = append(g.pending[:0], g.pending[n:]...)
		g.mu.Unlock()
		mine := false
		for _, w := range batch {
			mine = mine || w == own
		}
		s.runGroup(batch)
		if mine {
			break
		}
	}
	g.mu.Lock()
	if len(g.pending) == 0 {
		g.leading = false
	} else {
		g.pending[0].lead <- struct{}{}
	}
	g.mu.Unlock()
}

// runGroup runs a group's writes in one transaction and answers each. The transaction and its
// statements run without the callers' cancellation: on SQLite a statement interrupted inside a
// transaction may roll the whole transaction back, taking the group's other writes with it. A
// write whose caller gave up before its turn is answered with its context's error and never runs.
func (s *Store) runGroup(batch []*groupedWrite) {
	outs := make([]groupOutcome, len(batch))
	live := make([]int, 0, len(batch))
	for i, w := range batch {
		if err := w.ctx.Err(); err != nil {
			outs[i].err = err
			continue
		}
		live = append(live, i)
	}
	if len(live) > 0 {
		s.commitGroup(batch, live, outs)
	}
	for i, w := range batch {
		w.done <- outs[i]
	}
}

// commitGroup runs the live writes of batch in one transaction, each in a savepoint when the
// group holds more than one, and commits it; outs receives each write's outcome.
func (s *Store) commitGroup(batch []*groupedWrite, live []int, outs []groupOutcome) {
	ctx := context.Background()
	sqlTx, err := s.writer.BeginTxx(ctx, nil)
	if err != nil {
		for _, i := range live {
			outs[i].err = fmt.Errorf("store: begin: %w", err)
		}
		return
	}
	tx := &Tx{querier: querier{ext: uncancelled{sqlTx}, d: s.dialect}, tx: sqlTx, st: s}
	alone := len(live) == 1
	committed := 0
	for _, i := range live {
		w := batch[i]
		if !alone {
			if _, err := sqlTx.ExecContext(ctx, `SAVEPOINT grouped_write`); err != nil {
				outs[i].err = fmt.Errorf("store: savepoint: %w", err)
				continue
			}
		}
		outs[i] = runGrouped(w, tx)
		switch {
		case outs[i].err == nil && !outs[i].hasPanic:
			committed++
			if !alone {
				if _, err := sqlTx.ExecContext(ctx, `RELEASE grouped_write`); err != nil {
					_ = sqlTx.Rollback()
					failAll(live, outs, fmt.Errorf("store: release: %w", err))
					return
				}
			}
		case !alone:
			// The write's own rollback: the savepoint undoes what it did, the others stand.
			if _, err := sqlTx.ExecContext(ctx, `ROLLBACK TO grouped_write`); err != nil {
				_ = sqlTx.Rollback()
				failAll(live, outs, fmt.Errorf("store: roll back a grouped write: %w", err))
				return
			}
			if _, err := sqlTx.ExecContext(ctx, `RELEASE grouped_write`); err != nil {
				_ = sqlTx.Rollback()
				failAll(live, outs, fmt.Errorf("store: release: %w", err))
				return
			}
		}
	}
	if committed == 0 {
		_ = sqlTx.Rollback()
		return
	}
	if err := sqlTx.Commit(); err != nil {
		failAll(live, outs, retryable(fmt.Errorf("store: commit: %w", err)))
	}
}

// runGrouped runs one write's fn, catching a panic for its caller's goroutine.
func runGrouped(w *groupedWrite, tx *Tx) (out groupOutcome) {
	defer func() {
		if p := recover(); p != nil {
			out = groupOutcome{panicked: p, hasPanic: true}
		}
	}()
	if err := w.fn(tx); err != nil {
		return groupOutcome{err: retryable(err)}
	}
	return groupOutcome{}
}

// failAll answers err to every write of the group that was to commit: the transaction did not.
func failAll(live []int, outs []groupOutcome, err error) {
	for _, i := range live {
		if outs[i].err == nil && !outs[i].hasPanic {
			outs[i].err = err
		}
	}
}

// uncancelled runs a grouped transaction's statements without their callers' cancellation
// (runGroup), keeping their values (trace spans, deadlines' absence).
type uncancelled struct{ tx *sqlx.Tx }

func (u uncancelled) DriverName() string     { return u.tx.DriverName() }
func (u uncancelled) Rebind(q string) string { return u.tx.Rebind(q) }
func (u uncancelled) BindNamed(q string, arg any) (string, []any, error) {
	return u.tx.BindNamed(q, arg)
}
func (u uncancelled) QueryContext(ctx context.Context, q string, args ...any) (*sql.Rows, error) {
	return u.tx.QueryContext(context.WithoutCancel(ctx), q, args...)
}
func (u uncancelled) QueryxContext(ctx context.Context, q string, args ...any) (*sqlx.Rows, error) {
	return u.tx.QueryxContext(context.WithoutCancel(ctx), q, args...)
}
func (u uncancelled) QueryRowxContext(ctx context.Context, q string, args ...any) *sqlx.Row {
	return u.tx.QueryRowxContext(context.WithoutCancel(ctx), q, args...)
}
func (u uncancelled) ExecContext(ctx context.Context, q string, args ...any) (sql.Result, error) {
	return u.tx.ExecContext(context.WithoutCancel(ctx), q, args...)
}
