package identity

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sort"

	"github.com/nexuskernel/nexus/core/refusal"
	"github.com/nexuskernel/nexus/core/store"
)

// ErrNotSteward: a user member of the workspace who neither owns it nor is the agent's steward,
// at a door that acts for a person over one agent (docs/api.md#an-agents-profile-and-tokens).
var ErrNotSteward = refusal.New(refusal.Forbidden, refusal.CodeNotAuthorized,
	"Only the agent's steward or an owner of its workspace may do this.")

// AgentAccess is a person's standing over one agent: the agent's steward, or an owner of its
// workspace (docs/api.md#an-agents-profile-and-tokens).
type AgentAccess struct {
	Access
	Agent Agent
}

// AgentAccess resolves agentRef (a public id, or a handle: a UUID-form value is a public id) to
// an agent of the workspace wsRef names and checks that the caller stands over it, in the order
// (docs/api.md#an-agents-profile-and-tokens): the workspace's visibility (404 not_found), the kind
// of member (403 not_user), the agent (404 not_found; a removed agent is none), the caller's
// standing (403 not_authorized). It reads through the store's reader: a write repeats the
// checks in its own transaction with RecheckAgent.
func (d *Directory) AgentAccess(ctx context.Context, caller *Principal, wsRef, agentRef string) (*AgentAccess, error) {
	return d.agentAccess(ctx, d.store.Reader(), caller, wsRef, agentRef)
}

func (d *Directory) agentAccess(ctx context.Context, q store.Querier, caller *Principal, wsRef, agentRef string) (*AgentAccess, error) {
	acc, err := d.AccessIn(ctx, q, caller, wsRef, NeedMember)
	if err != nil {
		return nil, err
	}
	if !caller.IsUser() {
		return nil, ErrNotUser
	}
	row, err := agentIn(ctx, q, acc.Workspace.ID, agentRef)
	if err != nil {
		return nil, err
	}
	if acc.Workspace.Role != RoleOwner && row.StewardUserID != caller.ID {
		return nil, ErrNotSteward
	}
	return &AgentAccess{Access: *acc, Agent: agentOf(row)}, nil
}

// agentIn finds a live agent of a workspace by public id or handle.
func agentIn(ctx context.Context, q store.Querier, workspaceID int64, ref string) (*store.AgentRow, error) {
	var row *store.AgentRow
	var err error
	if id, byID := canonicalID(ref); byID {
		row, err = store.AgentInWorkspace(ctx, q, workspaceID, id)
	} else if ValidHandle(ref) {
		row, err = store.AgentByHandle(ctx, q, workspaceID, ref)
	} else {
		return nil, errNoAgent(ref)
	}
	if errors.Is(err, store.ErrNotFound) || (err == nil && row.RemovedAt.Valid) {
		return nil, errNoAgent(ref)
	}
	return row, err
}

// RecheckAgent repeats acc's checks inside a write transaction, after locking the workspace's
// membership: a write that acts over an agent stands on what its own transaction reads, never on
// the door's earlier read (a steward replaced, an owner demoted, the agent removed meanwhile).
func (d *Directory) RecheckAgent(ctx context.Context, tx *store.Tx, acc *AgentAccess) error {
	if err := store.LockWorkspace(ctx, tx, acc.Workspace.ID); err != nil {
		return err
	}
	_, err := d.agentAccess(ctx, tx, acc.Caller, acc.Workspace.PublicID, acc.Agent.PublicID)
	return err
}

func errNoAgent(ref string) error {
	return refusal.Newf(refusal.NotFound, refusal.CodeNotFound, "No agent %q in this workspace.", ref)
}

// CreateAgentTokenRequest is POST /agent_api/v1/workspaces/{ws}/agents/{agent}/tokens.
type CreateAgentTokenRequest struct {
	// Label names the token in listings; "" labels it "minted by <the caller's handle>".
	Label string
	// ExpiresAt is Unix ms and must be in the future; nil means the token does not expire.
	ExpiresAt *int64
	// RevokeOthers revokes every other live token of the agent in the same transaction: the
	// lost-token case.
	RevokeOthers bool
}

// CreatedAgentToken is an agent's new token, shown once, and the tokens revoked with it.
type CreatedAgentToken struct {
	Token string
	Info  TokenInfo
	// Revoked are the public ids of the agent's tokens RevokeOthers revoked, sorted.
	Revoked []string
}

// mintedByLabel labels an agent token a person minted without a label.
const mintedByLabel = "minted by %s"

// CreateAgentToken mints a token for the agent of acc, by its steward or an owner; with
// RevokeOthers it revokes the agent's other live tokens, which stop authenticating before this
// returns, here and (through NOTIFY) on every instance.
func (d *Directory) CreateAgentToken(ctx context.Context, acc *AgentAccess, req *CreateAgentTokenRequest) (*CreatedAgentToken, error) {
	label := req.Label
	if label == "" {
		label = fmt.Sprintf(mintedByLabel, acc.Caller.Handle)
	}
	if !validLine(label, 0, maxTokenLabelChars) {
		return nil, invalid("token.label", "label must be at most %d characters without control characters.", maxTokenLabelChars)
	}
	now := store.Millis(d.now())
	if req.ExpiresAt != nil && *req.ExpiresAt <= now {
		return nil, invalid("token.expires_at", "expires_at must be in the future.")
	}
	secret, hash := MintToken(MemberPlane)
	t := &store.Token{PublicID: store.NewPublicID(), SecretHash: hash, Label: label, CreatedAt: now,
		AgentID: sql.NullInt64{Int64: acc.Agent.ID, Valid: true}}
	if req.ExpiresAt != nil {
		t.ExpiresAt = sql.NullInt64{Int64: *req.ExpiresAt, Valid: true}
	}
	out := &CreatedAgentToken{Token: secret}
	var invs []invalidation
	defer func() { d.auth.forget(invs...) }()
	err := d.store.Write(ctx, func(tx *store.Tx) error {
		if err := d.RecheckAgent(ctx, tx, acc); err != nil {
			return err
		}
		if err := store.InsertToken(ctx, tx, t); err != nil {
			return err
		}
		if !req.RevokeOthers {
			return nil
		}
		revoked, err := store.RevokeAgentTokensExcept(ctx, tx, acc.Agent.ID, t.ID, now)
		if err != nil {
			return err
		}
		sort.Strings(revoked)
		out.Revoked = revoked
		invs = append(invs, invalidation{kind: invalidateAgent, id: acc.Agent.ID})
		return d.auth.announce(ctx, tx, invs...)
	})
	if err != nil {
		return nil, err
	}
	out.Info = TokenInfo{PublicID: t.PublicID, Label: t.Label, CreatedAt: t.CreatedAt, ExpiresAt: nullMillis(t.ExpiresAt)}
	return out, nil
}
