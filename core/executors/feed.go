package executors

import (
	"context"
	"sync"

	"github.com/nexuskernel/nexus/core/store"
)

// A Feed is an in-process subscriber of the push hub that never falls behind, for a reader that
// acts on the inbox rather than on each event (a plugin's claim loop). An HTTP stream owes its
// client every frame in order, so a stream that falls StreamBuffer events behind is closed and
// its client reconnects; a feed instead folds what it hears into one pending piece of news:
//
//   - every work_available, however many, becomes one wake-up: "work is in the inbox";
//   - each work_canceled is kept, once, in a set of at most MaxFeedCancels rows; past that the
//     feed forgets them and says so (CancelsLost), and the reader re-reads the claims it holds;
//   - a loss of the other instances' notifications (PostgreSQL) says both at once, since what
//     was missed may have been either.
//
// Publishing to a feed is a few map and channel operations under the feed's own lock and never
// waits for its reader, so a slow reader costs the publisher nothing and the reader at most a
// coalesced wake-up. A feed ends only when its executor is revoked, the hub shuts down, or it
// is closed; its reader then opens another (or stops) and reads the inbox.
//
// A feed counts as its executors' presence, as an open stream does (presence.go), and not
// toward MaxStreams, which bounds a client's sockets. docs/plugins.md ("When a subscriber falls
// behind") describes every subscriber's behaviour for operators.

// MaxFeedCancels bounds the cancellations a feed keeps between two takes: a reader that takes
// its news on every wake-up holds a handful; a thousand covers a stop of many runs at once while
// the reader is busy, at about a hundred bytes a row, and beyond it re-reading the few claims
// the reader holds is cheaper than remembering more.
const MaxFeedCancels = 1024

// TaskRef names a row by its run and task key.
type TaskRef struct {
	RunPublicID string
	TaskKey     string
}

// FeedNews is what a feed heard since the last Take.
type FeedNews struct {
	// Available says that work_available arrived, or may have been missed: read the inbox.
	Available bool
	// Canceled are the rows work_canceled named, each once, in arrival order.
	Canceled []TaskRef
	// CancelsLost says that cancellations were dropped (more than MaxFeedCancels) or may have
	// been missed: re-read every claim held.
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
	wake    chan struct{}
	done    chan struct{}
	once    sync.Once

	mu       sync.Mutex
	news     FeedNews
	canceled map[TaskRef]struct{}
}

// OpenFeed opens one feed for several executors at once (a plugin serving several workspaces has
// one executor in each). While the instance shuts down it answers 503 unavailable.
func (h *Hub) OpenFeed(ctx context.Context, members []FeedMember) (*Feed, error) {
	at := store.Millis(h.now())
	f := &Feed{hub: h, wake: make(chan struct{}, 1), done: make(chan struct{}), canceled: map[TaskRef]struct{}{}}
	var fresh []*executorStreams
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return nil, errHubClosed
	}
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
func (f *Feed) Wake() <-chan struct{} { return f.wake }

// Done is closed when the feed ends: revocation, shutdown, or Close.
func (f *Feed) Done() <-chan struct{} { return f.done }

// Take answers the news since the last Take and clears it.
func (f *Feed) Take() FeedNews {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := f.news
	f.news = FeedNews{}
	clear(f.canceled)
	return n
}

// Close ends the feed and releases its presence; it is safe to call more than once.
func (f *Feed) Close() {
	f.once.Do(func() {
		h := f.hub
		var last []*executorStreams
		h.mu.Lock()
		close(f.done)
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

// post folds ev into the pending news and wakes the reader; it never blocks.
func (f *Feed) post(ev Event) {
	f.mu.Lock()
	switch ev.Type {
	case EventWorkAvailable:
		f.news.Available = true
	case EventWorkCanceled:
		ref := TaskRef{RunPublicID: ev.RunPublicID, TaskKey: ev.TaskKey}
		if _, seen := f.canceled[ref]; seen || f.news.CancelsLost {
			break
		}
		if len(f.canceled) >= MaxFeedCancels {
			// The reader re-reads every claim it holds, which covers the kept ones too.
			f.news.Canceled, f.news.CancelsLost = nil, true
			clear(f.canceled)
			break
		}
		f.canceled[ref] = struct{}{}
		f.news.Canceled = append(f.news.Canceled, ref)
	}
	f.mu.Unlock()
	f.signal()
}

// missed records that events may have been missed: both kinds at once.
func (f *Feed) missed() {
	f.mu.Lock()
	f.news.Available, f.news.CancelsLost, f.news.Canceled = true, true, nil
	clear(f.canceled)
	f.mu.Unlock()
	f.signal()
}

func (f *Feed) signal() {
	select {
	case f.wake <- struct{}{}:
	default: // a wake-up is already waiting; it carries this news too
	}
}
