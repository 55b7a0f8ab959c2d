package identity

import (
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"time"

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

// ErrUnauthorized is the one answer to a missing, malformed, unknown, expired, revoked or
// wrong-plane token: the caller learns nothing about which.
var ErrUnauthorized = refusal.New(refusal.Unauthorized, refusal.CodeUnauthorized,
	"A valid bearer token for this route is required.")

// Authenticator checks bearer tokens against the store.
type Authenticator struct {
	store *store.Store
	now   func() time.Time
}

// NewAuthenticator returns an Authenticator over s. now defaults to time.Now.
func NewAuthenticator(s *store.Store, now func() time.Time) *Authenticator {
	if now == nil {
		now = time.Now
	}
	return &Authenticator{store: s, now: now}
}

// Member authenticates a member-plane token. A token of the executor plane, like any other
// token that does not open a member route, is ErrUnauthorized.
func (a *Authenticator) Member(ctx context.Context, secret string) (*Principal, error) {
	if p, ok := TokenPlane(secret); !ok || p != MemberPlane {
		return nil, ErrUnauthorized
	}
	hash := HashToken(secret)
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
	now := store.Millis(a.now())
	if row.RevokedAt.Valid || (row.ExpiresAt.Valid && row.ExpiresAt.Int64 <= now) || row.AgentRemoved {
		return nil, ErrUnauthorized
	}
	return &Principal{
		Kind:        row.Kind,
		ID:          row.PrincipalID,
		PublicID:    row.PublicID,
		Handle:      row.Handle,
		DisplayName: row.DisplayName,
		WorkspaceID: row.AgentWorkspaceID,
		TokenID:     row.TokenID,
	}, nil
}
