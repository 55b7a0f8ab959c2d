package identity

import (
	"context"
	"database/sql"
	"errors"
	"sort"

	"github.com/nexuskernel/nexus/core/store"
)

// TokenInfo describes one of a member's tokens; the secret itself is never stored or shown again.
type TokenInfo struct {
	PublicID string
	Label    string
	// CreatedAt and ExpiresAt are Unix ms; ExpiresAt is nil for a token that does not expire.
	CreatedAt int64
	ExpiresAt *int64
	// Current is true for the token that authenticated the listing request.
	Current bool
}

// CreateTokenRequest is POST /agent_api/v1/tokens: both fields optional.
type CreateTokenRequest struct {
	Label string
	// ExpiresAt is Unix ms and must be in the future; nil means the token does not expire.
	ExpiresAt *int64
}

// CreatedToken is a new token, shown once, and its description.
type CreatedToken struct {
	Token string
	Info  TokenInfo
}

// CreateToken mints an additional token for the caller.
func (d *Directory) CreateToken(ctx context.Context, caller *Principal, req *CreateTokenRequest) (*CreatedToken, error) {
	if !validLine(req.Label, 0, maxTokenLabelChars) {
		return nil, invalid("token.label", "label must be at most %d characters without control or bidirectional control characters.", maxTokenLabelChars)
	}
	now := store.Millis(d.now())
	if req.ExpiresAt != nil && *req.ExpiresAt <= now {
		return nil, invalid("token.expires_at", "expires_at must be in the future.")
	}
	secret, hash := MintToken(MemberPlane)
	t := &store.Token{PublicID: store.NewPublicID(), SecretHash: hash, Label: req.Label, CreatedAt: now}
	if req.ExpiresAt != nil {
		t.ExpiresAt = sql.NullInt64{Int64: *req.ExpiresAt, Valid: true}
	}
	owner := sql.NullInt64{Int64: caller.ID, Valid: true}
	if caller.IsUser() {
		t.UserID = owner
	} else {
		t.AgentID = owner
	}
	if err := d.store.Write(ctx, func(tx *store.Tx) error { return store.InsertToken(ctx, tx, t) }); err != nil {
		return nil, err
	}
	return &CreatedToken{Token: secret, Info: tokenInfo(t, caller)}, nil
}

func tokenInfo(t *store.Token, caller *Principal) TokenInfo {
	return TokenInfo{PublicID: t.PublicID, Label: t.Label, CreatedAt: t.CreatedAt, ExpiresAt: nullMillis(t.ExpiresAt), Current: t.ID == caller.TokenID}
}

// Tokens lists the caller's live tokens (neither revoked nor expired), oldest first.
func (d *Directory) Tokens(ctx context.Context, caller *Principal) ([]TokenInfo, error) {
	rows, err := store.LiveTokensOf(ctx, d.store.Reader(), caller.Kind, caller.ID, store.Millis(d.now()))
	if err != nil {
		return nil, err
	}
	out := make([]TokenInfo, 0, len(rows))
	for i := range rows {
		out = append(out, tokenInfo(&rows[i], caller))
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].CreatedAt != out[j].CreatedAt {
			return out[i].CreatedAt < out[j].CreatedAt
		}
		return out[i].PublicID < out[j].PublicID
	})
	return out, nil
}

// RevokeToken revokes one of the caller's own tokens by public id; another's, or an unknown id, is
// not_found. Revoking a token already revoked changes nothing. The token stops authenticating
// before this returns, on this instance and (through NOTIFY) on every other.
func (d *Directory) RevokeToken(ctx context.Context, caller *Principal, publicID string) error {
	id, ok := canonicalID(publicID)
	if !ok {
		return errNoToken(publicID)
	}
	t, err := store.TokenOf(ctx, d.store.Reader(), caller.Kind, caller.ID, id)
	if errors.Is(err, store.ErrNotFound) {
		return errNoToken(publicID)
	}
	if err != nil {
		return err
	}
	return d.revokeToken(ctx, t)
}

// RevokeCurrentToken revokes the token that authenticated the caller.
func (d *Directory) RevokeCurrentToken(ctx context.Context, caller *Principal) error {
	t, err := store.TokenByID(ctx, d.store.Reader(), caller.TokenID)
	if err != nil {
		return err
	}
	return d.revokeToken(ctx, t)
}

func (d *Directory) revokeToken(ctx context.Context, t *store.Token) error {
	inv := tokenInvalidation(t.SecretHash)
	defer d.auth.forget(inv)
	return d.store.Write(ctx, func(tx *store.Tx) error {
		if err := store.RevokeToken(ctx, tx, t.ID, store.Millis(d.now())); err != nil {
			return err
		}
		return d.auth.announce(ctx, tx, inv)
	})
}
