package events

import (
	"crypto/rand"
	"encoding/hex"
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

// Bus fans events out to this process's subscriptions, and keeps the last Window member events
// for streams that resume. The zero value is not usable; call New.
type Bus struct {
	// epoch names this bus in its member events' ids: an id another bus (another instance, or
	// this one before a restart) gave cannot resume here.
	epoch string

	mu   sync.RWMutex
	subs map[*Subscription]struct{}
	// seq numbers member events in publishing order; window holds the last Window of them, a
	// ring whose oldest entry is window[(seq % Window)] once it is full.
	seq    uint64
	window []Stamped
	// forward hands the events published here that cross instances (Crosses; not those heard
	// from another instance) to the other instances, a commit's together; nil on a single
	// instance.
	forward func([]Event)
}

// Window bounds the member events a bus keeps for streams that resume (Last-Event-ID): some
// seconds of a busy instance's events (a run of a few rounds makes a few dozen), at a few
// hundred bytes each. A stream whose last event left the window is told to re-read (resync).
const Window = 4096

// Stamped is a member event with its number on this bus; 0 for a ModelDelta, which is not
// numbered.
type Stamped struct {
	Seq   uint64
	Event MemberEvent
}

// New returns a bus with no subscriptions and a fresh epoch.
func New() *Bus {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return &Bus{epoch: hex.EncodeToString(b[:]), subs: map[*Subscription]struct{}{}}
}

// Epoch names this bus in the ids of its member events (docs/api.md#events).
func (b *Bus) Epoch() string { return b.epoch }

// Forward sets where member events published on this bus go to reach the other instances
// (the notification channel); call it before publishing.
func (b *Bus) Forward(f func([]Event)) {
	b.mu.Lock()
	b.forward = f
	b.mu.Unlock()
}

// Publish hands ev to every open subscription it concerns, and forwards a member event to the
// other instances. Call it after the transaction that made ev true committed, never before and
// never after a rollback. It never blocks.
func (b *Bus) Publish(ev Event) { b.PublishAll([]Event{ev}) }

// PublishAll is Publish for the events one commit made true, in order: the member events among
// them reach the other instances together.
func (b *Bus) PublishAll(evs []Event) {
	var crossing []Event
	for _, ev := range evs {
		b.fanOut(ev)
		if Crosses(ev) {
			crossing = append(crossing, ev)
		}
	}
	if len(crossing) == 0 {
		return
	}
	b.mu.RLock()
	forward := b.forward
	b.mu.RUnlock()
	if forward != nil {
		forward(crossing)
	}
}

// Crosses reports whether ev goes to the other instances: member events and kernel work do;
// the executors' events cross on the push hub's own channel.
func Crosses(ev Event) bool {
	switch ev.(type) {
	case MemberEvent, KernelWork:
		return true
	}
	return false
}

// PublishRemote is Publish for an event another instance published: a member event is numbered
// and fanned out here, and nothing is forwarded again.
func (b *Bus) PublishRemote(ev Event) { b.fanOut(ev) }

// fanOut hands ev to this process's subscriptions, numbering a member event.
func (b *Bus) fanOut(ev Event) {
	if m, ok := ev.(MemberEvent); ok {
		b.publishMember(m)
		return
	}
	b.mu.RLock()
	defer b.mu.RUnlock()
	for s := range b.subs {
		if s.wants(ev) {
			s.post(Stamped{}, ev)
		}
	}
}

func (b *Bus) publishMember(ev MemberEvent) {
	b.mu.Lock()
	st := Stamped{Event: ev}
	if _, delta := ev.(ModelDelta); !delta {
		b.seq++
		st.Seq = b.seq
		if len(b.window) < Window {
			b.window = append(b.window, st)
		} else {
			b.window[(b.seq-1)%Window] = st
		}
	}
	for s := range b.subs {
		if s.wants(ev) {
			s.post(st, ev)
		}
	}
	b.mu.Unlock()
}

// LoseAll tells every subscription that events may have been missed (the other instances'
// notifications were interrupted).
func (b *Bus) LoseAll() {
	b.mu.RLock()
	defer b.mu.RUnlock()
	for s := range b.subs {
		s.Lose()
	}
}

// Subscribe opens a subscription to the events that concern any of the executors named by
// their public ids. Close it when done.
func (b *Bus) Subscribe(executors []string) *Subscription {
	s := newSubscription(b)
	s.executors = append([]string(nil), executors...)
	b.mu.Lock()
	b.subs[s] = struct{}{}
	b.mu.Unlock()
	return s
}

// SubscribeKernelWork opens a subscription to the kernel work other instances announce: every
// KernelWork whose Origin is not origin.
func (b *Bus) SubscribeKernelWork(origin string) *Subscription {
	s := newSubscription(b)
	s.kernelFrom = origin
	s.kernel = true
	b.mu.Lock()
	b.subs[s] = struct{}{}
	b.mu.Unlock()
	return s
}

// MemberFilter chooses the member events a subscription hears: those of one workspace, or of
// every workspace when Workspace is empty (the server's own readers), narrowed to a run and a
// conversation when those are set; and the deployment's own events (a plugin's state, whose
// scope names no workspace) when Deployment is set or Workspace is empty.
type MemberFilter struct {
	Workspace, Run, Conversation string
	// Deployment admits the events that concern no workspace.
	Deployment bool
	// SkipDeltas leaves out ModelDelta, for a reader that follows settled state only.
	SkipDeltas bool
}

func (f MemberFilter) wants(ev Event) bool {
	m, ok := ev.(MemberEvent)
	if !ok {
		return false
	}
	if _, delta := m.(ModelDelta); delta && f.SkipDeltas {
		return false
	}
	w := m.Where()
	if w.Workspace == "" && f.Workspace != "" && !f.Deployment {
		return false
	}
	return (f.Workspace == "" || w.Workspace == "" || w.Workspace == f.Workspace) && (f.Run == "" || w.Run == f.Run) &&
		(f.Conversation == "" || w.Conversation == f.Conversation)
}

// SubscribeMembers opens a subscription to the member events f chooses. With resume, the
// subscription starts with the window's events after number after, and resumed reports whether
// the window still held every event since then; without it (or when it did not), the
// subscription hears what is published from now on. at is the number of the last event
// published before the subscription opened.
func (b *Bus) SubscribeMembers(f MemberFilter, resume bool, after uint64) (s *Subscription, resumed bool, at uint64) {
	s = newSubscription(b)
	s.filter = &f
	b.mu.Lock()
	defer b.mu.Unlock()
	// The window holds numbers oldest to b.seq; it serves after when it holds after+1.
	oldest := b.seq - uint64(len(b.window)) + 1
	if resume && after <= b.seq && after+1 >= oldest {
		resumed = true
		for n := after + 1; n <= b.seq; n++ {
			st := b.window[(n-1)%Window]
			if f.wants(st.Event) {
				s.queue = append(s.queue, queued{seq: st.Seq, ev: st.Event})
			}
		}
		s.replayed = len(s.queue)
		if len(s.queue) > 0 {
			s.wake <- struct{}{}
		}
	}
	b.subs[s] = struct{}{}
	return s, resumed, b.seq
}

// Subscription is one subscriber's bounded queue of events. Wait on Wake, then Take.
type Subscription struct {
	bus       *Bus
	executors []string
	// filter chooses member events; nil for an executors' subscription.
	filter *MemberFilter
	// kernel marks a subscription to the kernel work of instances other than kernelFrom.
	kernel     bool
	kernelFrom string
	wake       chan struct{}
	done       chan struct{}
	once       sync.Once

	mu    sync.Mutex
	queue []queued
	// replayed counts the window's events a resumed subscription started with, which do not
	// count toward SubscriberBuffer until the first take.
	replayed int
	lost     bool
	closed   bool
}

func newSubscription(b *Bus) *Subscription {
	return &Subscription{bus: b, wake: make(chan struct{}, 1), done: make(chan struct{})}
}

func (s *Subscription) wants(ev Event) bool {
	if s.kernel {
		w, ok := ev.(KernelWork)
		return ok && w.Origin != s.kernelFrom
	}
	if s.filter != nil {
		return s.filter.wants(ev)
	}
	for _, id := range s.executors {
		if ev.addressed(id) {
			return true
		}
	}
	return false
}

// post queues ev (st when it is a member event), or marks the subscription lost when
// SubscriberBuffer events wait already.
func (s *Subscription) post(st Stamped, ev Event) {
	s.mu.Lock()
	switch {
	case s.closed:
		s.mu.Unlock()
		return
	case len(s.queue)-s.replayed >= SubscriberBuffer:
		s.lost = true
	default:
		s.queue = append(s.queue, queued{seq: st.Seq, ev: ev})
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
	q, lost := s.take()
	if len(q) > 0 {
		evs = make([]Event, len(q))
		for i, e := range q {
			evs[i] = e.ev
		}
	}
	return evs, lost
}

// TakeStamped is Take for a member subscription (SubscribeMembers), with each event's number on
// the bus.
func (s *Subscription) TakeStamped() (sts []Stamped, lost bool) {
	q, lost := s.take()
	for _, e := range q {
		if m, ok := e.ev.(MemberEvent); ok {
			sts = append(sts, Stamped{Seq: e.seq, Event: m})
		}
	}
	return sts, lost
}

func (s *Subscription) take() (q []queued, lost bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	q, lost = s.queue, s.lost
	s.queue, s.lost, s.replayed = nil, false, 0
	return q, lost
}

// queued is one event waiting in a subscription, with its number when it is a member event.
type queued struct {
	seq uint64
	ev  Event
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
