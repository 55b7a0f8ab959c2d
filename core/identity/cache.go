package identity

import (
	"crypto/sha256"
	"sync"
	"time"
)

// TokenCacheTTL bounds how long a cached token decision is trusted. Every revocation path
// invalidates the cache explicitly (in-process at once, other instances through PostgreSQL
// NOTIFY), so the TTL is only the safety net for a change nobody announced: a row edited by hand,
// a notification lost in a way the listener did not notice. Ten seconds keeps that window short
// while a busy token still reloads only a few times a minute.
const TokenCacheTTL = 10 * time.Second

// tokenCacheMaxEntries bounds the cache's memory (a few hundred bytes an entry): far more tokens
// than a deployment has in use at once. When it is full an arbitrary entry makes room, which only
// costs that token one more lookup.
const tokenCacheMaxEntries = 16384

type tokenKey [sha256.Size]byte

// cachedToken is the decision for one valid token: the principal it authenticates as and when
// that stops being true by the clock alone.
type cachedToken struct {
	member   *Principal
	executor *Executor
	// expiresAt is the token's own expiry in Unix ms; 0 means none.
	expiresAt int64
	// loadedAt is when the row was read, for the TTL.
	loadedAt time.Time
}

// tokenCache holds positive decisions only: an unknown token is looked up every time, so a token
// minted anywhere (another instance, the break-glass command) works at once.
//
// Invalidation races with loading: a request may read a token row just before a revocation
// commits and store it just after the invalidation ran. Every invalidation therefore bumps an
// epoch, and a load only stores its result when the epoch it began under is still current.
type tokenCache struct {
	mu      sync.RWMutex
	entries map[tokenKey]*cachedToken
	epoch   uint64
	// live is false while invalidations from other instances may be missed (before listening
	// starts, and while the listening connection is down): the cache then neither serves nor
	// stores, and every request reads the store.
	live bool
}

func newTokenCache(live bool) *tokenCache {
	return &tokenCache{entries: map[tokenKey]*cachedToken{}, live: live}
}

// get returns the entry for k if the cache is live and the entry is within the TTL, and the
// current epoch for a load that follows a miss.
func (c *tokenCache) get(k tokenKey, now time.Time) (*cachedToken, uint64) {
	c.mu.RLock()
	e, ok := c.entries[k]
	live, epoch := c.live, c.epoch
	c.mu.RUnlock()
	if !live || !ok {
		return nil, epoch
	}
	if age := now.Sub(e.loadedAt); age >= TokenCacheTTL || age < 0 {
		return nil, epoch
	}
	return e, epoch
}

// put stores a decision read under epoch, unless an invalidation happened since.
func (c *tokenCache) put(k tokenKey, e *cachedToken, epoch uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.live || c.epoch != epoch {
		return
	}
	if len(c.entries) >= tokenCacheMaxEntries {
		for victim := range c.entries {
			delete(c.entries, victim)
			break
		}
	}
	c.entries[k] = e
}

// invalidate drops the entries an invalidation names and bumps the epoch.
func (c *tokenCache) invalidate(inv invalidation) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.epoch++
	switch inv.kind {
	case invalidateToken:
		delete(c.entries, inv.hash)
	case invalidateAgent:
		for k, e := range c.entries {
			if e.member != nil && e.member.Kind == KindAgent && e.member.ID == inv.id {
				delete(c.entries, k)
			}
		}
	case invalidateExecutor:
		for k, e := range c.entries {
			if e.executor != nil && e.executor.ID == inv.id {
				delete(c.entries, k)
			}
		}
	default:
		clear(c.entries)
	}
}

// setLive flushes the cache and turns it on or off.
func (c *tokenCache) setLive(live bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.epoch++
	clear(c.entries)
	c.live = live
}

func (c *tokenCache) len() int {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return len(c.entries)
}
