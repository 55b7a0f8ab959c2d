package identity

import (
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/nexuskernel/nexus/core/refusal"
	"github.com/nexuskernel/nexus/core/store"
)

// Principal kinds of the member plane.
const (
	KindUser  = store.KindUser
	KindAgent = store.KindAgent
)

// Principal is an authenticated member: a user or an agent.
type Principal struct {
	Kind        string
	ID          int64
	PublicID    string
	Handle      string
	DisplayName string
	// WorkspaceID is the agent's one workspace; zero for a user.
	WorkspaceID int64
	// TokenID is the row of the token that authenticated this request.
	TokenID int64
}

// IsUser reports whether the principal is a person.
func (p *Principal) IsUser() bool { return p.Kind == KindUser }

// Executor is an authenticated executor (a runner or a tool provider), or one read by a member.
type Executor struct {
	ID                int64
	PublicID          string
	Kind              string
	Status            string
	DisplayName       string
	WorkspaceID       int64
	WorkspacePublicID string
	// CreatedAt is Unix ms.
	CreatedAt int64
	// ManagedBy is the catalog name of the plugin that manages the executor; "" for an ordinary
	// one.
	ManagedBy string
	// TokenID is the row of the token that authenticated this request (zero when read by a
	// member).
	TokenID int64
}

// ErrUnauthorized is the one answer to a missing, malformed, unknown, expired, revoked or
// wrong-plane token: the caller learns nothing about which.
var ErrUnauthorized = refusal.New(refusal.Unauthorized, refusal.CodeUnauthorized,
	"A valid bearer token for this route is required.")

// ErrExecutorTokenOnMemberRoute and ErrMemberTokenOnExecutorRoute are ErrUnauthorized for a
// token of the other plane, with a message that says which routes the token opens. The plane is
// read from the token's prefix alone, before any lookup, so the message tells the caller nothing
// the token did not already say: not whether it exists, is revoked or has expired.
var (
	ErrExecutorTokenOnMemberRoute = refusal.New(refusal.Unauthorized, refusal.CodeUnauthorized,
		"This is an executor token (nxe_): it opens only /agent_api/v1/executor and the routes below it. This route needs a member token (nxm_).")
	ErrMemberTokenOnExecutorRoute = refusal.New(refusal.Unauthorized, refusal.CodeUnauthorized,
		"This is a member token (nxm_): it opens every /agent_api/v1 route except /agent_api/v1/executor and the routes below it, which need an executor token (nxe_).")
)

// PresenceWriteInterval is how often at most an executor's last_seen_at is written
// (docs/api.md#executors): presence is display only, and SQLite has one writer, so polling must not
// turn every request into a write.
const PresenceWriteInterval = 10 * time.Second

// Authenticator checks bearer tokens against the store.
//
// Decisions are cached in process, keyed by the token's SHA-256, because a token SELECT on every
// request costs more than the catalog request it guards. The cache must never let through a
// token that was revoked or expired, an agent that was removed, or an executor that was rotated
// or revoked, once the change is answered:
//
//   - expiry is checked on every hit against the token's own expires_at;
//   - every revocation path in this package (token revocation by id or as current, agent
//     removal, executor rotation and revocation) invalidates this instance's entries after its
//     transaction returns, before the route answers;
//   - the same transaction NOTIFYs the other instances sharing a PostgreSQL store, which
//     invalidate on receipt; an instance whose listening connection drops stops using its cache
//     until it listens again, and flushes it then, since notifications may have been missed;
//   - entries live at most TokenCacheTTL, the safety net for changes made outside the server;
//   - only positive decisions are cached, so a new token works at once everywhere;
//   - a load that raced with an invalidation is not stored (the cache's epoch).
//
// A user removed from a workspace keeps a valid token (users may belong to several workspaces);
// what stops them reaching that workspace is the membership read every workspace route does,
// which is never cached.
type Authenticator struct {
	store   *store.Store
	now     func() time.Time
	log     hclog.Logger
	cache   *tokenCache
	channel string

	seenMu sync.Mutex
	// seen is when this instance last wrote each executor's last_seen_at.
	seen map[int64]time.Time
}

// AuthOption adjusts an Authenticator.
type AuthOption func(*Authenticator)

// WithLogger sets where the Authenticator reports failures it absorbs (a presence write).
func WithLogger(l hclog.Logger) AuthOption { return func(a *Authenticator) { a.log = l } }

// NewAuthenticator returns an Authenticator over s. now defaults to time.Now. On PostgreSQL its
// cache serves nothing until Listen has succeeded.
func NewAuthenticator(s *store.Store, now func() time.Time, opts ...AuthOption) *Authenticator {
	if now == nil {
		now = time.Now
	}
	a := &Authenticator{
		store:   s,
		now:     now,
		log:     hclog.NewNullLogger(),
		cache:   newTokenCache(s.Dialect() != store.Postgres),
		channel: s.Channel(invalidationChannel),
		seen:    map[int64]time.Time{},
	}
	for _, o := range opts {
		o(a)
	}
	return a
}

// Member authenticates a member-plane token. A token of the executor plane, like any other
// token that does not open a member route, is ErrUnauthorized.
func (a *Authenticator) Member(ctx context.Context, secret string) (*Principal, error) {
	if p, ok := TokenPlane(secret); !ok {
		return nil, ErrUnauthorized
	} else if p != MemberPlane {
		return nil, ErrExecutorTokenOnMemberRoute
	}
	hash := HashToken(secret)
	key := tokenKey(hash)
	now := a.now()
	e, epoch := a.cache.get(key, now)
	if e != nil && e.member != nil {
		if e.expiresAt != 0 && e.expiresAt <= store.Millis(now) {
			return nil, ErrUnauthorized
		}
		p := *e.member
		return &p, nil
	}
	row, err := store.MemberTokenByHash(ctx, a.store.Reader(), hash)
	if errors.Is(err, store.ErrNotFound) {
		return nil, ErrUnauthorized
	}
	if err != nil {
		return nil, fmt.Errorf("identity: token lookup: %w", err)
	}
	// The index found the row by hash; comparing again in constant time keeps the decision
	// independent of where two hashes first differ, whatever the database did.
	if subtle.ConstantTimeCompare(row.SecretHash, hash) != 1 {
		return nil, ErrUnauthorized
	}
	if row.RevokedAt.Valid || (row.ExpiresAt.Valid && row.ExpiresAt.Int64 <= store.Millis(now)) || row.AgentRemoved {
		return nil, ErrUnauthorized
	}
	p := &Principal{
		Kind:        row.Kind,
		ID:          row.PrincipalID,
		PublicID:    row.PublicID,
		Handle:      row.Handle,
		DisplayName: row.DisplayName,
		WorkspaceID: row.AgentWorkspaceID,
		TokenID:     row.TokenID,
	}
	cached := *p
	a.cache.put(key, &cachedToken{member: &cached, expiresAt: row.ExpiresAt.Int64, loadedAt: now}, epoch)
	return p, nil
}

// Executor authenticates an executor-plane token and records the executor's presence (its
// last_seen_at, written at most once per PresenceWriteInterval by this instance). A member
// token, or a token of a revoked executor or a rotated-away token, is ErrUnauthorized.
func (a *Authenticator) Executor(ctx context.Context, secret string) (*Executor, error) {
	if p, ok := TokenPlane(secret); !ok {
		return nil, ErrUnauthorized
	} else if p != ExecutorPlane {
		return nil, ErrMemberTokenOnExecutorRoute
	}
	hash := HashToken(secret)
	key := tokenKey(hash)
	now := a.now()
	e, epoch := a.cache.get(key, now)
	var ex *Executor
	if e != nil && e.executor != nil {
		c := *e.executor
		ex = &c
	} else {
		row, err := store.ExecutorTokenByHash(ctx, a.store.Reader(), hash)
		if errors.Is(err, store.ErrNotFound) {
			return nil, ErrUnauthorized
		}
		if err != nil {
			return nil, fmt.Errorf("identity: token lookup: %w", err)
		}
		if subtle.ConstantTimeCompare(row.SecretHash, hash) != 1 {
			return nil, ErrUnauthorized
		}
		if row.TokenRevokedAt.Valid || row.Status != store.ExecutorActive {
			return nil, ErrUnauthorized
		}
		ex = executorOf(&row.Executor)
		ex.TokenID = row.TokenID
		cached := *ex
		a.cache.put(key, &cachedToken{executor: &cached, loadedAt: now}, epoch)
	}
	a.touch(ctx, ex.ID, now)
	return ex, nil
}

// touch writes an executor's last_seen_at when this instance has not done so within
// PresenceWriteInterval. Presence is display only: a failed write is logged and retried on a
// later request, never a reason to refuse this one.
func (a *Authenticator) touch(ctx context.Context, executorID int64, now time.Time) {
	a.seenMu.Lock()
	last, ok := a.seen[executorID]
	due := !ok || now.Sub(last) >= PresenceWriteInterval || now.Before(last)
	if due {
		a.seen[executorID] = now
	}
	a.seenMu.Unlock()
	if !due {
		return
	}
	err := a.store.Write(ctx, func(tx *store.Tx) error {
		return store.TouchExecutor(ctx, tx, executorID, store.Millis(now))
	})
	if err != nil {
		a.seenMu.Lock()
		delete(a.seen, executorID)
		a.seenMu.Unlock()
		a.log.Warn("recording executor presence failed", "executor_id", executorID, "error", err)
	}
}

func executorOf(r *store.Executor) *Executor {
	return &Executor{
		ID:                r.ID,
		PublicID:          r.PublicID,
		Kind:              r.Kind,
		Status:            r.Status,
		DisplayName:       r.DisplayName,
		WorkspaceID:       r.WorkspaceID,
		WorkspacePublicID: r.WorkspacePublicID,
		CreatedAt:         r.CreatedAt,
		ManagedBy:         r.ManagedBy.String,
	}
}
