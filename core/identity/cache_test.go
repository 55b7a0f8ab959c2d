package identity

import (
	"testing"
	"time"
)

func TestTokenCache(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	k := tokenKey(HashToken("nxm_a"))
	entry := func() *cachedToken { return &cachedToken{member: &Principal{Kind: KindAgent, ID: 7}, loadedAt: t0} }

	c := newTokenCache(true)
	_, ep := c.get(k, t0)
	c.put(k, entry(), ep)
	if e, _ := c.get(k, t0.Add(TokenCacheTTL-time.Nanosecond)); e == nil {
		t.Fatal("entry missing within the TTL")
	}
	if e, _ := c.get(k, t0.Add(TokenCacheTTL)); e != nil {
		t.Fatal("entry served at the TTL")
	}
	if e, _ := c.get(k, t0.Add(-time.Second)); e != nil {
		t.Fatal("entry served when the clock went backwards")
	}

	// A load that began before an invalidation is not stored.
	c = newTokenCache(true)
	_, ep = c.get(k, t0)
	c.invalidate(tokenInvalidation(k[:]))
	c.put(k, entry(), ep)
	if c.len() != 0 {
		t.Fatal("a load that raced with an invalidation was stored")
	}

	// Targeted invalidations.
	for _, inv := range []invalidation{
		tokenInvalidation(k[:]),
		{kind: invalidateAgent, id: 7},
		{kind: invalidateAll},
	} {
		c = newTokenCache(true)
		_, ep = c.get(k, t0)
		c.put(k, entry(), ep)
		c.invalidate(inv)
		if c.len() != 0 {
			t.Errorf("invalidation %+v left the entry", inv)
		}
	}
	c = newTokenCache(true)
	_, ep = c.get(k, t0)
	c.put(k, entry(), ep)
	c.invalidate(invalidation{kind: invalidateAgent, id: 8})
	c.invalidate(invalidation{kind: invalidateExecutor, id: 7})
	if c.len() != 1 {
		t.Error("an invalidation of another principal dropped the entry")
	}

	// A cache that is not live neither serves nor stores; going live or dead flushes.
	c = newTokenCache(false)
	_, ep = c.get(k, t0)
	c.put(k, entry(), ep)
	if c.len() != 0 {
		t.Fatal("a cache that is not live stored an entry")
	}
	c.setLive(true)
	_, ep = c.get(k, t0)
	c.put(k, entry(), ep)
	c.setLive(false)
	if e, _ := c.get(k, t0); e != nil || c.len() != 0 {
		t.Fatal("going dead did not flush")
	}

	// The bound.
	c = newTokenCache(true)
	for i := 0; i < tokenCacheMaxEntries+10; i++ {
		var key tokenKey
		key[0], key[1], key[2] = byte(i), byte(i>>8), byte(i>>16)
		_, ep := c.get(key, t0)
		c.put(key, entry(), ep)
	}
	if c.len() != tokenCacheMaxEntries {
		t.Fatalf("cache holds %d entries, bound %d", c.len(), tokenCacheMaxEntries)
	}
}

func TestInvalidationPayloads(t *testing.T) {
	t.Parallel()
	h := HashToken("nxm_x")
	for _, inv := range []invalidation{
		tokenInvalidation(h),
		{kind: invalidateAgent, id: 42},
		{kind: invalidateExecutor, id: 9},
		{kind: invalidateAll},
	} {
		if got := parseInvalidation(inv.payload()); got != inv {
			t.Errorf("round trip of %q = %+v, want %+v", inv.payload(), got, inv)
		}
	}
	// Anything not understood voids everything.
	for _, p := range []string{"", "t:zz", "t:abcd", "a:x", "q:1", "e:"} {
		if got := parseInvalidation(p); got.kind != invalidateAll {
			t.Errorf("parseInvalidation(%q) = %+v, want all", p, got)
		}
	}
}
