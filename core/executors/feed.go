package executors

import (
	"context"
	"sync"

	"github.com/nexuskernel/nexus/core/events"
	"github.com/nexuskernel/nexus/core/store"
)

// A Feed is an executor's subscription to the engine's event feed (core/events) for a reader
// that acts on the rows rather than on each event's frame (a plugin's claim loop). An HTTP stream
// owes its client every frame in order, so a stream that falls StreamBuffer events behind is
// closed and its client reconnects; a feed instead keeps at most events.SubscriberBuffer events
// between two takes, and its Take folds them into news:
//
//   - each work_available names its row, once (Rows), so that the reader claims it without
//     reading the inbox: the wake-up's path to a claim has no read of its own;
//   - each work_canceled is kept, once (Canceled);
//   - past the bound, and on a loss of the other instances' notifications (PostgreSQL), the
//     feed says that events may have been missed (Missed, with Available and CancelsLost): the
//     reader reads the inbox and re-reads the claims it holds.
//
// Publishing to a feed is a few slice and channel operations under the subscription's own lock
// and never waits for its reader, so a slow reader costs the publisher nothing and the reader at
// most one read of the inbox. A feed ends only when its executor is revoked, the hub shuts down,
// or it is closed; its reader then opens another (or stops) and reads the inbox.
//
// A feed counts as its executors' presence, as an open stream does (presence.go), and not
// toward MaxStreams, which bounds a client's sockets. docs/plugins.md ("When a subscriber falls
// behind") describes every subscriber's behaviour for operators.

// MaxFeedEvents bounds the events a feed keeps between two takes: the event feed's bound for
// every subscriber (events.SubscriberBuffer).
const MaxFeedEvents = events.SubscriberBuffer

// TaskRef names a row by its run and task key.
type TaskRef struct {
	RunPublicID string
	TaskKey     string
}

// FeedRow is a row work_available named, and the member of the feed it named (its public id).
type FeedRow struct {
	TaskRef
	Executor string
}

// FeedNews is what a feed heard since the last Take.
type FeedNews struct {
	// Available says that work_available arrived, or may have been missed.
	Available bool
	// Rows are the rows work_available named, each once, in arrival order; nil when Missed.
	Rows []FeedRow
	// Missed says that events may have been missed: read the inbox, which lists every row.
	Missed bool
	// Canceled are the rows work_canceled named, each once, in arrival order.
	Canceled []TaskRef
	// CancelsLost says that cancellations may have been missed: re-read every claim held.
	CancelsLost bool
}

// Empty reports whether there is nothing to act on.
func (n FeedNews) Empty() bool { return !n.Available && len(n.Canceled) == 0 && !n.CancelsLost }

// FeedMember is one executor a feed listens for: its internal and public ids.
type FeedMember struct {
	ID       int64
	PublicID string
}

// Feed is one open feed. Wait on Wake, then Take; when Done is closed the feed has ended.
type Feed struct {
	hub     *Hub
	entries []*executorStreams
	sub     *events.Subscription
	members map[string]bool
	once    sync.Once
}

// OpenFeed opens one feed for several executors at once (a plugin serving several workspaces has
// one executor in each). While the instance shuts down it answers 503 unavailable.
func (h *Hub) OpenFeed(ctx context.Context, members []FeedMember) (*Feed, error) {
	return h.open(ctx, members, true)
}

// OpenPresence holds the executors online as a feed does, and hears no event: nobody takes its
// news, so it keeps none (a reader's own feed hears them).
func (h *Hub) OpenPresence(ctx context.Context, members []FeedMember) (*Feed, error) {
	return h.open(ctx, members, false)
}

// open opens a feed of members that subscribes to their events when hear says so.
func (h *Hub) open(ctx context.Context, members []FeedMember, hear bool) (*Feed, error) {
	at := store.Millis(h.now())
	f := &Feed{hub: h, members: map[string]bool{}}
	var ids []string
	for _, m := range members {
		if !f.members[m.PublicID] {
			f.members[m.PublicID] = true
			ids = append(ids, m.PublicID)
		}
	}
	var fresh []*executorStreams
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return nil, errHubClosed
	}
	// Subscribed under the hub's lock, as the hub delivers under it: an event delivered after
	// this open reaches the feed.
	if !hear {
		ids = nil
	}
	f.sub = h.bus.Subscribe(ids)
	for _, m := range members {
		e := h.streams[m.ID]
		if e == nil {
			e = newEntry(m.ID, m.PublicID)
			h.streams[m.ID] = e
			h.byPublic[m.PublicID] = e
		}
		if _, twice := e.feeds[f]; twice {
			continue
		}
		e.feeds[f] = struct{}{}
		f.entries = append(f.entries, e)
		fresh = append(fresh, e)
	}
	h.mu.Unlock()
	for _, e := range fresh {
		h.connected(ctx, e, at)
	}
	return f, nil
}

// Wake receives a value when news is waiting.
func (f *Feed) Wake() <-chan struct{} { return f.sub.Wake() }

// Done is closed when the feed ends: revocation, shutdown, or Close.
func (f *Feed) Done() <-chan struct{} { return f.sub.Done() }

// Take answers the news since the last Take and clears it.
func (f *Feed) Take() FeedNews {
	evs, lost := f.sub.Take()
	var n FeedNews
	var rows, canceled map[TaskRef]bool
	for _, ev := range evs {
		switch e := ev.(type) {
		case events.WorkAvailable:
			n.Available = true
			ref := TaskRef{RunPublicID: e.RunPublicID, TaskKey: e.TaskKey}
			if rows == nil {
				rows = map[TaskRef]bool{}
			}
			if !rows[ref] {
				rows[ref] = true
				n.Rows = append(n.Rows, FeedRow{TaskRef: ref, Executor: f.memberOf(e.Executors)})
			}
		case events.WorkCanceled:
			ref := TaskRef{RunPublicID: e.RunPublicID, TaskKey: e.TaskKey}
			if canceled == nil {
				canceled = map[TaskRef]bool{}
			}
			if !canceled[ref] {
				canceled[ref] = true
				n.Canceled = append(n.Canceled, ref)
			}
		}
	}
	if lost {
		// What was dropped may have been either kind: the inbox and the claims held say.
		n = FeedNews{Available: true, Missed: true, CancelsLost: true}
	}
	return n
}

// memberOf answers the first of ids that is a member of the feed.
func (f *Feed) memberOf(ids []string) string {
	for _, id := range ids {
		if f.members[id] {
			return id
		}
	}
	return ""
}

// Close ends the feed and releases its presence; it is safe to call more than once.
func (f *Feed) Close() {
	f.once.Do(func() {
		h := f.hub
		var last []*executorStreams
		h.mu.Lock()
		f.sub.Close()
		for _, e := range f.entries {
			delete(e.feeds, f)
			if e.empty() && h.streams[e.id] == e {
				delete(h.streams, e.id)
				delete(h.byPublic, e.publicID)
				last = append(last, e)
			}
		}
		h.mu.Unlock()
		for _, e := range last {
			h.disconnected(e)
		}
	})
}

// missed records that events may have been missed: both kinds at once.
func (f *Feed) missed() { f.sub.Lose() }
