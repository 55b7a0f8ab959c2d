package executors

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/nexuskernel/nexus/core/refusal"
	"github.com/nexuskernel/nexus/core/store"
	"github.com/nexuskernel/nexus/core/store/storetest"
)

func openFeed(t testing.TB, h *Hub, es ...executorRow) *Feed {
	t.Helper()
	var members []FeedMember
	for _, e := range es {
		members = append(members, FeedMember(e))
	}
	f, err := h.OpenFeed(context.Background(), members)
	if err != nil {
		t.Fatalf("open a feed: %v", err)
	}
	t.Cleanup(f.Close)
	return f
}

// woken waits for the feed's wake-up and takes its news.
func woken(t testing.TB, f *Feed) FeedNews {
	t.Helper()
	select {
	case <-f.Wake():
		return f.Take()
	case <-f.Done():
		t.Fatal("the feed ended instead of waking")
	case <-time.After(10 * time.Second):
		t.Fatal("no wake-up within 10 s")
	}
	return FeedNews{}
}

func feedEnded(f *Feed) bool {
	select {
	case <-f.Done():
		return true
	default:
		return false
	}
}

func asleep(t testing.TB, f *Feed) {
	t.Helper()
	select {
	case <-f.Wake():
		t.Fatalf("an unexpected wake-up: %+v", f.Take())
	case <-time.After(50 * time.Millisecond):
	}
}

// TestFeedFallsBehindWithoutClosing fills a feed far past a stream's buffer and its own bound
// without reading it: the feed stays open, the publisher never waits, and the reader gets one
// coalesced wake-up saying that events were missed, then a fresh one naming the next row.
func TestFeedFallsBehindWithoutClosing(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ex := newExecutors(t, s, 1)
		h := startHub(t, s, &testClock{now: epoch})
		f := openFeed(t, h, ex[0])
		stream := open(t, h, ex[0])
		published := make(chan struct{})
		go func() {
			defer close(published)
			for i := range 100 * StreamBuffer {
				h.WorkAvailable("r", fmt.Sprintf("r1t%d", i), "t", []string{ex[0].PublicID})
			}
		}()
		select {
		case <-published:
		case <-time.After(10 * time.Second):
			t.Fatal("publishing to an unread feed blocked")
		}
		waitClosed(t, stream) // the HTTP stream beside it fell behind and closed
		if feedEnded(f) {
			t.Fatal("the feed closed for falling behind")
		}
		if diff := cmp.Diff(FeedNews{Available: true, Missed: true, CancelsLost: true}, woken(t, f)); diff != "" {
			t.Fatalf("past the bound (-want +got):\n%s", diff)
		}
		asleep(t, f) // one wake-up for all of them
		h.WorkAvailable("r", "r2t0", "t", []string{ex[0].PublicID})
		want := FeedNews{Available: true, Rows: []FeedRow{{TaskRef{"r", "r2t0"}, ex[0].PublicID}}}
		if diff := cmp.Diff(want, woken(t, f)); diff != "" {
			t.Fatalf("the next event (-want +got):\n%s", diff)
		}
		if h.Streams(ex[0].ID) != 0 {
			t.Fatalf("a feed counts as %d streams", h.Streams(ex[0].ID))
		}
	})
}

// TestFeedCancellations keeps each cancellation and each announced row once, in order; past
// MaxFeedEvents it forgets them and says that events were missed, and a take starts afresh.
func TestFeedCancellations(t *testing.T) {
	t.Parallel()
	s := storetest.Open(t, store.SQLite)
	ex := newExecutors(t, s, 1)
	h := startHub(t, s, &testClock{now: epoch})
	f := openFeed(t, h, ex[0])
	to := []string{ex[0].PublicID}
	h.WorkCanceled("r", "r1t0", to, ReasonRunCanceled)
	h.WorkAvailable("r", "r1t2", "t", to)
	h.WorkCanceled("r", "r1t1", to, ReasonExpired)
	h.WorkCanceled("r", "r1t0", to, ReasonRunCanceled)
	h.WorkAvailable("r", "r1t2", "t", to)
	want := FeedNews{Available: true, Rows: []FeedRow{{TaskRef{"r", "r1t2"}, ex[0].PublicID}}, Canceled: []TaskRef{{"r", "r1t0"}, {"r", "r1t1"}}}
	if diff := cmp.Diff(want, woken(t, f)); diff != "" {
		t.Fatalf("(-want +got):\n%s", diff)
	}
	for i := range MaxFeedEvents {
		h.WorkCanceled("r", fmt.Sprintf("r2t%d", i), to, ReasonTaskCanceled)
	}
	n := woken(t, f)
	if len(n.Canceled) != MaxFeedEvents || n.CancelsLost || n.Available || n.Missed {
		t.Fatalf("a full set: %d kept, lost %v, available %v", len(n.Canceled), n.CancelsLost, n.Available)
	}
	for i := range MaxFeedEvents + 1 {
		h.WorkCanceled("r", fmt.Sprintf("r3t%d", i), to, ReasonTaskCanceled)
	}
	h.WorkCanceled("r", "r3t9999", to, ReasonTaskCanceled) // after the overflow: nothing more to keep
	if diff := cmp.Diff(FeedNews{Available: true, Missed: true, CancelsLost: true}, woken(t, f)); diff != "" {
		t.Fatalf("an overflowing set (-want +got):\n%s", diff)
	}
	h.WorkCanceled("r", "r4t0", to, ReasonTaskCanceled)
	if diff := cmp.Diff(FeedNews{Canceled: []TaskRef{{"r", "r4t0"}}}, woken(t, f)); diff != "" {
		t.Fatalf("after the take (-want +got):\n%s", diff)
	}
	if !(FeedNews{}).Empty() || want.Empty() || (FeedNews{CancelsLost: true}).Empty() {
		t.Fatal("Empty")
	}
}

// TestFeedOfSeveralExecutors hears each member, holds the presence of each, and releases it.
func TestFeedOfSeveralExecutors(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ex := newExecutors(t, s, 3)
		h := startHub(t, s, &testClock{now: epoch})
		f := openFeed(t, h, ex[0], ex[1], ex[0])
		for _, e := range ex[:2] {
			if c, _ := presenceOf(t, s, e.ID); c.Int64 != store.Millis(epoch) {
				t.Fatalf("presence of a member: %v", c)
			}
		}
		if c, _ := presenceOf(t, s, ex[2].ID); c.Valid {
			t.Fatal("presence of a non-member")
		}
		h.WorkAvailable("r", "r1t0", "t", []string{ex[2].PublicID})
		asleep(t, f)
		h.WorkAvailable("r", "r1t0", "t", []string{ex[1].PublicID})
		if n := woken(t, f); !n.Available {
			t.Fatalf("news %+v", n)
		}
		f.Close()
		f.Close()
		for _, e := range ex[:2] {
			if c, _ := presenceOf(t, s, e.ID); c.Valid {
				t.Fatalf("presence after the close: %v", c)
			}
		}
	})
}

// TestPresenceHearsNothing: a presence holds its executors online as a feed does, and keeps no
// event, since nobody takes its news (the plugin plane's claim loop reads its own feed).
func TestPresenceHearsNothing(t *testing.T) {
	t.Parallel()
	s := storetest.Open(t, store.SQLite)
	ex := newExecutors(t, s, 1)
	h := startHub(t, s, &testClock{now: epoch})
	p, err := h.OpenPresence(context.Background(), []FeedMember{FeedMember(ex[0])})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if c, _ := presenceOf(t, s, ex[0].ID); c.Int64 != store.Millis(epoch) {
		t.Fatalf("presence of the member: %v", c)
	}
	f := openFeed(t, h, ex[0])
	for i := range 3 * MaxFeedEvents {
		h.WorkAvailable("r", fmt.Sprintf("r%dt0", i), "t", []string{ex[0].PublicID})
	}
	if n := woken(t, f); !n.Available {
		t.Fatalf("the feed's news %+v", n)
	}
	select {
	case <-p.Wake():
		t.Fatalf("the presence woke: %+v", p.Take())
	default:
	}
	if n := p.Take(); !n.Empty() {
		t.Fatalf("the presence kept news: %+v", n)
	}
}

// TestFeedEnds: revoking a member ends the feed; shutdown ends every feed and refuses new ones.
func TestFeedEnds(t *testing.T) {
	t.Parallel()
	s := storetest.Open(t, store.SQLite)
	ex := newExecutors(t, s, 2)
	h := startHub(t, s, &testClock{now: epoch})
	a, b := openFeed(t, h, ex[0], ex[1]), openFeed(t, h, ex[1])
	h.CloseExecutor(ex[0].ID)
	select {
	case <-a.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("revoking a member did not end the feed")
	}
	if feedEnded(b) {
		t.Fatal("revoking one executor ended another's feed")
	}
	h.CloseStreams()
	select {
	case <-b.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("shutdown did not end the feed")
	}
	_, err := h.OpenFeed(context.Background(), []FeedMember{{ex[0].ID, ex[0].PublicID}})
	if r, ok := refusal.As(err); !ok || r.Code != refusal.CodeUnavailable {
		t.Fatalf("a feed during shutdown: %v", err)
	}
}

// TestLostNotificationsWakeFeeds: where a stream is closed for what it may have missed, a feed
// stays open and is told both kinds of event may have been missed, on the loss and on the
// return.
func TestLostNotificationsWakeFeeds(t *testing.T) {
	t.Parallel()
	s := storetest.Open(t, store.SQLite)
	ex := newExecutors(t, s, 1)
	h := startHub(t, s, &testClock{now: epoch})
	f := openFeed(t, h, ex[0])
	h.WorkCanceled("r", "r1t0", []string{ex[0].PublicID}, ReasonRunCanceled)
	sub := subscription{h}
	sub.Lost()
	if diff := cmp.Diff(FeedNews{Available: true, Missed: true, CancelsLost: true}, woken(t, f)); diff != "" {
		t.Fatalf("on the loss (-want +got):\n%s", diff)
	}
	sub.Live()
	if diff := cmp.Diff(FeedNews{Available: true, Missed: true, CancelsLost: true}, woken(t, f)); diff != "" {
		t.Fatalf("on the return (-want +got):\n%s", diff)
	}
	sub.Live()
	asleep(t, f)
	if feedEnded(f) {
		t.Fatal("a loss ended the feed")
	}
}
