package store_test

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nexuskernel/nexus/core/store"
	"github.com/nexuskernel/nexus/core/store/storetest"
)

// heard collects a subscription's payloads.
type heard chan string

func (h heard) Notified(p string) { h <- p }
func (h heard) Live()             {}
func (h heard) Lost()             {}

// subscribe subscribes h to ch on s for the rest of the test and answers the subscription's
// stop, which the test may call earlier (a second stop is idle).
func subscribe(t *testing.T, s *store.Store, ch string, h store.SubscriptionHandler) (stop func()) {
	t.Helper()
	stop, err := s.Subscribe(context.Background(), ch, h)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	return stop
}

// NotifyLater's payloads arrive on each channel in the order they were queued, across batches, and
// Close sends what is still queued before it returns. (Only the order within a channel is
// promised.)
func TestNotifyLaterOrderAndFlush(t *testing.T) {
	for _, d := range storetest.Dialects() {
		if d != store.Postgres {
			continue // NOTIFY is PostgreSQL's; on SQLite NotifyLater does nothing
		}
		ctx := context.Background()
		url := storetest.FreshURL(t, d)
		open := func() *store.Store {
			s, err := store.Open(ctx, url, store.Options{MaxReaders: 2})
			if err != nil {
				t.Fatal(err)
			}
			return s
		}
		listener := open()
		t.Cleanup(func() { _ = listener.Close() })
		a, b := listener.Channel("later_a"), listener.Channel("later_b")
		got := map[string]heard{a: make(heard, 2000), b: make(heard, 2000)}
		for ch, h := range got {
			subscribe(t, listener, ch, h)
		}
		sender := open()
		const n = 700 // several batches
		failed := make(chan error, n)
		want := map[string][]string{}
		for i := 0; i < n; i++ {
			ch := a
			if i%3 == 0 {
				ch = b
			}
			p := fmt.Sprintf("p%04d", i)
			want[ch] = append(want[ch], p)
			sender.NotifyLater(ch, p, func(err error) { failed <- err })
		}
		// Close at once: what is still queued goes out before it returns.
		if err := sender.Close(); err != nil {
			t.Fatal(err)
		}
		for ch, payloads := range want {
			for i, w := range payloads {
				select {
				case p := <-got[ch]:
					if p != w {
						t.Fatalf("payload %d of %s is %s, want %s", i, ch, p, w)
					}
				case <-time.After(10 * time.Second):
					t.Fatalf("heard %d of %d payloads on %s", i, len(payloads), ch)
				}
			}
		}
		select {
		case err := <-failed:
			t.Fatalf("a payload was reported lost: %v", err)
		default:
		}
		// After Close nothing is queued: the loss is reported to the caller.
		sender.NotifyLater(a, "late", func(err error) { failed <- err })
		select {
		case err := <-failed:
			if err == nil {
				t.Fatal("a nil loss report")
			}
		default:
			t.Fatal("a payload queued after Close was not reported lost")
		}
	}
}

// inOrder counts payloads that are the numbers 0, 1, 2, ... in order, and closes done once it
// has heard want of them.
type inOrder struct {
	mu   sync.Mutex
	next int
	bad  string
	want int
	done chan struct{}
}

func (h *inOrder) Notified(p string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if p != strconv.Itoa(h.next) && h.bad == "" {
		h.bad = fmt.Sprintf("heard %s where %d was due", p, h.next)
	}
	h.next++
	if h.next == h.want {
		close(h.done)
	}
}
func (h *inOrder) Live() {}
func (h *inOrder) Lost() {}

// NotifyLater's queue is bounded: while the sender is stalled (the store's one connection is
// held), maxPendingNotifications payloads wait and each further one is reported lost at once, on
// the caller's goroutine; once the connection is free, every payload that waited is sent, in
// order, and none of the lost ones.
func TestNotifyLaterBound(t *testing.T) {
	t.Parallel()
	if storetest.PostgresURL() == "" {
		return // NOTIFY is PostgreSQL's; on SQLite NotifyLater does nothing
	}
	ctx := context.Background()
	url := storetest.FreshURL(t, store.Postgres)
	open := func() *store.Store {
		s, err := store.Open(ctx, url, store.Options{MaxReaders: 1})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = s.Close() })
		return s
	}
	listener, sender := open(), open()
	ch := listener.Channel("later_bound")
	got := &inOrder{want: 1 + store.MaxPendingNotifications, done: make(chan struct{})}
	subscribe(t, listener, ch, got)

	held, release, written := make(chan struct{}), make(chan struct{}), make(chan error, 1)
	go func() {
		written <- sender.Write(ctx, func(*store.Tx) error {
			close(held)
			<-release
			return nil
		})
	}()
	<-held
	var lost atomic.Int64
	lose := func(error) { lost.Add(1) }
	sender.NotifyLater(ch, "0", lose)
	for deadline := time.Now().Add(2 * time.Second); store.PendingNotifications(sender) > 0; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the sender never took the first payload")
		}
	}
	// The sender holds "0" and waits for the connection; the queue fills behind it.
	const over = 5
	for i := 1; i <= store.MaxPendingNotifications+over; i++ {
		sender.NotifyLater(ch, strconv.Itoa(i), lose)
	}
	if n := lost.Load(); n != over {
		t.Fatalf("%d payloads reported lost at once; want the %d beyond the bound", n, over)
	}
	if n := store.PendingNotifications(sender); n != store.MaxPendingNotifications {
		t.Fatalf("%d payloads wait; want %d", n, store.MaxPendingNotifications)
	}
	close(release)
	if err := <-written; err != nil {
		t.Fatal(err)
	}
	select {
	case <-got.done:
	case <-time.After(30 * time.Second):
		got.mu.Lock()
		defer got.mu.Unlock()
		t.Fatalf("heard %d of %d payloads", got.next, got.want)
	}
	time.Sleep(100 * time.Millisecond) // room for a lost payload to arrive after all
	got.mu.Lock()
	defer got.mu.Unlock()
	if got.bad != "" || got.next != got.want || lost.Load() != over {
		t.Fatalf("%s; heard %d payloads, %d lost; want %d heard, %d lost", got.bad, got.next, lost.Load(), got.want, over)
	}
}
