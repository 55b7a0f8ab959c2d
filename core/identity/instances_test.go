package identity

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/nexuskernel/nexus/core/store"
	"github.com/nexuskernel/nexus/core/store/storetest"
)

var tBase = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// clock is a settable clock for tests.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

// eventually polls cond for up to five seconds: a notification crosses a real connection.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		if cond() {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("not within 5 s: %s", what)
}

// has reports whether the cache holds an entry for k.
func (c *tokenCache) has(k tokenKey) bool {
	c.mu.RLock()
	defer c.mu.RUnlock()
	_, ok := c.entries[k]
	return ok
}

func unauthorized(err error) bool { return errors.Is(err, ErrUnauthorized) }

// TestCacheServesWithinTTL shows the cache at work and its TTL as the bound: a token deleted
// behind the server's back (no invalidation) still authenticates from the cache until the TTL
// passes, then no more. Every path the server itself takes invalidates at once (the route tests).
func TestCacheServesWithinTTL(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		clk := &clock{now: tBase}
		boot, err := Bootstrap(ctx, s, t.TempDir(), "", tBase)
		if err != nil {
			t.Fatal(err)
		}
		a := NewAuthenticator(s, clk.Now)
		stop, err := a.Listen(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer stop()
		if _, err := a.Member(ctx, boot.Token); err != nil {
			t.Fatal(err)
		}
		if _, err := s.DB().ExecContext(ctx, `DELETE FROM tokens`); err != nil {
			t.Fatal(err)
		}
		clk.Advance(TokenCacheTTL - time.Millisecond)
		if _, err := a.Member(ctx, boot.Token); err != nil {
			t.Fatalf("within the TTL the cached decision stands: %v", err)
		}
		clk.Advance(time.Millisecond)
		if _, err := a.Member(ctx, boot.Token); !unauthorized(err) {
			t.Fatalf("past the TTL: got %v, want unauthorized", err)
		}
	})
}

// TestPostgresCacheNeedsListening: on PostgreSQL an Authenticator that does not listen for other
// instances' invalidations never caches, and stops caching when it stops listening.
func TestPostgresCacheNeedsListening(t *testing.T) {
	t.Parallel()
	for _, d := range storetest.Dialects() {
		if d != store.Postgres {
			continue
		}
		ctx := context.Background()
		s := storetest.Open(t, d)
		boot, err := Bootstrap(ctx, s, t.TempDir(), "", tBase)
		if err != nil {
			t.Fatal(err)
		}
		a := NewAuthenticator(s, nil)
		if _, err := a.Member(ctx, boot.Token); err != nil {
			t.Fatal(err)
		}
		if n := a.cache.len(); n != 0 {
			t.Fatalf("a PostgreSQL authenticator that is not listening cached %d entries", n)
		}
		stop, err := a.Listen(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := a.Member(ctx, boot.Token); err != nil || a.cache.len() != 1 {
			t.Fatalf("listening: err %v, %d entries; want the token cached", err, a.cache.len())
		}
		stop()
		if _, err := a.Member(ctx, boot.Token); err != nil || a.cache.len() != 0 {
			t.Fatalf("after stop: err %v, %d entries; want none", err, a.cache.len())
		}
	}
}

// instance is one server's view of a shared PostgreSQL store.
type instance struct {
	store *store.Store
	auth  *Authenticator
	dir   *Directory
}

func openInstance(t *testing.T, url string, now func() time.Time) *instance {
	t.Helper()
	ctx := context.Background()
	s, err := store.Open(ctx, url, store.Options{MaxReaders: 4})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	if _, err := s.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	a := NewAuthenticator(s, now)
	stop, err := a.Listen(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	return &instance{store: s, auth: a, dir: NewDirectory(s, a, DirectoryOptions{Now: now})}
}

// TestInstancesInvalidateEachOther: two instances share a PostgreSQL store; a token cached by
// one is refused by it soon after the other revokes it, on every revocation path. The clock is
// frozen, so the TTL never expires anything: only the notification can.
func TestInstancesInvalidateEachOther(t *testing.T) {
	t.Parallel()
	for _, d := range storetest.Dialects() {
		if d != store.Postgres {
			continue // one process serves a SQLite store: there is no other instance
		}
		ctx := context.Background()
		url := storetest.FreshURL(t, d)
		frozen := func() time.Time { return tBase }
		a := openInstance(t, url, frozen)
		b := openInstance(t, url, frozen)
		boot, err := Bootstrap(ctx, a.store, t.TempDir(), "", tBase)
		if err != nil {
			t.Fatal(err)
		}
		admin, err := a.auth.Member(ctx, boot.Token)
		if err != nil {
			t.Fatal(err)
		}
		cachedByB := func(tok string, member bool) {
			t.Helper()
			var err error
			if member {
				_, err = b.auth.Member(ctx, tok)
			} else {
				_, err = b.auth.Executor(ctx, tok)
			}
			if err != nil {
				t.Fatal(err)
			}
			if !b.auth.cache.has(tokenKey(HashToken(tok))) {
				t.Fatal("instance B did not cache the token")
			}
		}
		refusedByB := func(what, tok string, member bool) {
			t.Helper()
			eventually(t, what, func() bool {
				var err error
				if member {
					_, err = b.auth.Member(ctx, tok)
				} else {
					_, err = b.auth.Executor(ctx, tok)
				}
				return unauthorized(err)
			})
		}

		// A token revoked by id.
		tok, err := a.dir.CreateToken(ctx, admin, &CreateTokenRequest{Label: "x"})
		if err != nil {
			t.Fatal(err)
		}
		cachedByB(tok.Token, true)
		if err := a.dir.RevokeToken(ctx, admin, tok.Info.PublicID); err != nil {
			t.Fatal(err)
		}
		refusedByB("revoked token", tok.Token, true)

		// The current token.
		tok, err = a.dir.CreateToken(ctx, admin, &CreateTokenRequest{})
		if err != nil {
			t.Fatal(err)
		}
		cachedByB(tok.Token, true)
		p, err := a.auth.Member(ctx, tok.Token)
		if err != nil {
			t.Fatal(err)
		}
		if err := a.dir.RevokeCurrentToken(ctx, p); err != nil {
			t.Fatal(err)
		}
		refusedByB("revoked current token", tok.Token, true)

		// A removed agent.
		acc, err := a.dir.Access(ctx, admin, "default", NeedOwner)
		if err != nil {
			t.Fatal(err)
		}
		ag, err := a.dir.CreateAgent(ctx, acc, &CreateAgentRequest{Handle: "bot", DisplayName: "Bot"})
		if err != nil {
			t.Fatal(err)
		}
		cachedByB(ag.Token, true)
		if err := a.dir.RemoveMember(ctx, acc, ag.Agent.PublicID); err != nil {
			t.Fatal(err)
		}
		refusedByB("removed agent", ag.Token, true)

		// A rotated, then a revoked executor.
		ex, err := a.dir.CreateExecutor(ctx, admin, &CreateExecutorRequest{Kind: ExecutorRunner, DisplayName: "box"})
		if err != nil {
			t.Fatal(err)
		}
		cachedByB(ex.Token, false)
		rot, err := a.dir.RotateExecutorToken(ctx, admin, ex.Executor.PublicID)
		if err != nil {
			t.Fatal(err)
		}
		refusedByB("rotated executor token", ex.Token, false)
		cachedByB(rot.Token, false)
		if _, err := a.dir.RevokeExecutor(ctx, admin, ex.Executor.PublicID); err != nil {
			t.Fatal(err)
		}
		refusedByB("revoked executor", rot.Token, false)

		// The admin's own token was never touched: still served.
		if _, err := b.auth.Member(ctx, boot.Token); err != nil {
			t.Fatal(err)
		}
	}
}

// TestListenerLossFlushes: when an instance's listening connection dies, notifications may be
// lost, so it stops trusting its cache until it listens again, and flushes it then. The test
// kills the connection and revokes a cached token behind the server's back (no notification):
// the instance must refuse it, long before the (frozen) TTL.
func TestListenerLossFlushes(t *testing.T) {
	t.Parallel()
	for _, d := range storetest.Dialects() {
		if d != store.Postgres {
			continue
		}
		ctx := context.Background()
		url := storetest.FreshURL(t, d)
		frozen := func() time.Time { return tBase }
		b := openInstance(t, url+"&application_name=nexus_listener_loss", frozen)
		boot, err := Bootstrap(ctx, b.store, t.TempDir(), "", tBase)
		if err != nil {
			t.Fatal(err)
		}
		other, err := MintMemberToken(ctx, b.store, "admin", "other", tBase)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := b.auth.Member(ctx, boot.Token); err != nil {
			t.Fatal(err)
		}
		var killed int
		if err := b.store.Reader().Get(ctx, &killed, `
SELECT COUNT(pg_terminate_backend(pid)) FROM pg_stat_activity
WHERE application_name = 'nexus_listener_loss' AND query = ?`, `LISTEN "`+b.auth.channel+`"`); err != nil {
			t.Fatal(err)
		}
		if killed != 1 {
			t.Fatalf("terminated %d listening connections, want 1", killed)
		}
		if _, err := b.store.DB().ExecContext(ctx, `UPDATE tokens SET revoked_at = 1 WHERE label = 'bootstrap'`); err != nil {
			t.Fatal(err)
		}
		eventually(t, "the cached token refused after the listener was lost", func() bool {
			_, err := b.auth.Member(ctx, boot.Token)
			return unauthorized(err)
		})
		// Listening again, the cache serves again.
		eventually(t, "caching resumed after reconnection", func() bool {
			_, err := b.auth.Member(ctx, other)
			return err == nil && b.auth.cache.len() == 1
		})
	}
}
