package executors

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/nexuskernel/nexus/core/store"
	"github.com/nexuskernel/nexus/core/store/storetest"
)

// openShared opens a second store on the same PostgreSQL schema as s, as a second instance
// does.
func openShared(t *testing.T, url string) *store.Store {
	t.Helper()
	s, err := store.Open(context.Background(), url, store.Options{MaxReaders: 4})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// TestFanOutAcrossInstances runs two hubs on one PostgreSQL schema: what one publishes reaches
// the streams the other holds, once each; a revocation committed on one closes the streams held
// by the other, and a rolled-back one closes nothing. SQLite serves a single instance, so the
// test runs on PostgreSQL alone.
func TestFanOutAcrossInstances(t *testing.T) {
	t.Parallel()
	for _, d := range storetest.Dialects() {
		if d != store.Postgres {
			continue
		}
		t.Run(string(d), func(t *testing.T) {
			url := storetest.FreshURL(t, d)
			s1 := openShared(t, url)
			if _, err := s1.Migrate(context.Background()); err != nil {
				t.Fatal(err)
			}
			s2 := openShared(t, url)
			ex := newExecutors(t, s1, 2)
			clock := &testClock{now: epoch}
			h1, h2 := startHub(t, s1, clock), startHub(t, s2, clock)
			on1, on2, other := open(t, h1, ex[0]), open(t, h2, ex[0]), open(t, h2, ex[1])

			h1.WorkAvailable("run", "r2t0", "screenshot", []string{ex[0].PublicID})
			want := Event{Type: EventWorkAvailable, Kind: KindToolCall, RunPublicID: "run", TaskKey: "r2t0", ToolName: "screenshot"}
			for _, st := range []*Stream{on1, on2} {
				if diff := cmp.Diff(want, next(t, st)); diff != "" {
					t.Fatalf("(-want +got):\n%s", diff)
				}
			}
			// The publisher delivered in process and ignores its own notification: once only.
			quiet(t, on1)
			quiet(t, on2)
			quiet(t, other)

			ctx := context.Background()
			rev := NewRevocation(h1, nil, nil)
			rolledBack := s1.Write(ctx, func(tx *store.Tx) error {
				if err := rev.SettleRevoked(ctx, tx, ex[0].ID, epoch); err != nil {
					return err
				}
				return context.Canceled
			})
			if rolledBack != context.Canceled {
				t.Fatal(rolledBack)
			}
			h2.WorkCanceled("run", "r2t0", []string{ex[0].PublicID}, ReasonRunCanceled)
			// The event published after the rolled-back revocation arrives: nothing was closed.
			if ev := next(t, on2); ev.Type != EventWorkCanceled {
				t.Fatalf("got %+v", ev)
			}
			if ev := next(t, on1); ev.Type != EventWorkCanceled || ev.Reason != ReasonRunCanceled {
				t.Fatalf("got %+v", ev)
			}
			if err := s1.Write(ctx, func(tx *store.Tx) error { return rev.SettleRevoked(ctx, tx, ex[0].ID, epoch) }); err != nil {
				t.Fatal(err)
			}
			rev.Revoked(ex[0].ID)
			waitClosed(t, on1)
			waitClosed(t, on2)
			if closed(other) {
				t.Fatal("another executor's stream closed")
			}
		})
	}
}
