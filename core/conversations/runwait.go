package conversations

import (
	"context"
	"sync"
	"time"

	"github.com/nexuskernel/nexus/core/events"
	"github.com/nexuskernel/nexus/core/runs"
	"github.com/nexuskernel/nexus/core/store"
)

// Bounds of a waiting run read (docs/api.md#waiting-for-a-run).
const (
	// MaxRunWait bounds how long one read waits: below the minute after which proxies and
	// load balancers commonly cut a silent response, so that a waiting member sees an answer,
	// not a dropped connection, and asks again.
	MaxRunWait = 30 * time.Second
)

// RunWatch wakes waiting run reads when a run's status changes or attention stands on it: it
// follows the event feed (core/events), where the engine publishes, after each commit, a run's
// new status (events.RunStatus) and the rows that start waiting for a person
// (events.ApprovalWaiting, events.AskWaiting), this instance's and, through the relay, the other
// instances'. When the feed says events may have been missed, every waiting read re-reads.
// Close answers every waiting read at once, as the server does when it shuts down.
type RunWatch struct {
	mu      sync.Mutex
	waiters map[string]map[chan struct{}]struct{}
	closed  chan struct{}
	once    sync.Once
	sub     *events.Subscription
}

// NewRunWatch is a watch following bus; with a nil bus it hears nothing, and its reads answer
// when their wait passes.
func NewRunWatch(bus *events.Bus) *RunWatch {
	w := &RunWatch{waiters: map[string]map[chan struct{}]struct{}{}, closed: make(chan struct{})}
	if bus != nil {
		w.sub, _, _ = bus.SubscribeMembers(events.MemberFilter{SkipDeltas: true}, false, 0)
		go w.follow()
	}
	return w
}

// follow wakes the waiters of each run an event concerns, and every waiter after a loss.
func (w *RunWatch) follow() {
	for {
		select {
		case <-w.sub.Wake():
		case <-w.sub.Done():
			return
		}
		evs, lost := w.sub.Take()
		if lost {
			w.wakeAll()
			continue
		}
		for _, ev := range evs {
			switch ev := ev.(type) {
			case events.RunStatus:
				w.RunChanged(ev.Run)
			case events.ApprovalWaiting:
				w.RunChanged(ev.Run)
			case events.AskWaiting:
				w.RunChanged(ev.Run)
			}
		}
	}
}

// RunChanged wakes the reads waiting on the run; it never blocks.
func (w *RunWatch) RunChanged(runPublicID string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for ch := range w.waiters[runPublicID] {
		wake(ch)
	}
}

func (w *RunWatch) wakeAll() {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, set := range w.waiters {
		for ch := range set {
			wake(ch)
		}
	}
}

func wake(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

// Waiting is how many reads wait on the run now.
func (w *RunWatch) Waiting(runPublicID string) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.waiters[runPublicID])
}

// Close answers every waiting read, and every later one, without waiting, and stops following
// the feed.
func (w *RunWatch) Close() {
	w.once.Do(func() {
		close(w.closed)
		if w.sub != nil {
			w.sub.Close()
		}
	})
}

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
// look and the wait is not missed. The first look reads the run's standing only
// (store.RunStanding); a word from the feed reads the whole run, which answers it or waits
// again. Nothing re-reads on a timer.
func (d *Doors) ReadRunWaiting(ctx context.Context, a *runs.Actor, runID string, wait time.Duration) (*RunDoc, error) {
	if wait <= 0 || d.watch == nil {
		return d.ReadRun(ctx, a, runID)
	}
	changed, stop := d.watch.watch(runID)
	defer stop()
	timeout := time.NewTimer(wait)
	defer timeout.Stop()
	over := false
	if store.IsPublicID(runID) {
		// Attention on a running run is a row held for a person (runs.AttentionOf).
		status, held, err := store.RunStanding(ctx, d.e.Reader(), a.WorkspaceID, runID)
		if err == nil && status == runs.RunRunning && !held {
			if over, err = d.await(ctx, changed, timeout.C); err != nil {
				return nil, err
			}
		}
	}
	for {
		doc, err := d.ReadRun(ctx, a, runID)
		if err != nil || over || doc.Status != runs.RunRunning || len(doc.Attention) > 0 {
			return doc, err
		}
		if over, err = d.await(ctx, changed, timeout.C); err != nil {
			return nil, err
		}
	}
}

// await waits for a word on the run (false) or the end of the wait (true).
func (d *Doors) await(ctx context.Context, changed <-chan struct{}, timeout <-chan time.Time) (bool, error) {
	select {
	case <-ctx.Done():
		return false, ctx.Err()
	case <-changed:
		return false, nil
	case <-timeout:
	case <-d.watch.closed:
	}
	return true, nil
}
