package events_test

import (
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/nexuskernel/nexus/core/events"
)

func take(t *testing.T, s *events.Subscription) ([]events.Event, bool) {
	t.Helper()
	select {
	case <-s.Wake():
		return s.Take()
	case <-time.After(10 * time.Second):
		t.Fatal("no wake-up within 10 s")
	}
	return nil, false
}

func asleep(t *testing.T, s *events.Subscription) {
	t.Helper()
	select {
	case <-s.Wake():
		evs, lost := s.Take()
		t.Fatalf("an unexpected wake-up: %v lost %v", evs, lost)
	default:
	}
}

// TestSubscribersHearWhatConcernsThem: each subscription hears, in order, the events that name
// one of its executors, and nothing else.
func TestSubscribersHearWhatConcernsThem(t *testing.T) {
	t.Parallel()
	b := events.New()
	a, c := b.Subscribe([]string{"ex-a"}), b.Subscribe([]string{"ex-b", "ex-c"})
	defer a.Close()
	defer c.Close()
	first := events.WorkAvailable{RunPublicID: "r", TaskKey: "r1t0", ToolName: "t", Executors: []string{"ex-a", "ex-b"}}
	second := events.WorkCanceled{RunPublicID: "r", TaskKey: "r1t0", Reason: "run_canceled", Executors: []string{"ex-a"}}
	third := events.WorkAvailable{RunPublicID: "r", TaskKey: "r1t1", ToolName: "t", Executors: []string{"ex-c"}}
	b.Publish(first)
	b.Publish(second)
	b.Publish(third)
	b.Publish(events.WorkAvailable{RunPublicID: "r", TaskKey: "r1t2", Executors: []string{"ex-z"}})
	evs, lost := take(t, a)
	if diff := cmp.Diff([]events.Event{first, second}, evs); diff != "" || lost {
		t.Fatalf("a heard (-want +got):\n%s lost %v", diff, lost)
	}
	evs, lost = take(t, c)
	if diff := cmp.Diff([]events.Event{first, third}, evs); diff != "" || lost {
		t.Fatalf("c heard (-want +got):\n%s lost %v", diff, lost)
	}
	asleep(t, a)
	if first.Kind() != events.KindWorkAvailable || second.Kind() != events.KindWorkCanceled {
		t.Fatal("kinds")
	}
}

// TestASubscriberFallsBehindWithoutBlocking: a subscription nobody reads keeps SubscriberBuffer
// events, then drops the rest and says so, and never makes the publisher wait.
func TestASubscriberFallsBehindWithoutBlocking(t *testing.T) {
	t.Parallel()
	b := events.New()
	s := b.Subscribe([]string{"ex"})
	defer s.Close()
	done := make(chan struct{})
	go func() {
		defer close(done)
		for range 10 * events.SubscriberBuffer {
			b.Publish(events.WorkAvailable{RunPublicID: "r", TaskKey: "r1t0", Executors: []string{"ex"}})
		}
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("publishing to an unread subscription blocked")
	}
	evs, lost := take(t, s)
	if len(evs) != events.SubscriberBuffer || !lost {
		t.Fatalf("%d events kept, lost %v", len(evs), lost)
	}
	asleep(t, s)
	b.Publish(events.WorkCanceled{RunPublicID: "r", TaskKey: "r1t0", Executors: []string{"ex"}})
	if evs, lost := take(t, s); len(evs) != 1 || lost {
		t.Fatalf("after the take: %v lost %v", evs, lost)
	}
}

// TestLoseAndClose: Lose wakes the subscription with lost set; a closed subscription is done
// and hears nothing more.
func TestLoseAndClose(t *testing.T) {
	t.Parallel()
	b := events.New()
	s := b.Subscribe([]string{"ex"})
	s.Lose()
	if evs, lost := take(t, s); len(evs) != 0 || !lost {
		t.Fatalf("after Lose: %v lost %v", evs, lost)
	}
	s.Close()
	s.Close()
	select {
	case <-s.Done():
	default:
		t.Fatal("a closed subscription is not done")
	}
	b.Publish(events.WorkAvailable{RunPublicID: "r", TaskKey: "r1t0", Executors: []string{"ex"}})
	if evs, lost := s.Take(); len(evs) != 0 || lost {
		t.Fatalf("a closed subscription heard %v lost %v", evs, lost)
	}
}

// TestMemberWindow: member events are numbered; a subscription resumes after a number the
// window holds with every event of its filter since then, and not after one it no longer holds.
func TestMemberWindow(t *testing.T) {
	t.Parallel()
	b := events.New()
	ws := events.Scope{Workspace: "w", Run: "r"}
	b.Publish(events.RunStatus{Scope: ws, Status: "running"})
	b.Publish(events.RunStatus{Scope: events.Scope{Workspace: "other"}, Status: "running"})
	b.Publish(events.TaskSettled{Scope: ws, Row: events.Row{TaskKey: "s1", TaskKind: "tool_task"}, Status: "completed"})
	s, resumed, at := b.SubscribeMembers(events.MemberFilter{Workspace: "w"}, true, 1)
	defer s.Close()
	if !resumed || at != 3 {
		t.Fatalf("resumed %v at %d; want true at 3", resumed, at)
	}
	<-s.Wake()
	sts, lost := s.TakeStamped()
	if lost || len(sts) != 1 || sts[0].Seq != 3 || sts[0].Event.Kind() != events.KindTaskSettled {
		t.Fatalf("resumed with %+v lost %v; want the settle, number 3", sts, lost)
	}
	for range events.Window {
		b.Publish(events.RunStatus{Scope: events.Scope{Workspace: "other"}, Status: "running"})
	}
	old, resumed, _ := b.SubscribeMembers(events.MemberFilter{Workspace: "w"}, true, 1)
	defer old.Close()
	if resumed {
		t.Fatal("resumed after a number the window no longer holds")
	}
	if evs, _ := old.Take(); len(evs) != 0 {
		t.Fatalf("an unresumed subscription holds %v", evs)
	}
	fresh, resumed, at := b.SubscribeMembers(events.MemberFilter{Workspace: "w"}, true, 3+events.Window)
	defer fresh.Close()
	if !resumed || at != 3+events.Window {
		t.Fatalf("resume at the head: resumed %v at %d", resumed, at)
	}
	b.Publish(events.AskWaiting{Scope: events.Scope{Workspace: "w", Run: "r2"}, TaskKey: "k"})
	if evs, _ := take(t, fresh); len(evs) != 1 || evs[0].(events.AskWaiting).Run != "r2" {
		t.Fatalf("after resuming at the head: %v", evs)
	}
	narrow, _, _ := b.SubscribeMembers(events.MemberFilter{Workspace: "w", Run: "r"}, false, 0)
	defer narrow.Close()
	b.Publish(events.AskWaiting{Scope: events.Scope{Workspace: "w", Run: "r2"}, TaskKey: "k"})
	asleep(t, narrow)
}

// TestRelay: a member event published on one bus reaches another through the relay's payload,
// numbered there, not sent back; a payload the bus sent itself, and one that is not an event,
// publish nothing; Lost and Live tell every subscription that events may have been missed.
func TestRelay(t *testing.T) {
	t.Parallel()
	one, two := events.New(), events.New()
	var failed []error
	var toTwo, toOne *events.Relay
	toTwo = events.NewRelay(two, func(p string) { toOne.Notified(p) })
	toOne = events.NewRelay(one, func(p string) { toTwo.Notified(p) })
	toOne.Failed = func(err error) { failed = append(failed, err) }
	toTwo.Failed = toOne.Failed
	onTwo, _, _ := two.SubscribeMembers(events.MemberFilter{}, false, 0)
	defer onTwo.Close()
	onOne, _, _ := one.SubscribeMembers(events.MemberFilter{}, false, 0)
	defer onOne.Close()
	ev := events.TaskClaimed{Scope: events.Scope{Workspace: "w", Run: "r", Conversation: "c"}, Row: events.Row{TaskKey: "s1", TaskKind: "tool_task", ToolName: "t"}, Executor: "ex", Generation: 2}
	one.Publish(ev)
	<-onTwo.Wake()
	sts, lost := onTwo.TakeStamped()
	if lost || len(sts) != 1 || sts[0].Event != events.MemberEvent(ev) || sts[0].Seq != 1 {
		t.Fatalf("the other bus heard %+v lost %v", sts, lost)
	}
	<-onOne.Wake()
	if sts, _ := onOne.TakeStamped(); len(sts) != 1 {
		t.Fatalf("the publishing bus heard %d events, want its own once", len(sts))
	}
	toTwo.Notified("not json")
	toTwo.Notified(`x [{"k":"no.such","e":{}}]`)
	if len(failed) != 2 {
		t.Fatalf("failed %v; want both bad payloads reported", failed)
	}
	asleep(t, onTwo)
	toTwo.Lost()
	if _, lost := take(t, onTwo); !lost {
		t.Fatal("Lost did not reach the subscription")
	}
	toTwo.Live()
	if _, lost := take(t, onTwo); !lost {
		t.Fatal("Live did not tell the subscription that events may have been missed")
	}
}

// TestRelayCoalescesDeltas: a run's model deltas cross as one piece of text, sent before the
// run's next other event, or after DeltaDelay when nothing follows; text past DeltaBytes starts a
// new piece. Deltas are not numbered and never enter the window.
func TestRelayCoalescesDeltas(t *testing.T) {
	t.Parallel()
	one, two := events.New(), events.New()
	var sent atomic.Int32
	toTwo := events.NewRelay(two, func(string) {})
	events.NewRelay(one, func(p string) { sent.Add(1); toTwo.Notified(p) })
	sub, _, _ := two.SubscribeMembers(events.MemberFilter{}, false, 0)
	defer sub.Close()
	scope := events.Scope{Workspace: "w", Run: "r"}
	for _, piece := range []string{"Ship ", "on ", "Friday."} {
		one.Publish(events.ModelDelta{Scope: scope, TaskKey: "r1", Attempt: 1, Text: piece})
	}
	one.Publish(events.ModelDelta{Scope: events.Scope{Workspace: "w", Run: "other"}, TaskKey: "r1", Attempt: 1, Text: "elsewhere"})
	sealed := events.RoundSealed{Scope: scope, TaskKey: "r1", Round: 1, Finish: "stop"}
	one.Publish(sealed)
	<-sub.Wake()
	sts, lost := sub.TakeStamped()
	want := []events.Stamped{{Event: events.ModelDelta{Scope: scope, TaskKey: "r1", Attempt: 1, Text: "Ship on Friday."}}, {Seq: 1, Event: sealed}}
	if diff := cmp.Diff(want, sts); diff != "" || lost || sent.Load() != 1 {
		t.Fatalf("the other instance heard (-want +got):\n%s lost %v, %d payloads", diff, lost, sent.Load())
	}
	evs, _ := take(t, sub) // the other run's text, after DeltaDelay
	if len(evs) != 1 || evs[0].(events.ModelDelta).Text != "elsewhere" {
		t.Fatalf("after the delay: %v", evs)
	}
	big := strings.Repeat("x", events.DeltaBytes)
	one.Publish(events.ModelDelta{Scope: scope, TaskKey: "r2", Attempt: 1, Text: big})
	one.Publish(events.ModelDelta{Scope: scope, TaskKey: "r2", Attempt: 1, Text: "y"})
	got := ""
	for n := 0; n < 2; {
		evs, _ := take(t, sub)
		for _, ev := range evs {
			got += ev.(events.ModelDelta).Text
			n++
		}
	}
	if got != big+"y" {
		t.Fatalf("past DeltaBytes the pieces spell %d bytes", len(got))
	}
	if fresh, resumed, at := two.SubscribeMembers(events.MemberFilter{}, true, 0); !resumed || at != 1 {
		t.Fatalf("the window: resumed %v at %d; want the seal only", resumed, at)
	} else {
		fresh.Close()
	}
}

// TestRelayBatches: the member events of one PublishAll cross in one payload, or in as few as
// MaxPayload allows, in order; executor events do not cross.
func TestRelayBatches(t *testing.T) {
	t.Parallel()
	one, two := events.New(), events.New()
	var sizes []int
	toTwo := events.NewRelay(two, func(string) {})
	events.NewRelay(one, func(p string) { sizes = append(sizes, len(p)); toTwo.Notified(p) })
	sub, _, _ := two.SubscribeMembers(events.MemberFilter{}, false, 0)
	defer sub.Close()
	scope := events.Scope{Workspace: "w", Run: "r"}
	one.PublishAll([]events.Event{events.RunStatus{Scope: scope, Status: "running"}, events.WorkAvailable{RunPublicID: "r", TaskKey: "k", Executors: []string{"x"}},
		events.TaskParked{Scope: scope, Row: events.Row{TaskKey: "k", TaskKind: "tool_task"}}})
	if len(sizes) != 1 {
		t.Fatalf("one commit's events crossed in %d payloads", len(sizes))
	}
	var many []events.Event
	for i := range 200 {
		many = append(many, events.TurnStatus{Scope: scope, Turn: strings.Repeat("t", 30), Position: int64(i), Status: "queued"})
	}
	one.PublishAll(many)
	if len(sizes) < 3 {
		t.Fatalf("200 events crossed in %d payloads", len(sizes)-1)
	}
	for _, n := range sizes {
		if n > events.MaxPayload {
			t.Fatalf("a payload of %d bytes", n)
		}
	}
	<-sub.Wake()
	sts, lost := sub.TakeStamped()
	if lost || len(sts) != 202 {
		t.Fatalf("the other instance heard %d events, lost %v", len(sts), lost)
	}
	for i, st := range sts[2:] {
		if st.Event.(events.TurnStatus).Position != int64(i) || st.Seq != uint64(i+3) {
			t.Fatalf("event %d out of order: %+v", i, st)
		}
	}
}

// TestResumeBeyondTheBuffer: a subscription that resumes with more of the window's events than
// SubscriberBuffer holds them all, and still takes SubscriberBuffer new ones before it is lost.
func TestResumeBeyondTheBuffer(t *testing.T) {
	t.Parallel()
	b := events.New()
	scope := events.Scope{Workspace: "w"}
	for range 3000 {
		b.Publish(events.RunStatus{Scope: scope, Status: "running"})
	}
	s, resumed, _ := b.SubscribeMembers(events.MemberFilter{Workspace: "w"}, true, 0)
	defer s.Close()
	for range events.SubscriberBuffer {
		b.Publish(events.RunStatus{Scope: scope, Status: "completed"})
	}
	sts, lost := s.TakeStamped()
	if !resumed || lost || len(sts) != 3000+events.SubscriberBuffer {
		t.Fatalf("resumed %v, lost %v, %d events", resumed, lost, len(sts))
	}
	for range events.SubscriberBuffer + 1 {
		b.Publish(events.RunStatus{Scope: scope, Status: "completed"})
	}
	if _, lost := s.TakeStamped(); !lost {
		t.Fatal("past the buffer after a take, the subscription was not lost")
	}
}
