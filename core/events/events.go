package events

import (
	"sync"

	"github.com/nexuskernel/nexus/sdk/announce"
)

// SubscriberBuffer bounds the events one subscription keeps between two takes. A claim loop
// takes its events on every wake-up and holds a handful; a thousand covers a burst of runs
// dispatching at once while the reader is busy (a 2,000-call burst lands in a few takes), at
// about a hundred bytes an event, and past it reading the store once is cheaper than
// remembering more.
const SubscriberBuffer = 1024

// Kind names an event's type, as a subscriber's log or metric spells it.
type Kind string

// The kinds of event, named as the executor plane's streams name them (sdk/announce).
const (
	KindWorkAvailable Kind = announce.EventWorkAvailable
	KindWorkCanceled  Kind = announce.EventWorkCanceled
)

// Event is one fact the engine announces after its commit; the types of this package are its
// only implementations.
type Event interface {
	// Kind names the event's type.
	Kind() Kind
	// addressed reports whether the event concerns executor id (a public id).
	addressed(id string) bool
}

// WorkAvailable: a tool row entered dispatched, claimable now by the executors it names.
type WorkAvailable struct {
	RunPublicID string
	TaskKey     string
	// ToolName is the served name of the row's tool.
	ToolName string
	// Executors are the public ids of the executors that may claim it: its addressee, or every
	// member of the pool it is addressed to.
	Executors []string
}

// Kind is KindWorkAvailable.
func (WorkAvailable) Kind() Kind { return KindWorkAvailable }

func (e WorkAvailable) addressed(id string) bool { return contains(e.Executors, id) }

// WorkCanceled: a dispatched row settled by anything other than its executor's commit.
type WorkCanceled struct {
	RunPublicID string
	TaskKey     string
	// Reason is the stream's reason word (docs/api.md#the-executor-plane).
	Reason string
	// Executors are the public ids of the executors that were told the row was available.
	Executors []string
}

// Kind is KindWorkCanceled.
func (WorkCanceled) Kind() Kind { return KindWorkCanceled }

func (e WorkCanceled) addressed(id string) bool { return contains(e.Executors, id) }

func contains(ids []string, id string) bool {
	for _, x := range ids {
		if x == id {
			return true
		}
	}
	return false
}

// Bus fans events out to this process's subscriptions. The zero value is not usable; call New.
type Bus struct {
	mu   sync.RWMutex
	subs map[*Subscription]struct{}
}

// New returns a bus with no subscriptions.
func New() *Bus { return &Bus{subs: map[*Subscription]struct{}{}} }

// Publish hands ev to every open subscription it concerns. Call it after the transaction that
// made ev true committed, never before and never after a rollback. It never blocks.
func (b *Bus) Publish(ev Event) {
	b.mu.RLock()
	defer b.mu.RUnlock()
	for s := range b.subs {
		if s.wants(ev) {
			s.post(ev)
		}
	}
}

// Subscribe opens a subscription to the events that concern any of the executors named by
// their public ids. Close it when done.
func (b *Bus) Subscribe(executors []string) *Subscription {
	s := &Subscription{bus: b, executors: append([]string(nil), executors...), wake: make(chan struct{}, 1), done: make(chan struct{})}
	b.mu.Lock()
	b.subs[s] = struct{}{}
	b.mu.Unlock()
	return s
}

// Subscription is one subscriber's bounded queue of events. Wait on Wake, then Take.
type Subscription struct {
	bus       *Bus
	executors []string
	wake      chan struct{}
	done      chan struct{}
	once      sync.Once

	mu     sync.Mutex
	queue  []Event
	lost   bool
	closed bool
}

func (s *Subscription) wants(ev Event) bool {
	for _, id := range s.executors {
		if ev.addressed(id) {
			return true
		}
	}
	return false
}

// post queues ev, or marks the subscription lost when SubscriberBuffer events wait already.
func (s *Subscription) post(ev Event) {
	s.mu.Lock()
	switch {
	case s.closed:
		s.mu.Unlock()
		return
	case len(s.queue) >= SubscriberBuffer:
		s.lost = true
	default:
		s.queue = append(s.queue, ev)
	}
	s.mu.Unlock()
	s.signal()
}

// Lose marks that events may have been missed, and wakes the reader.
func (s *Subscription) Lose() {
	s.mu.Lock()
	s.lost = true
	s.mu.Unlock()
	s.signal()
}

func (s *Subscription) signal() {
	select {
	case s.wake <- struct{}{}:
	default: // a wake-up is already waiting; it carries this event too
	}
}

// Wake receives a value when events are waiting.
func (s *Subscription) Wake() <-chan struct{} { return s.wake }

// Done is closed once the subscription is closed.
func (s *Subscription) Done() <-chan struct{} { return s.done }

// Take answers the events since the last Take, in publishing order, and whether any were
// dropped or may have been missed since then (lost); it clears both.
func (s *Subscription) Take() (evs []Event, lost bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	evs, lost = s.queue, s.lost
	s.queue, s.lost = nil, false
	return evs, lost
}

// Close ends the subscription; it is safe to call more than once.
func (s *Subscription) Close() {
	s.once.Do(func() {
		s.bus.mu.Lock()
		delete(s.bus.subs, s)
		s.bus.mu.Unlock()
		s.mu.Lock()
		s.closed, s.queue = true, nil
		s.mu.Unlock()
		close(s.done)
	})
}
