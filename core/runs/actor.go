package runs

import (
	"context"
	"errors"
	"fmt"

	"github.com/nexuskernel/nexus/core/identity"
	"github.com/nexuskernel/nexus/core/refusal"
	"github.com/nexuskernel/nexus/core/store"
)

// Actor is the authenticated member calling a door, with its standing in the workspace the
// route names (already checked visible by the identity directory), or, for the create door, the
// route's reference to the workspace, whose standing the create reads itself (resolved).
type Actor struct {
	Kind     string // user or agent
	ID       int64  // the user's or agent's row id
	PublicID string
	// Role is owner, member or agent; "" while unresolved.
	Role string
	// WorkspaceID is the workspace's row id; 0 while unresolved, when WorkspacePublicID or
	// WorkspaceHandle is the route's reference.
	WorkspaceID       int64
	WorkspacePublicID string
	WorkspaceHandle   string
	// Reread, when set, repeats the door's standing check through q, a write's transaction, and
	// answers the Actor it finds or the refusal the door would give (identity.Directory.AccessIn): a
	// create's transaction stands on what it reads itself, never on the door's earlier read. An
	// unresolved Actor has it.
	Reread func(ctx context.Context, q store.Querier) (*Actor, error)
}

// resolved reports whether the door read a's standing: an unresolved Actor names its workspace
// by the route's reference, and its create reads the standing in the statement that writes
// (store.Standing) or through Reread.
func (a *Actor) resolved() bool { return a.WorkspaceID != 0 }

// Resolve is a with its standing read through q: a itself when the door read it.
func (a *Actor) Resolve(ctx context.Context, q store.Querier) (*Actor, error) {
	if a.resolved() {
		return a, nil
	}
	if a.Reread == nil {
		return nil, errors.New("runs: an unresolved actor without Reread")
	}
	r, err := a.Reread(ctx, q)
	if err != nil {
		return nil, err
	}
	// A write's transaction still rereads the standing it stands on.
	c := *r
	c.Reread = a.Reread
	return &c, nil
}

// standing is the membership a's create statement checks (store.CreateRun's guard): any member
// may create a run (docs/api.md#runs), a user by a membership of any role.
func (a *Actor) standing() store.Standing {
	g := store.Standing{WorkspaceID: a.WorkspaceID}
	if !a.resolved() {
		g.WorkspacePublicID, g.WorkspaceHandle = a.WorkspacePublicID, a.WorkspaceHandle
	}
	if a.Kind == "user" {
		g.UserID, g.Role = a.ID, store.RoleMember
	} else {
		g.AgentID = a.ID
	}
	return g
}

func (a *Actor) member() Member { return Member{Kind: a.Kind, PublicID: a.PublicID} }

// principal is a as the upload checks name their caller.
func (a *Actor) principal() *identity.Principal {
	return &identity.Principal{Kind: a.Kind, ID: a.ID, PublicID: a.PublicID}
}

func conflict(code, format string, args ...any) *refusal.Error {
	return refusal.New(refusal.Conflict, code, fmt.Sprintf(format, args...))
}
