package identity

import (
	"context"
	"database/sql"
	"errors"
	"sort"

	"github.com/nexuskernel/nexus/core/store"
)

// Agent is an agent application of one workspace.
type Agent struct {
	ID                  int64
	PublicID            string
	Handle              string
	DisplayName         string
	StewardUserPublicID string
	WorkspacePublicID   string
	// CreatedAt is Unix ms.
	CreatedAt int64
}

func agentOf(r *store.AgentRow) Agent {
	return Agent{
		ID: r.ID, PublicID: r.PublicID, Handle: r.Handle, DisplayName: r.DisplayName,
		StewardUserPublicID: r.StewardUserPublicID, WorkspacePublicID: r.WorkspacePublicID, CreatedAt: r.CreatedAt,
	}
}

// CreateAgentRequest is POST /agent_api/v1/workspaces/{ws}/agents.
type CreateAgentRequest struct {
	Handle      string
	DisplayName string
	// StewardUserPublicID names a user member of the workspace; nil means the caller.
	StewardUserPublicID *string
}

// CreatedAgent is a new agent and its first token, shown once.
type CreatedAgent struct {
	Agent Agent
	Token string
}

// initialTokenLabel labels the token a create route mints with its principal.
const initialTokenLabel = "initial"

// CreateAgent creates an agent in the workspace of acc, which must be owned by the caller
// (checked by Access with NeedOwner and again in the transaction).
func (d *Directory) CreateAgent(ctx context.Context, acc *Access, req *CreateAgentRequest) (*CreatedAgent, error) {
	if err := checkHandle("agent.handle", req.Handle); err != nil {
		return nil, err
	}
	if !ValidDisplayName(req.DisplayName) {
		return nil, invalid("agent.display_name", "display_name must be 1 to %d characters without control or bidirectional control characters.", maxDisplayNameChars)
	}
	secret, hash := MintToken(MemberPlane)
	at := store.Millis(d.now())
	var out *CreatedAgent
	err := d.store.Write(ctx, func(tx *store.Tx) error {
		if err := d.recheck(ctx, tx, acc, NeedOwner); err != nil {
			return err
		}
		stewardID := acc.Caller.ID
		if req.StewardUserPublicID != nil {
			id, err := d.stewardOf(ctx, tx, acc.Workspace.ID, *req.StewardUserPublicID)
			if err != nil {
				return err
			}
			stewardID = id
		}
		a := &store.Agent{PublicID: store.NewPublicID(), WorkspaceID: acc.Workspace.ID, Handle: req.Handle,
			DisplayName: req.DisplayName, StewardUserID: stewardID, CreatedAt: at}
		if err := store.InsertAgent(ctx, tx, a); err != nil {
			if store.IsUniqueViolation(err) {
				return errHandleTaken(req.Handle)
			}
			return err
		}
		if err := store.InsertToken(ctx, tx, &store.Token{PublicID: store.NewPublicID(), SecretHash: hash,
			AgentID: sql.NullInt64{Int64: a.ID, Valid: true}, Label: initialTokenLabel, CreatedAt: at}); err != nil {
			return err
		}
		row, err := store.AgentInWorkspace(ctx, tx, acc.Workspace.ID, a.PublicID)
		if err != nil {
			return err
		}
		out = &CreatedAgent{Agent: agentOf(row), Token: secret}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// stewardOf resolves a steward: a user member (owner or member) of the workspace.
func (d *Directory) stewardOf(ctx context.Context, q store.Querier, workspaceID int64, ref string) (int64, error) {
	const path = "agent.steward_user_public_id"
	id, ok := canonicalID(ref)
	if !ok {
		return 0, invalid(path, "steward_user_public_id must be the public id of a user member of this workspace.")
	}
	u, err := store.UserByPublicID(ctx, q, id)
	if errors.Is(err, store.ErrNotFound) {
		return 0, invalid(path, "No user member %s in this workspace.", id)
	}
	if err != nil {
		return 0, err
	}
	if _, err := store.UserRole(ctx, q, workspaceID, u.ID); errors.Is(err, store.ErrNotFound) {
		return 0, invalid(path, "No user member %s in this workspace.", id)
	} else if err != nil {
		return 0, err
	}
	return u.ID, nil
}

// Agents lists the workspace's agents (removed ones excluded) by handle.
func (d *Directory) Agents(ctx context.Context, acc *Access) ([]Agent, error) {
	rows, err := store.AgentsOfWorkspace(ctx, d.store.Reader(), acc.Workspace.ID)
	if err != nil {
		return nil, err
	}
	out := make([]Agent, 0, len(rows))
	for i := range rows {
		out = append(out, agentOf(&rows[i]))
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Handle < out[j].Handle })
	return out, nil
}
