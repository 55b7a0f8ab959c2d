package executors

import (
	"context"
	"database/sql"
	"errors"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/nexuskernel/nexus/core/refusal"
	"github.com/nexuskernel/nexus/core/store"
	"github.com/nexuskernel/nexus/core/store/storetest"
)

// executorRow is an executor stored for a hub test.
type executorRow struct {
	ID       int64
	PublicID string
}

// newExecutors stores a workspace with n runners.
func newExecutors(t testing.TB, s *store.Store, n int) []executorRow {
	t.Helper()
	ctx := context.Background()
	var out []executorRow
	err := s.Write(ctx, func(tx *store.Tx) error {
		w := &store.Workspace{PublicID: store.NewPublicID(), Handle: "w", Name: "w"}
		if err := store.InsertWorkspace(ctx, tx, w); err != nil {
			return err
		}
		for i := 0; i < n; i++ {
			e := &store.Executor{PublicID: store.NewPublicID(), WorkspaceID: w.ID, Kind: store.ExecutorRunner, DisplayName: "r", Status: store.ExecutorActive}
			if err := store.InsertExecutor(ctx, tx, e); err != nil {
				return err
			}
			out = append(out, executorRow{e.ID, e.PublicID})
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// testClock is a settable clock.
type testClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *testClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *testClock) advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

func startHub(t testing.TB, s *store.Store, clock *testClock) *Hub {
	t.Helper()
	h := NewHub(s, HubOptions{Now: clock.Now})
	if err := h.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(h.Close)
	return h
}

func open(t testing.TB, h *Hub, e executorRow) *Stream {
	t.Helper()
	s, err := h.Open(context.Background(), e.ID, e.PublicID)
	if err != nil {
		t.Fatalf("open a stream of %d: %v", e.ID, err)
	}
	t.Cleanup(s.Close)
	return s
}

// next waits for the stream's next event.
func next(t testing.TB, s *Stream) Event {
	t.Helper()
	select {
	case ev := <-s.Events():
		return ev
	case <-s.Done():
		t.Fatal("the stream closed instead of delivering")
	case <-time.After(10 * time.Second):
		t.Fatal("no event within 10 s")
	}
	return Event{}
}

// quiet checks that nothing arrives on s for a short while.
func quiet(t testing.TB, s *Stream) {
	t.Helper()
	select {
	case ev := <-s.Events():
		t.Fatalf("unexpected event %+v", ev)
	case <-time.After(100 * time.Millisecond):
	}
}

func closed(s *Stream) bool {
	select {
	case <-s.Done():
		return true
	default:
		return false
	}
}

func waitClosed(t testing.TB, s *Stream) {
	t.Helper()
	select {
	case <-s.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("the stream did not close within 10 s")
	}
}

var epoch = time.Date(2025, 3, 1, 9, 0, 0, 0, time.UTC)

func TestStreamLimit(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ex := newExecutors(t, s, 2)
		h := startHub(t, s, &testClock{now: epoch})
		var streams []*Stream
		for i := 0; i < MaxStreams; i++ {
			streams = append(streams, open(t, h, ex[0]))
		}
		_, err := h.Open(context.Background(), ex[0].ID, ex[0].PublicID)
		r, ok := refusal.As(err)
		if !ok || r.Code != "rate_limited" || r.Kind != refusal.TooManyRequests || !errors.Is(err, ErrTooManyStreams) {
			t.Fatalf("ninth stream: %v, want 429 rate_limited", err)
		}
		if RetryAfter() != "3" {
			t.Fatalf("Retry-After %q", RetryAfter())
		}
		// Another executor is not affected; a closed stream frees its slot.
		open(t, h, ex[1])
		streams[3].Close()
		streams[3].Close() // twice is harmless
		if h.Streams(ex[0].ID) != MaxStreams-1 {
			t.Fatalf("%d streams after a close", h.Streams(ex[0].ID))
		}
		open(t, h, ex[0])
		if _, err := h.Open(context.Background(), ex[0].ID, ex[0].PublicID); !errors.Is(err, ErrTooManyStreams) {
			t.Fatalf("ninth stream again: %v", err)
		}
	})
}

func TestPublishDeliversToAddressees(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ex := newExecutors(t, s, 3)
		h := startHub(t, s, &testClock{now: epoch})
		a1, a2, b, c := open(t, h, ex[0]), open(t, h, ex[0]), open(t, h, ex[1]), open(t, h, ex[2])
		h.WorkAvailable("run-1", "r2t0", "screenshot", []string{ex[0].PublicID, ex[1].PublicID, store.NewPublicID()})
		h.WorkCanceled("run-1", "r2t0", []string{ex[0].PublicID}, ReasonExpired)
		avail := Event{Type: EventWorkAvailable, Kind: KindToolCall, RunPublicID: "run-1", TaskKey: "r2t0", ToolName: "screenshot"}
		cancel := Event{Type: EventWorkCanceled, RunPublicID: "run-1", TaskKey: "r2t0", Reason: ReasonExpired}
		for name, want := range map[*Stream][]Event{a1: {avail, cancel}, a2: {avail, cancel}, b: {avail}} {
			for _, w := range want {
				if diff := cmp.Diff(w, next(t, name)); diff != "" {
					t.Fatalf("event (-want +got):\n%s", diff)
				}
			}
			quiet(t, name)
		}
		quiet(t, c)
		if err := h.Publish(context.Background(), nil, avail); err != nil {
			t.Fatalf("publishing to nobody: %v", err)
		}
	})
}

func TestOverflowClosesTheStream(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ex := newExecutors(t, s, 1)
		h := startHub(t, s, &testClock{now: epoch})
		slow := open(t, h, ex[0])
		for i := 0; i < StreamBuffer; i++ {
			h.WorkAvailable("r", "k", "t", []string{ex[0].PublicID})
		}
		if closed(slow) {
			t.Fatal("closed with a full but not overflowing buffer")
		}
		h.WorkAvailable("r", "k", "t", []string{ex[0].PublicID})
		waitClosed(t, slow)
		if h.Streams(ex[0].ID) != 0 {
			t.Fatal("an overflowed stream still holds its slot")
		}
	})
}

func TestRevocationClosesStreams(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ex := newExecutors(t, s, 2)
		h := startHub(t, s, &testClock{now: epoch})
		a1, a2, b := open(t, h, ex[0]), open(t, h, ex[0]), open(t, h, ex[1])
		rev := NewRevocation(h, nil, nil)
		ctx := context.Background()
		if err := s.Write(ctx, func(tx *store.Tx) error { return rev.SettleRevoked(ctx, tx, ex[0].ID, epoch) }); err != nil {
			t.Fatal(err)
		}
		rev.Revoked(ex[0].ID)
		waitClosed(t, a1)
		waitClosed(t, a2)
		if closed(b) {
			t.Fatal("another executor's stream closed")
		}
	})
}

func TestShutdownClosesStreams(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ex := newExecutors(t, s, 1)
		h := startHub(t, s, &testClock{now: epoch})
		st := open(t, h, ex[0])
		h.CloseStreams()
		waitClosed(t, st)
		_, err := h.Open(context.Background(), ex[0].ID, ex[0].PublicID)
		if r, ok := refusal.As(err); !ok || r.Code != refusal.CodeUnavailable {
			t.Fatalf("a stream during shutdown: %v", err)
		}
	})
}

// TestLostNotificationsCloseStreams: streams that may have missed another instance's events
// are closed so that their executors reconnect and read the inbox.
func TestLostNotificationsCloseStreams(t *testing.T) {
	t.Parallel()
	s := storetest.Open(t, store.SQLite)
	ex := newExecutors(t, s, 1)
	h := startHub(t, s, &testClock{now: epoch})
	before := open(t, h, ex[0])
	sub := subscription{h}
	sub.Lost()
	waitClosed(t, before)
	during := open(t, h, ex[0])
	sub.Live()
	waitClosed(t, during)
	after := open(t, h, ex[0])
	sub.Live() // live again without a loss: nothing to close
	if closed(after) {
		t.Fatal("a Live without a loss closed a stream")
	}
}

// TestNotifiedPayloads feeds the subscription what other instances (and the run engine) send.
func TestNotifiedPayloads(t *testing.T) {
	t.Parallel()
	s := storetest.Open(t, store.SQLite)
	ex := newExecutors(t, s, 2)
	h := startHub(t, s, &testClock{now: epoch})
	a, b := open(t, h, ex[0]), open(t, h, ex[1])
	sub := subscription{h}
	ids := `["` + ex[0].PublicID + `"]`
	sub.Notified(`{"kind":"kernel","run_public_id":"r","task_key":"k","executor_public_ids":[]}`)
	sub.Notified(`not json`)
	sub.Notified(`{"kind":"executor","run_public_id":"r","task_key":"k","executor_public_ids":` + ids + `,"event":"work_available","tool_name":"t","origin":"` + h.origin + `"}`)
	quiet(t, a)
	sub.Notified(`{"kind":"executor","run_public_id":"r","task_key":"k","executor_public_ids":` + ids + `,"event":"work_available","tool_name":"t","origin":"elsewhere"}`)
	if diff := cmp.Diff(Event{Type: EventWorkAvailable, Kind: KindToolCall, RunPublicID: "r", TaskKey: "k", ToolName: "t"}, next(t, a)); diff != "" {
		t.Fatalf("(-want +got):\n%s", diff)
	}
	sub.Notified(`{"kind":"executor","run_public_id":"r","task_key":"k","executor_public_ids":` + ids + `,"event":"work_canceled","reason":"run_canceled","origin":"elsewhere"}`)
	if diff := cmp.Diff(Event{Type: EventWorkCanceled, RunPublicID: "r", TaskKey: "k", Reason: ReasonRunCanceled}, next(t, a)); diff != "" {
		t.Fatalf("(-want +got):\n%s", diff)
	}
	sub.Notified(`{"kind":"executor","event":"something_new","executor_public_ids":` + ids + `,"origin":"elsewhere"}`)
	quiet(t, a)
	sub.Notified(`{"kind":"executor","event":"revoked","executor_public_ids":[],"executor_ids":[` + strconv.FormatInt(ex[1].ID, 10) + `],"origin":"elsewhere"}`)
	waitClosed(t, b)
	if closed(a) {
		t.Fatal("revoking one executor closed another's stream")
	}
}

func TestPayloadBatches(t *testing.T) {
	t.Parallel()
	h := NewHub(storetest.Open(t, store.SQLite), HubOptions{})
	ids := make([]string, 2*notifyBatch+1)
	for i := range ids {
		ids[i] = store.NewPublicID()
	}
	ps := h.payloads(ids, Event{Type: EventWorkAvailable, Kind: KindToolCall, RunPublicID: store.NewPublicID(), TaskKey: "r12t255", ToolName: string(make([]byte, 128))})
	if len(ps) != 3 {
		t.Fatalf("%d payloads, want 3", len(ps))
	}
	for _, p := range ps {
		if len(p) >= 8000 {
			t.Fatalf("a payload of %d bytes is over PostgreSQL's limit", len(p))
		}
	}
}

func presenceOf(t testing.TB, s *store.Store, id int64) (connected, seen sql.NullInt64) {
	t.Helper()
	var row struct {
		C sql.NullInt64 `db:"connected_at"`
		S sql.NullInt64 `db:"last_seen_at"`
	}
	if err := s.Reader().Get(context.Background(), &row, `SELECT connected_at, last_seen_at FROM executors WHERE id = ?`, id); err != nil {
		t.Fatal(err)
	}
	return row.C, row.S
}

func TestPresence(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ex := newExecutors(t, s, 1)
		clock := &testClock{now: epoch}
		h := startHub(t, s, clock)
		if c, seen := presenceOf(t, s, ex[0].ID); c.Valid || seen.Valid {
			t.Fatal("presence before any stream")
		}
		first := open(t, h, ex[0])
		if c, seen := presenceOf(t, s, ex[0].ID); c.Int64 != store.Millis(epoch) || seen.Int64 != store.Millis(epoch) {
			t.Fatalf("after opening: connected_at %v, last_seen_at %v", c, seen)
		}
		clock.advance(time.Minute)
		second := open(t, h, ex[0])
		if c, _ := presenceOf(t, s, ex[0].ID); c.Int64 != store.Millis(epoch.Add(time.Minute)) {
			t.Fatalf("the current stream is the latest opening: connected_at %v", c)
		}
		// The refresher keeps last_seen_at moving while streams are open.
		clock.advance(time.Minute)
		h.touchOpen()
		if _, seen := presenceOf(t, s, ex[0].ID); seen.Int64 != store.Millis(epoch.Add(2*time.Minute)) {
			t.Fatalf("refreshed last_seen_at %v", seen)
		}
		first.Close()
		if c, _ := presenceOf(t, s, ex[0].ID); !c.Valid {
			t.Fatal("closing one of two streams cleared connected_at")
		}
		second.Close()
		if c, seen := presenceOf(t, s, ex[0].ID); c.Valid || !seen.Valid {
			t.Fatalf("after the last close: connected_at %v, last_seen_at %v", c, seen)
		}
		// A later opening elsewhere is not cleared by this instance's close.
		third := open(t, h, ex[0])
		if err := s.Write(context.Background(), func(tx *store.Tx) error {
			return store.MarkExecutorConnected(context.Background(), tx, ex[0].ID, store.Millis(epoch.Add(time.Hour)))
		}); err != nil {
			t.Fatal(err)
		}
		third.Close()
		if c, _ := presenceOf(t, s, ex[0].ID); c.Int64 != store.Millis(epoch.Add(time.Hour)) {
			t.Fatalf("another instance's opening was cleared: %v", c)
		}
	})
}

func TestDefaultPingInterval(t *testing.T) {
	t.Parallel()
	h := NewHub(storetest.Open(t, store.SQLite), HubOptions{})
	if h.PingInterval() != 15*time.Second {
		t.Fatalf("ping interval %v, want executor.md's 15 s", h.PingInterval())
	}
	if ReconnectDelay != 3*time.Second || MaxStreams != 8 {
		t.Fatalf("retry %v, streams %d", ReconnectDelay, MaxStreams)
	}
}
