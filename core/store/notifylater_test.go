package store_test

import (
	"context"
	"fmt"
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
		defer listener.Close()
		a, b := listener.Channel("later_a"), listener.Channel("later_b")
		got := map[string]heard{a: make(heard, 2000), b: make(heard, 2000)}
		for ch, h := range got {
			stop, err := listener.Subscribe(ctx, ch, h)
			if err != nil {
				t.Fatal(err)
			}
			defer stop()
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
