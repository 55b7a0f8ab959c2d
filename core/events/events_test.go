package events_test

import (
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
