package store

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/lib/pq"
)

// Bounds of the deferred notifications (NotifyLater).
const (
	// maxPendingNotifications bounds what waits to be sent: a hint that finds the queue full
	// is dropped (reported to its caller), since a store that cannot keep up with its own
	// hints is better served by the pollers than by a growing backlog.
	maxPendingNotifications = 10_000
	// notifyLaterBatch bounds the notifications one statement sends: a burst of commits is
	// told in few round trips while one statement stays small.
	notifyLaterBatch = 256
	// notifyLaterTimeout bounds one batch's statement and the flush of what is pending at
	// Close: a NOTIFY takes well under a millisecond.
	notifyLaterTimeout = 5 * time.Second
)

// pendingNotification is one queued payload and the caller's report of its loss.
type pendingNotification struct {
	channel, payload string
	failed           func(error)
}

// notifier sends deferred notifications, in the order they were queued, from one goroutine.
type notifier struct {
	mu      sync.Mutex
	pending []pendingNotification
	wake    chan struct{}
	quit    chan struct{}
	done    chan struct{}
	closed  bool
}

// NotifyLater queues payload on channel and returns at once; one goroutine per store sends
// what is queued, in order, several payloads per statement. It is for hints about changes
// already committed (executor wake-ups) whose sender must not wait a round trip for them: the
// caller's answer goes out while the NOTIFY is on its way. Identical payloads on one channel
// that go out in the same statement arrive once (PostgreSQL folds a transaction's duplicate
// notifications), which suits hints. A hint that cannot be sent is reported through failed,
// which may be nil: at once on the caller's goroutine when the queue is full or the store
// closed, on the sending goroutine when its statement fails. On SQLite it does nothing.
func (s *Store) NotifyLater(channel, payload string, failed func(error)) {
	if s.dialect != Postgres {
		return
	}
	s.notifyOnce.Do(func() {
		s.notify = &notifier{wake: make(chan struct{}, 1), quit: make(chan struct{}), done: make(chan struct{})}
		go s.sendNotifications(s.notify)
	})
	n := s.notify
	if n == nil { // Close came first
		report(failed, fmt.Errorf("store: notify %s: the store is closed", channel))
		return
	}
	n.mu.Lock()
	switch {
	case n.closed:
		n.mu.Unlock()
		report(failed, fmt.Errorf("store: notify %s: the store is closed", channel))
		return
	case len(n.pending) >= maxPendingNotifications:
		n.mu.Unlock()
		report(failed, fmt.Errorf("store: notify %s: %d notifications already wait to be sent", channel, maxPendingNotifications))
		return
	}
	n.pending = append(n.pending, pendingNotification{channel: channel, payload: payload, failed: failed})
	n.mu.Unlock()
	select {
	case n.wake <- struct{}{}:
	default:
	}
}

func report(failed func(error), err error) {
	if failed != nil {
		failed(err)
	}
}

// sendNotifications is the notifier's goroutine: it sends batches until Close, then what is
// left.
func (s *Store) sendNotifications(n *notifier) {
	defer close(n.done)
	for {
		select {
		case <-n.wake:
			s.sendPending(n)
		case <-n.quit:
			s.sendPending(n)
			return
		}
	}
}

// sendPending sends everything queued, a batch per statement.
func (s *Store) sendPending(n *notifier) {
	for {
		n.mu.Lock()
		batch := n.pending[:min(len(n.pending), notifyLaterBatch)]
		n.pending = n.pending[len(batch):]
		if len(n.pending) == 0 {
			n.pending = nil
		}
		n.mu.Unlock()
		if len(batch) == 0 {
			return
		}
		channels := make([]string, len(batch))
		payloads := make([]string, len(batch))
		for i, p := range batch {
			channels[i], payloads[i] = p.channel, p.payload
		}
		ctx, cancel := context.WithTimeout(context.Background(), notifyLaterTimeout)
		// ORDER BY the ordinality: PostgreSQL evaluates a volatile output after the sort, so
		// the payloads go out in the order they were queued.
		_, err := s.writer.ExecContext(ctx, `SELECT pg_notify(u.c, u.p) FROM unnest($1::text[], $2::text[]) WITH ORDINALITY AS u(c, p, n) ORDER BY u.n`,
			pq.Array(channels), pq.Array(payloads))
		cancel()
		if err != nil {
			for _, p := range batch {
				report(p.failed, fmt.Errorf("store: notify %s: %w", p.channel, err))
			}
		}
	}
}

// closeNotifier sends what is pending and stops the notifier's goroutine.
func (s *Store) closeNotifier() {
	s.notifyOnce.Do(func() {}) // a NotifyLater after Close starts nothing
	n := s.notify
	if n == nil {
		return
	}
	n.mu.Lock()
	already := n.closed
	n.closed = true
	n.mu.Unlock()
	if !already {
		close(n.quit)
	}
	<-n.done
}
