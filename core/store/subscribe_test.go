package store_test

import (
	"context"
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

// Subscriptions of one store to one channel share its listening connection: each is told it is
// live, the one that joins a connection already listening too; each hears every notification;
// and one that stops leaves the other listening.
func TestSubscriptionsShareAConnection(t *testing.T) {
	t.Parallel()
	for _, d := range storetest.Dialects() {
		if d != store.Postgres {
			continue
		}
		s := storetest.Open(t, d)
		ctx := context.Background()
		ch := s.Channel("shared")
		a, b := liveHeard{make(heard, 4), make(chan struct{}, 4)}, liveHeard{make(heard, 4), make(chan struct{}, 4)}
		stopA, err := s.Subscribe(ctx, ch, a)
		if err != nil {
			t.Fatal(err)
		}
		stopB, err := s.Subscribe(ctx, ch, b)
		if err != nil {
			t.Fatal(err)
		}
		defer stopB()
		if len(a.live) != 1 || len(b.live) != 1 {
			t.Fatalf("told live %d and %d times; want once each", len(a.live), len(b.live))
		}
		var listening int
		if err := s.Reader().Get(ctx, &listening, `SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND query LIKE 'LISTEN %' AND query LIKE '%' || ? || '%'`, ch); err != nil {
			t.Fatal(err)
		}
		if listening != 1 {
			t.Fatalf("%d connections listen on %s; want 1", listening, ch)
		}
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
}
