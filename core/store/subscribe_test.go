package store_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/nexuskernel/nexus/core/store"
	"github.com/nexuskernel/nexus/core/store/storetest"
)

// liveHeard is heard that also counts its Live calls.
type liveHeard struct {
	heard
	live chan struct{}
}

func (h liveHeard) Live() { h.live <- struct{}{} }

// told records all a subscription is told, in order: its payloads, "(live)" and "(lost)".
type told chan string

func (h told) Notified(p string) { h <- p }
func (h told) Live()             { h <- "(live)" }
func (h told) Lost()             { h <- "(lost)" }

// next fails unless h is told want next.
func (h told) next(t *testing.T, want string) {
	t.Helper()
	select {
	case got := <-h:
		if got != want {
			t.Fatalf("told %q, want %q", got, want)
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("never told %q", want)
	}
}

// quiet fails if h was told anything it has not read.
func (h told) quiet(t *testing.T) {
	t.Helper()
	select {
	case got := <-h:
		t.Fatalf("told %q, want nothing", got)
	default:
	}
}

// listening returns the last statements of the connections to s's database whose last
// statement was a LISTEN or UNLISTEN of one of s's channels (each ends in s.Channel("")): for a
// listening connection, its last LISTEN or UNLISTEN until its first ping, 15 seconds after it
// opens.
func listening(t *testing.T, s *store.Store) []string {
	t.Helper()
	var stmts []string
	if err := s.Reader().Select(context.Background(), &stmts, `
SELECT query FROM pg_stat_activity
WHERE datname = current_database() AND (query LIKE 'LISTEN %' OR query LIKE 'UNLISTEN %') AND strpos(query, ?) > 0`,
		s.Channel("")); err != nil {
		t.Fatal(err)
	}
	return stmts
}

// wantListening fails unless the one connection listening for s last ran stmt on channel.
func wantListening(t *testing.T, s *store.Store, stmt, channel string) {
	t.Helper()
	want := []string{fmt.Sprintf("%s %q", stmt, channel)}
	if got := listening(t, s); !slices.Equal(got, want) {
		t.Fatalf("listening connections last ran %q; want %q", got, want)
	}
}

// wantNoListening fails unless every connection that listened for s closes.
func wantNoListening(t *testing.T, s *store.Store) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for len(listening(t, s)) > 0 {
		if time.Now().After(deadline) {
			t.Fatalf("connections still listening: %q", listening(t, s))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Subscriptions of one store to one channel share its listening connection: each is told it is
// live, the one that joins a connection already listening too; each hears every notification;
// and one that stops leaves the other listening.
func TestSubscriptionsShareAConnection(t *testing.T) {
	t.Parallel()
	s, ok := storetest.Postgres(t)
	if !ok {
		return
	}
	ctx := context.Background()
	ch := s.Channel("shared")
	a, b := liveHeard{make(heard, 4), make(chan struct{}, 4)}, liveHeard{make(heard, 4), make(chan struct{}, 4)}
	stopA := subscribe(t, s, ch, a)
	subscribe(t, s, ch, b)
	if len(a.live) != 1 || len(b.live) != 1 {
		t.Fatalf("told live %d and %d times; want once each", len(a.live), len(b.live))
	}
	wantListening(t, s, "LISTEN", ch)
	hear := func(h liveHeard, want string) {
		t.Helper()
		select {
		case p := <-h.heard:
			if p != want {
				t.Fatalf("heard %q, want %q", p, want)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("%q never arrived", want)
		}
	}
	if err := s.NotifyNow(ctx, ch, "one"); err != nil {
		t.Fatal(err)
	}
	hear(a, "one")
	hear(b, "one")
	stopA()
	stopA() // a second stop is idle
	if err := s.NotifyNow(ctx, ch, "two"); err != nil {
		t.Fatal(err)
	}
	hear(b, "two")
	select {
	case p := <-a.heard:
		t.Fatalf("a stopped subscription heard %q", p)
	default:
	}
}

// A store listens on all its channels through one connection: each notification reaches the
// subscriptions of its channel only; the last subscription of a channel to stop unlistens it
// while the other channel is still heard, and it can be listened to again; and the connection
// closes once nothing is subscribed.
func TestOneListeningConnectionPerStore(t *testing.T) {
	t.Parallel()
	s, ok := storetest.Postgres(t)
	if !ok {
		return
	}
	ctx := context.Background()
	chA, chB := s.Channel("a"), s.Channel("b")
	a1, a2, b := make(told, 8), make(told, 8), make(told, 8)
	subscribe := func(ch string, h told) func() {
		t.Helper()
		stop := subscribe(t, s, ch, h)
		if len(h) != 1 {
			t.Fatalf("told %d things on subscribing; want live", len(h))
		}
		h.next(t, "(live)")
		return stop
	}
	notify := func(ch, payload string) {
		t.Helper()
		if err := s.NotifyNow(ctx, ch, payload); err != nil {
			t.Fatal(err)
		}
	}
	stopA1, stopA2 := subscribe(chA, a1), subscribe(chA, a2)
	stopB := subscribe(chB, b)
	wantListening(t, s, "LISTEN", chB)

	// Sent in this order on one connection, "two" reaching a would arrive before "three",
	// and "one" reaching b before "two".
	notify(chA, "one")
	notify(chB, "two")
	notify(chA, "three")
	for _, a := range []told{a1, a2} {
		a.next(t, "one")
		a.next(t, "three")
	}
	b.next(t, "two")

	stopA1()
	notify(chA, "four")
	a2.next(t, "four")
	stopA2()
	wantListening(t, s, "UNLISTEN", chA)
	notify(chA, "five")
	notify(chB, "six")
	b.next(t, "six")
	a1.quiet(t)
	a2.quiet(t)

	a3 := make(told, 8)
	stopA3 := subscribe(chA, a3)
	wantListening(t, s, "LISTEN", chA)
	notify(chA, "seven")
	a3.next(t, "seven")
	b.quiet(t)

	stopB()
	stopA3()
	wantNoListening(t, s)
}

// When the listening connection drops, every subscription of every channel is told it is lost,
// and live again once the connection is back.
func TestListeningConnectionLoss(t *testing.T) {
	t.Parallel()
	s, ok := storetest.Postgres(t)
	if !ok {
		return
	}
	ctx := context.Background()
	chA, chB := s.Channel("a"), s.Channel("b")
	a, b := make(told, 8), make(told, 8)
	for ch, h := range map[string]told{chA: a, chB: b} {
		subscribe(t, s, ch, h)
		h.next(t, "(live)")
	}
	var killed int
	if err := s.Reader().Get(ctx, &killed, `
SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
WHERE datname = current_database() AND query LIKE 'LISTEN %' AND strpos(query, ?) > 0`, s.Channel("")); err != nil {
		t.Fatal(err)
	}
	if killed != 1 {
		t.Fatalf("terminated %d listening connections, want 1", killed)
	}
	for _, h := range []told{a, b} {
		// Live twice: pq reports a reconnection both as an event and as a nil notification.
		h.next(t, "(lost)")
		h.next(t, "(live)")
		h.next(t, "(live)")
	}
	if err := s.NotifyNow(ctx, chA, "again"); err != nil {
		t.Fatal(err)
	}
	a.next(t, "again")
	b.quiet(t)
}

// A Subscribe whose ctx ends before its channel is listened to fails and leaves nothing behind:
// the Listen it started is undone once it completes, and the channel can be subscribed to again.
func TestSubscribeCancelled(t *testing.T) {
	t.Parallel()
	s, ok := storetest.Postgres(t)
	if !ok {
		return
	}
	ctx := context.Background()
	chA, chB := s.Channel("cancelled"), s.Channel("other")
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	stop, err := s.Subscribe(cancelled, chA, make(told, 8))
	switch {
	case err == nil:
		stop() // Listen finished first: a plain subscription
	case !errors.Is(err, context.Canceled):
		t.Fatal(err)
	}
	// Once another channel is listened to, the connection is up and the abandoned Listen
	// completes; with the other subscription stopped, nothing may be left listening.
	b := make(told, 8)
	stop = subscribe(t, s, chB, b)
	b.next(t, "(live)")
	stop()
	wantNoListening(t, s)

	a := make(told, 8)
	subscribe(t, s, chA, a)
	a.next(t, "(live)")
	if err := s.NotifyNow(ctx, chA, "heard"); err != nil {
		t.Fatal(err)
	}
	a.next(t, "heard")
}
