package executors

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/nexuskernel/nexus/core/events"
	"github.com/nexuskernel/nexus/core/runs"
	"github.com/nexuskernel/nexus/core/store"
)

// Event is one hint on an executor's stream (docs/api.md#the-executor-plane).
type Event struct {
	// Type is EventWorkAvailable or EventWorkCanceled.
	Type string
	// Kind is the row kind of work_available (KindToolCall); empty on work_canceled.
	Kind        string
	RunPublicID string
	TaskKey     string
	// ToolName is the served name of work_available; empty on work_canceled.
	ToolName string
	// Reason is work_canceled's: ReasonRunCanceled, ReasonTaskCanceled or ReasonExpired.
	Reason string
}

// Hub holds this instance's event streams and fans events out to them and, through PostgreSQL
// NOTIFY, to every other instance sharing the store (docs/development.md#how-the-kernel-runs-work).
type Hub struct {
	store   *store.Store
	channel string
	// origin names this instance in its notifications, so that it does not deliver twice what
	// it already delivered in process.
	origin string
	now    func() time.Time
	log    hclog.Logger
	ping   time.Duration
	// bus is the event feed this hub publishes every executor event to, this instance's and the
	// other instances' alike, after its streams have it: the feeds subscribe there (feed.go).
	bus *events.Bus

	mu      sync.Mutex
	streams map[int64]*executorStreams
	// byPublic indexes the same entries by public id, the form events are addressed in.
	byPublic map[string]*executorStreams
	// lost is set while notifications from other instances may be missed.
	lost bool
	// closed refuses new streams once the instance shuts down.
	closed bool

	// presenceMu orders the presence writes of opens and closes (see presence.go).
	presenceMu sync.Mutex

	stopListening func()
	stop          chan struct{}
	wg            sync.WaitGroup
}

// executorStreams are one executor's open streams and feeds (feed.go) on this instance.
type executorStreams struct {
	id       int64
	publicID string
	open     map[*Stream]struct{}
	feeds    map[*Feed]struct{}
	// connectedAt is the connected_at this instance last recorded for the executor.
	connectedAt int64
}

func newEntry(id int64, publicID string) *executorStreams {
	return &executorStreams{id: id, publicID: publicID, open: map[*Stream]struct{}{}, feeds: map[*Feed]struct{}{}}
}

// empty reports whether the executor holds nothing here any more: its presence ends.
func (e *executorStreams) empty() bool { return len(e.open) == 0 && len(e.feeds) == 0 }

// HubOptions configure a Hub.
type HubOptions struct {
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// Log receives what the hub absorbs (a failed notification or presence write).
	Log hclog.Logger
	// PingInterval replaces PingInterval (tests use a short one).
	PingInterval time.Duration
	// Events is the event feed the hub publishes executor events to; nil opens one of its own.
	Events *events.Bus
}

// NewHub returns a hub over s. Start it before serving streams. The hub listens on the executor
// wake-up channel, runs.WorkChannel (docs/development.md#how-the-kernel-runs-work), whose
// payloads carry kind "executor"; the run engine's kernel work crosses on the event feed's
// relay instead.
func NewHub(s *store.Store, o HubOptions) *Hub {
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Log == nil {
		o.Log = hclog.NewNullLogger()
	}
	if o.PingInterval <= 0 {
		o.PingInterval = PingInterval
	}
	if o.Events == nil {
		o.Events = events.New()
	}
	var b [8]byte
	_, _ = rand.Read(b[:])
	return &Hub{
		store: s, channel: s.Channel(runs.WorkChannel), origin: hex.EncodeToString(b[:]), now: o.Now, log: o.Log, ping: o.PingInterval, bus: o.Events,
		streams: map[int64]*executorStreams{}, byPublic: map[string]*executorStreams{}, stop: make(chan struct{}),
	}
}

// Start listens for the other instances' notifications (on PostgreSQL) and keeps the presence
// of executors with open streams fresh, until Close.
func (h *Hub) Start(ctx context.Context) error {
	stop, err := h.store.Subscribe(ctx, h.channel, subscription{h})
	if err != nil {
		return fmt.Errorf("executors: listen for work notifications: %w", err)
	}
	h.stopListening = stop
	h.wg.Add(1)
	go h.refreshPresence()
	return nil
}

// Close stops listening, closes every stream and stops the presence refresher.
func (h *Hub) Close() {
	h.CloseStreams()
	h.mu.Lock()
	stop := h.stopListening
	h.stopListening = nil
	select {
	case <-h.stop:
	default:
		close(h.stop)
	}
	h.mu.Unlock()
	if stop != nil {
		stop()
	}
	h.wg.Wait()
}

// CloseStreams closes every stream and feed and refuses new ones: a shutting-down server must
// not wait for streams that never end by themselves.
func (h *Hub) CloseStreams() {
	h.mu.Lock()
	h.closed = true
	all, feeds := h.allLocked(), h.feedsLocked()
	h.mu.Unlock()
	for _, s := range all {
		s.Close()
	}
	for _, f := range feeds {
		f.Close()
	}
}

// PingInterval is how often a stream writes its ": ping" comment.
func (h *Hub) PingInterval() time.Duration { return h.ping }

// Stream is one open event stream of one executor. Read Events until Done is closed.
type Stream struct {
	hub      *Hub
	entry    *executorStreams
	events   chan Event
	done     chan struct{}
	once     sync.Once
	openedAt int64
}

// Events delivers the stream's events in order.
func (s *Stream) Events() <-chan Event { return s.events }

// Done is closed when the stream ends: revocation, overflow, shutdown, or Close.
func (s *Stream) Done() <-chan struct{} { return s.done }

// Close ends the stream and releases its slot; it is safe to call more than once.
func (s *Stream) Close() {
	s.once.Do(func() {
		h := s.hub
		h.mu.Lock()
		close(s.done)
		delete(s.entry.open, s)
		last := s.entry.empty()
		if last && h.streams[s.entry.id] == s.entry {
			delete(h.streams, s.entry.id)
			delete(h.byPublic, s.entry.publicID)
		}
		h.mu.Unlock()
		if last {
			h.disconnected(s.entry)
		}
	})
}

// Open opens an event stream for the executor (internal id and public id). A ninth stream of
// one executor on this instance is ErrTooManyStreams (429 rate_limited); while the instance
// shuts down, 503 unavailable.
func (h *Hub) Open(ctx context.Context, executorID int64, publicID string) (*Stream, error) {
	at := store.Millis(h.now())
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return nil, errHubClosed
	}
	e := h.streams[executorID]
	if e == nil {
		e = newEntry(executorID, publicID)
		h.streams[executorID] = e
		h.byPublic[publicID] = e
	}
	if len(e.open) >= MaxStreams {
		h.mu.Unlock()
		return nil, ErrTooManyStreams
	}
	s := &Stream{hub: h, entry: e, events: make(chan Event, StreamBuffer), done: make(chan struct{}), openedAt: at}
	e.open[s] = struct{}{}
	h.mu.Unlock()
	h.connected(ctx, e, at)
	return s, nil
}

// CloseExecutor closes every stream and feed the executor holds on this instance (its
// revocation). A feed shared with other executors ends for them too; its reader opens another.
func (h *Hub) CloseExecutor(executorID int64) {
	h.mu.Lock()
	var all []*Stream
	var feeds []*Feed
	if e := h.streams[executorID]; e != nil {
		for s := range e.open {
			all = append(all, s)
		}
		for f := range e.feeds {
			feeds = append(feeds, f)
		}
	}
	h.mu.Unlock()
	for _, s := range all {
		s.Close()
	}
	for _, f := range feeds {
		f.Close()
	}
}

// Streams counts the event streams (not the feeds) the executor holds on this instance.
func (h *Hub) Streams(executorID int64) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	if e := h.streams[executorID]; e != nil {
		return len(e.open)
	}
	return 0
}

func (h *Hub) allLocked() []*Stream {
	var all []*Stream
	for _, e := range h.streams {
		for s := range e.open {
			all = append(all, s)
		}
	}
	return all
}

// feedsLocked answers every open feed once, though a feed may serve several executors.
func (h *Hub) feedsLocked() []*Feed {
	seen := map[*Feed]struct{}{}
	var all []*Feed
	for _, e := range h.streams {
		for f := range e.feeds {
			if _, dup := seen[f]; !dup {
				seen[f] = struct{}{}
				all = append(all, f)
			}
		}
	}
	return all
}

// deliver hands ev to every stream of the addressed executors on this instance, then publishes
// it to the event feed, where their feeds hear it. A stream whose buffer is full is closed
// rather than blocking the publisher or losing the event silently: its executor reconnects and
// reads its inbox. A feed never closes for falling behind (feed.go).
func (h *Hub) deliver(executorPublicIDs []string, ev Event) {
	var overflowed []*Stream
	h.mu.Lock()
	for _, id := range executorPublicIDs {
		e := h.byPublic[id]
		if e == nil {
			continue
		}
		for s := range e.open {
			select {
			case s.events <- ev:
			default:
				overflowed = append(overflowed, s)
			}
		}
	}
	switch ev.Type {
	case EventWorkAvailable:
		h.bus.Publish(events.WorkAvailable{RunPublicID: ev.RunPublicID, TaskKey: ev.TaskKey, ToolName: ev.ToolName, Executors: executorPublicIDs})
	case EventWorkCanceled:
		h.bus.Publish(events.WorkCanceled{RunPublicID: ev.RunPublicID, TaskKey: ev.TaskKey, Reason: ev.Reason, Executors: executorPublicIDs})
	}
	h.mu.Unlock()
	for _, s := range overflowed {
		h.log.Warn("closing an event stream that fell behind", "executor", s.entry.publicID, "buffer", StreamBuffer)
		s.Close()
	}
}

// Publish delivers ev to the addressed executors' streams on this instance at once, then tells
// the other instances through NOTIFY (PostgreSQL). Call it after the transaction that changed
// the rows committed: a hint must never announce work that a rollback took back. An error
// means the other instances were not told; this instance's streams already were.
func (h *Hub) Publish(ctx context.Context, executorPublicIDs []string, ev Event) error {
	return h.fanOut(executorPublicIDs, ev, func(payload string) error { return h.store.NotifyNow(ctx, h.channel, payload) })
}

// fanOut delivers ev to this instance's streams of the addressed executors, then hands each
// NOTIFY payload for the other instances (PostgreSQL) to notify, joining its errors.
func (h *Hub) fanOut(executorPublicIDs []string, ev Event, notify func(payload string) error) error {
	if len(executorPublicIDs) == 0 {
		return nil
	}
	h.deliver(executorPublicIDs, ev)
	if h.store.Dialect() != store.Postgres {
		return nil
	}
	var errs []error
	for _, p := range h.payloads(executorPublicIDs, ev) {
		if err := notify(p); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// WorkAvailable pushes work_available for a row that entered dispatched to its addressees
// (docs/development.md#how-the-kernel-runs-work): the run engine's signal after its commit.
// Failures are logged; the inbox stays authoritative.
func (h *Hub) WorkAvailable(runPublicID, taskKey, toolName string, executorPublicIDs []string) {
	h.publishLogged(executorPublicIDs, availableEvent(runPublicID, taskKey, toolName))
}

func availableEvent(runPublicID, taskKey, toolName string) Event {
	return Event{Type: EventWorkAvailable, Kind: KindToolCall, RunPublicID: runPublicID, TaskKey: taskKey, ToolName: toolName}
}

// WorkCanceled pushes work_canceled for a dispatched row that settled by anything other than
// its executor's own commit, to the executors that were sent work_available for it.
func (h *Hub) WorkCanceled(runPublicID, taskKey string, executorPublicIDs []string, reason string) {
	h.publishLogged(executorPublicIDs, Event{Type: EventWorkCanceled, RunPublicID: runPublicID, TaskKey: taskKey, Reason: reason})
}

// publishLogged is the fire-and-forget Publish of the run engine's signals, which run after its
// commit on the committing request's goroutine: the streams of this instance get the event at
// once, and the NOTIFY for the other instances is queued (store.NotifyLater) rather than waited
// for, so that the request answers without another round trip. A NOTIFY that cannot be sent is
// logged; its loss costs latency, never work (the inbox stays authoritative).
func (h *Hub) publishLogged(ids []string, ev Event) {
	lost := func(err error) {
		h.log.Warn("notifying other instances of executor work failed", "event", ev.Type, "run", ev.RunPublicID, "task", ev.TaskKey, "error", err)
	}
	_ = h.fanOut(ids, ev, func(payload string) error {
		h.store.NotifyLater(h.channel, payload, lost)
		return nil
	})
}
