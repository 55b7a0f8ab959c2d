package identity

import (
	"context"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"

	"github.com/nexuskernel/nexus/core/store"
)

// invalidationChannel is the notification channel (scoped per store) on which instances sharing
// a PostgreSQL store tell each other which cached token decisions are void.
const invalidationChannel = "nexus_auth"

type invalidationKind byte

const (
	// invalidateAll voids every cached decision (an unparseable payload also means this).
	invalidateAll invalidationKind = iota
	// invalidateToken voids one token, named by its hash.
	invalidateToken
	// invalidateAgent voids every token of an agent (the agent was removed).
	invalidateAgent
	// invalidateExecutor voids every token of an executor (rotated or revoked).
	invalidateExecutor
)

// invalidation names cached decisions that a committed change made void.
type invalidation struct {
	kind invalidationKind
	hash tokenKey
	id   int64
}

func tokenInvalidation(hash []byte) invalidation {
	inv := invalidation{kind: invalidateToken}
	copy(inv.hash[:], hash)
	return inv
}

// payload encodes an invalidation for NOTIFY: "t:<hex hash>", "a:<agent id>", "e:<executor id>"
// or "*".
func (inv invalidation) payload() string {
	switch inv.kind {
	case invalidateToken:
		return "t:" + hex.EncodeToString(inv.hash[:])
	case invalidateAgent:
		return "a:" + strconv.FormatInt(inv.id, 10)
	case invalidateExecutor:
		return "e:" + strconv.FormatInt(inv.id, 10)
	}
	return "*"
}

// parseInvalidation decodes a payload; anything it does not understand voids everything, the
// safe reading of a message from a newer build.
func parseInvalidation(p string) invalidation {
	kind, rest, _ := strings.Cut(p, ":")
	switch kind {
	case "t":
		b, err := hex.DecodeString(rest)
		if err == nil && len(b) == len(tokenKey{}) {
			return tokenInvalidation(b)
		}
	case "a", "e":
		id, err := strconv.ParseInt(rest, 10, 64)
		if err == nil {
			k := invalidateAgent
			if kind == "e" {
				k = invalidateExecutor
			}
			return invalidation{kind: k, id: id}
		}
	}
	return invalidation{kind: invalidateAll}
}

// announce tells the other instances, through tx, which decisions the change being committed
// voids; they hear it only if tx commits.
func (a *Authenticator) announce(ctx context.Context, tx *store.Tx, invs ...invalidation) error {
	for _, inv := range invs {
		if err := store.Notify(ctx, tx, a.channel, inv.payload()); err != nil {
			return err
		}
	}
	return nil
}

// forget applies invalidations to this instance's cache. Callers run it after the transaction
// that made the change returns, committed or not: forgetting too much only costs lookups.
func (a *Authenticator) forget(invs ...invalidation) {
	for _, inv := range invs {
		a.cache.invalidate(inv)
	}
}

// Listen subscribes this instance to the invalidations other instances announce, and returns
// once it hears them; stop ends the subscription. On PostgreSQL the cache serves nothing until
// Listen has succeeded and again nothing while the listening connection is down, and it is
// flushed whenever listening (re)starts, since invalidations may have been missed meanwhile. On
// SQLite one process serves the store and Listen has nothing to hear.
func (a *Authenticator) Listen(ctx context.Context) (stop func(), err error) {
	unsubscribe, err := a.store.Subscribe(ctx, a.channel, subscription{a})
	if err != nil {
		return nil, fmt.Errorf("identity: listen for token invalidations: %w", err)
	}
	return func() {
		unsubscribe()
		if a.store.Dialect() == store.Postgres {
			a.cache.setLive(false)
		}
	}, nil
}

// subscription feeds a store subscription into the cache.
type subscription struct{ a *Authenticator }

func (s subscription) Notified(payload string) { s.a.cache.invalidate(parseInvalidation(payload)) }
func (s subscription) Live()                   { s.a.cache.setLive(true) }
func (s subscription) Lost()                   { s.a.cache.setLive(false) }
