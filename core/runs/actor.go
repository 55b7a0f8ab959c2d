package runs

import (
	"context"
	"fmt"

	"github.com/nexuskernel/nexus/core/refusal"
	"github.com/nexuskernel/nexus/core/store"
)

// Actor is the authenticated member calling a door, with its standing in the workspace the
// route names (already checked visible by the identity directory).
type Actor struct {
	Kind     string // user or agent
	ID       int64  // the user's or agent's row id
	PublicID string
	// Role is owner, member or agent.
	Role              string
	WorkspaceID       int64
	WorkspacePublicID string
	// Reread, when set, repeats the door's standing check through q, a write's transaction, and
	// answers the Actor it finds or the refusal the door would give (identity.Access.Reread): a
	// create's transaction stands on what it reads itself, never on the door's earlier read.
	Reread func(ctx context.Context, q store.Querier) (*Actor, error)
}

// standing is the membership a's statement checks (store.CreateRun's guard).
func (a *Actor) standing() store.Standing {
	if a.Kind == "user" {
		return store.Standing{WorkspaceID: a.WorkspaceID, UserID: a.ID, Role: a.Role}
	}
	return store.Standing{WorkspaceID: a.WorkspaceID, AgentID: a.ID}
}

func (a *Actor) member() Member { return Member{Kind: a.Kind, PublicID: a.PublicID} }

func conflict(code, format string, args ...any) *refusal.Error {
	return refusal.New(refusal.Conflict, code, fmt.Sprintf(format, args...))
}
