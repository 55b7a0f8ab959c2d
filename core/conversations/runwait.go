package conversations

import (
	"context"
	"sync"
	"time"

	"github.com/nexuskernel/nexus/core/runs"
	"github.com/nexuskernel/nexus/core/store"
)

// Bounds of a waiting run read (docs/api.md#waiting-for-a-run).
const (
	// MaxRunWait bounds how long one read waits: below the minute after which proxies and
	// load balancers commonly cut a silent response, so that a waiting member sees an answer,
	// not a dropped connection, and asks again.
	MaxRunWait = 30 * time.Second
	// RunWaitRecheck spaces the re-reads of a waiting read: this instance's own commits wake
	// it at once, and a re-read is how it sees a status another instance wrote.
	RunWaitRecheck = 500 * time.Millisecond
)

// RunWatch wakes waiting run reads when a run's status changes or attention stands on it. The
// engine tells it, after each commit, of the runs that commit changed so
// (runs.Options.RunChanged); Close answers every waiting read at once, as the server does when it
// shuts down.
type RunWatch struct {
	mu      sync.Mutex
	waiters map[string]map[chan struct{}]struct{}
	closed  chan struct{}
	once    sync.Once
}

// NewRunWatch is an empty watch.
func NewRunWatch() *RunWatch {
	return &RunWatch{waiters: map[string]map[chan struct{}]struct{}{}, closed: make(chan struct{})}
}

// RunChanged wakes the reads waiting on the run; it never blocks.
func (w *RunWatch) RunChanged(runPublicID string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for ch := range w.waiters[runPublicID] {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
}

// Waiting is how many reads wait on the run now.
func (w *RunWatch) Waiting(runPublicID string) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.waiters[runPublicID])
}

// Close answers every waiting read, and every later one, without waiting.
func (w *RunWatch) Close() { w.once.Do(func() { close(w.closed) }) }

// watch registers a waiter on the run until stop is called.
func (w *RunWatch) watch(runPublicID string) (ch chan struct{}, stop func()) {
	ch = make(chan struct{}, 1)
	w.mu.Lock()
	set := w.waiters[runPublicID]
	if set == nil {
		set = map[chan struct{}]struct{}{}
		w.waiters[runPublicID] = set
	}
	set[ch] = struct{}{}
	w.mu.Unlock()
	return ch, func() {
		w.mu.Lock()
		delete(set, ch)
		if len(set) == 0 {
			delete(w.waiters, runPublicID)
		}
		w.mu.Unlock()
	}
}

// ReadRunWaiting is the run read that waits (docs/api.md#waiting-for-a-run): while the run is
// running with no attention it holds the answer until the status changes, attention stands or
// wait has passed, then answers the run as it is. Any other run, and a wait of zero, answer at
// once. The waiter is registered before the first look, so that a change committed between a
// look and the wait is not missed. A look reads the run's standing only (store.RunStanding), as
// does each re-read while nothing was heard; a word from the engine reads the whole run, which
// answers it or waits again.
func (d *Doors) ReadRunWaiting(ctx context.Context, a *runs.Actor, runID string, wait time.Duration) (*RunDoc, error) {
	if wait <= 0 || d.watch == nil {
		return d.ReadRun(ctx, a, runID)
	}
	changed, stop := d.watch.watch(runID)
	defer stop()
	timeout := time.NewTimer(wait)
	defer timeout.Stop()
	recheck := time.NewTicker(RunWaitRecheck)
	defer recheck.Stop()
	heard := waitRecheck // what ended the last wait; the first look is a re-read
	for {
		if heard == waitRecheck && store.IsPublicID(runID) {
			// Attention on a running run is a row held for a person (runs.AttentionOf).
			status, held, err := store.RunStanding(ctx, d.e.Reader(), a.WorkspaceID, runID)
			if err == nil && status == runs.RunRunning && !held {
				if heard, err = d.await(ctx, changed, recheck.C, timeout.C); err != nil {
					return nil, err
				}
				continue
			}
		}
		doc, err := d.ReadRun(ctx, a, runID)
		if err != nil || heard == waitOver || doc.Status != runs.RunRunning || len(doc.Attention) > 0 {
			return doc, err
		}
		if heard, err = d.await(ctx, changed, recheck.C, timeout.C); err != nil {
			return nil, err
		}
	}
}

// What ended a wait of a waiting read.
const (
	waitWord    = iota // the engine's word on the run
	waitRecheck        // the next re-read
	waitOver           // the wait passed or the watch closed: the read answers the run as it is
)

// await waits for a word on the run, the next re-read or the end of the wait.
func (d *Doors) await(ctx context.Context, changed <-chan struct{}, recheck, timeout <-chan time.Time) (int, error) {
	select {
	case <-ctx.Done():
		return 0, ctx.Err()
	case <-changed:
		return waitWord, nil
	case <-recheck:
		return waitRecheck, nil
	case <-timeout:
	case <-d.watch.closed:
	}
	return waitOver, nil
}
