package executors

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/nexuskernel/nexus/core/refusal"
	"github.com/nexuskernel/nexus/core/runs"
	"github.com/nexuskernel/nexus/core/store"
	"github.com/nexuskernel/nexus/core/store/storetest"
	"github.com/nexuskernel/nexus/sdk/announce"
)

// TestLimiterBounds pins the specified rates: a minute's worth of requests in a burst, the next
// refused with a whole-second Retry-After, one more allowed as soon as a token refills, and
// buckets kept per executor.
func TestLimiterBounds(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		perMinute int
		wait      time.Duration
	}{{ClaimsPerMinute, time.Second}, {ClaimReadsPerMinute, time.Second}, {30, 2 * time.Second}} {
		clock := &testClock{now: epoch}
		l := newLimiter(c.perMinute, clock.Now, "claims")
		for i := 0; i < c.perMinute; i++ {
			if err := l.allow(1); err != nil {
				t.Fatalf("%d/min: request %d refused: %v", c.perMinute, i+1, err)
			}
		}
		err := l.allow(1)
		var rl *RateLimitedError
		if !errors.As(err, &rl) || rl.RetryAfter != c.wait {
			t.Fatalf("%d/min: over the bound: %v", c.perMinute, err)
		}
		if r, ok := refusal.As(err); !ok || r.Code != CodeRateLimited || r.Kind != refusal.TooManyRequests {
			t.Fatalf("refusal %v", err)
		}
		if v, ok := RetryAfterOf(err); !ok || v != map[time.Duration]string{time.Second: "1", 2 * time.Second: "2"}[c.wait] {
			t.Fatalf("Retry-After %q", v)
		}
		if err := l.allow(2); err != nil {
			t.Fatalf("another executor's bucket: %v", err)
		}
		// One and a half tokens' time refills exactly one whole token.
		clock.advance(time.Minute * 3 / time.Duration(2*c.perMinute))
		if err := l.allow(1); err != nil {
			t.Fatalf("after a token's time: %v", err)
		}
		if err := l.allow(1); err == nil {
			t.Fatal("a second request after one token refilled")
		}
	}
	if v, ok := RetryAfterOf(ErrTooManyStreams); !ok || v != "3" {
		t.Fatalf("stream Retry-After %q", v)
	}
	if _, ok := RetryAfterOf(errors.New("other")); ok {
		t.Fatal("Retry-After for an unrelated error")
	}
}

func TestLimiterPrunesFullBuckets(t *testing.T) {
	t.Parallel()
	clock := &testClock{now: epoch}
	l := newLimiter(60, clock.Now, "claims")
	for id := int64(0); id < limiterPruneAt; id++ {
		_ = l.allow(id)
	}
	clock.advance(time.Minute)
	_ = l.allow(-1)
	if n := len(l.buckets); n != 1 {
		t.Fatalf("%d buckets after a prune", n)
	}
}

func TestCursorRoundTrip(t *testing.T) {
	t.Parallel()
	c := store.InboxCursor{DispatchedAt: 1700000000123, RunPublicID: "01900000-0000-7000-8000-000000000051", TaskKey: "r2t0"}
	got, ok := decodeCursor(encodeCursor(c))
	if !ok || *got != c {
		t.Fatalf("round trip %v %v", got, ok)
	}
	for _, bad := range []string{"", "!!", encodeRaw("inbox:1:x:y"), encodeRaw(cursorPrefix + "1:not-a-uuid:r2t0"),
		encodeRaw(cursorPrefix + "-1:01900000-0000-7000-8000-000000000051:r2t0"), encodeRaw(cursorPrefix + "1:01900000-0000-7000-8000-000000000051:bad key"),
		encodeRaw(cursorPrefix + "1:01900000-0000-7000-8000-000000000051")} {
		if _, ok := decodeCursor(bad); ok {
			t.Fatalf("accepted %q", bad)
		}
	}
}

// TestAddressingSeam reads the served-names table the way addressing does: a Runner route needs
// an active Runner of the workspace that announces the name; a pool is the active tool providers
// that announce it, never a Runner, in public id order.
func TestAddressingSeam(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		var ws, otherWS int64
		mk := func(tx *store.Tx, wsID int64, kind, status string) *store.Executor {
			e := &store.Executor{PublicID: store.NewPublicID(), WorkspaceID: wsID, Kind: kind, DisplayName: kind, Status: status}
			if err := store.InsertExecutor(ctx, tx, e); err != nil {
				t.Fatal(err)
			}
			return e
		}
		var runner, provider, provider2, revoked, foreign *store.Executor
		err := s.Write(ctx, func(tx *store.Tx) error {
			for i, h := range []string{"w", "v"} {
				w := &store.Workspace{PublicID: store.NewPublicID(), Handle: h, Name: h}
				if err := store.InsertWorkspace(ctx, tx, w); err != nil {
					return err
				}
				if i == 0 {
					ws = w.ID
				} else {
					otherWS = w.ID
				}
			}
			runner = mk(tx, ws, store.ExecutorRunner, store.ExecutorActive)
			provider = mk(tx, ws, store.ExecutorToolProvider, store.ExecutorActive)
			provider2 = mk(tx, ws, store.ExecutorToolProvider, store.ExecutorActive)
			revoked = mk(tx, ws, store.ExecutorToolProvider, store.ExecutorRevoked)
			foreign = mk(tx, otherWS, store.ExecutorToolProvider, store.ExecutorActive)
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		svc := &Service{store: s}
		timeout := int64(5000)
		fetch := announce.Tool{Name: "fetch", EffectProfile: announce.Announced(announce.EffectReadOnly), TimeoutMS: &timeout}
		write := announce.Tool{Name: "fetch", EffectProfile: announce.Announced(announce.EffectWrite)}
		for _, c := range []struct {
			e    *store.Executor
			tool announce.Tool
		}{{runner, fetch}, {provider, fetch}, {provider2, write}, {revoked, fetch}, {foreign, fetch}} {
			if err := svc.PutAnnouncement(ctx, c.e.ID, c.e.WorkspaceID, announce.Announcement{Tools: []announce.Tool{c.tool}}, epoch); err != nil {
				t.Fatal(err)
			}
		}
		a := Addressing{}
		got, ok, err := a.RunnerTool(ctx, s.Reader(), ws, runner.PublicID, "fetch")
		if err != nil || !ok || got.TimeoutMS != 5000 || got.Profile != announce.EffectReadOnly || got.DisplayName != "runner" {
			t.Fatalf("runner route %+v %v %v", got, ok, err)
		}
		for _, miss := range []struct {
			ws       int64
			id, name string
		}{
			{ws, runner.PublicID, "other"}, {otherWS, runner.PublicID, "fetch"}, {ws, provider.PublicID, "fetch"}, {ws, store.NewPublicID(), "fetch"},
		} {
			if _, ok, err := a.RunnerTool(ctx, s.Reader(), miss.ws, miss.id, miss.name); ok || err != nil {
				t.Fatalf("runner route %v: %v %v", miss, ok, err)
			}
		}
		pool, err := a.PoolTool(ctx, s.Reader(), ws, "fetch")
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, p := range pool {
			ids = append(ids, p.ExecutorPublicID)
		}
		want := []string{provider.PublicID, provider2.PublicID}
		if want[0] > want[1] {
			want[0], want[1] = want[1], want[0]
		}
		if diff := cmp.Diff(want, ids); diff != "" {
			t.Fatalf("pool (-want +got):\n%s", diff)
		}
		p, timeoutMS := runs.PoolProfile(pool)
		if p.Kind != announce.KindWrite || timeoutMS != 5000 {
			t.Fatalf("pool profile %+v %d", p, timeoutMS)
		}
		// A new announcement replaces the served names whole.
		if err := svc.PutAnnouncement(ctx, provider.ID, ws, announce.Announcement{Tools: []announce.Tool{}}, epoch); err != nil {
			t.Fatal(err)
		}
		if pool, _ := a.PoolTool(ctx, s.Reader(), ws, "fetch"); len(pool) != 1 || pool[0].ExecutorPublicID != provider2.PublicID {
			t.Fatalf("pool after re-announcing %v", pool)
		}
		// An unvalidated announcement is refused and changes nothing.
		bad := announce.Announcement{Tools: []announce.Tool{{Name: "delegate_task", EffectProfile: announce.Announced(announce.EffectPure)}}}
		if err := svc.PutAnnouncement(ctx, provider2.ID, ws, bad, epoch); !errors.Is(err, refusal.New(refusal.Unprocessable, CodeReservedNamespace, "")) {
			t.Fatalf("reserved name stored: %v", err)
		}
		if pool, _ := a.PoolTool(ctx, s.Reader(), ws, "fetch"); len(pool) != 1 {
			t.Fatalf("a refused announcement changed the pool: %v", pool)
		}
	})
}

func encodeRaw(s string) string {
	return encodeCursorBytes([]byte(s))
}

func TestAnnouncementRefusalShape(t *testing.T) {
	t.Parallel()
	_, ref := announce.ParseAnnouncement([]byte(`{"tools":[{"name":"delegate_task","effect_profile":{"kind":"pure","destructive":false,"effect_scope":"closed","idempotency":"intrinsic","reconciliation":"none"}},{"name":"x"}]}`))
	var err error = ref
	r, ok := refusal.As(err)
	if !ok || r.Kind != refusal.Unprocessable || r.Code != CodeReservedNamespace {
		t.Fatalf("%v", err)
	}
	path, _ := r.Get("path")
	name, _ := r.Get("name")
	b, _ := json.Marshal(r.Errors)
	if path != "tools[0].name" || name != "delegate_task" || string(b) != `[{"code":"reserved_namespace","path":"tools[0].name","name":"delegate_task"},{"code":"invalid_announcement","path":"tools[1].effect_profile"}]` {
		t.Fatalf("path %v name %v errors %s", path, name, b)
	}
	_, ref = announce.ParseAnnouncement([]byte(`{}`))
	if r := ref; r.Kind != refusal.BadRequest || r.Code != CodeParameterMissing || len(r.Errors) != 0 {
		t.Fatalf("missing tools: %v", r)
	}
}
