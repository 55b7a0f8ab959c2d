package runs

import (
	"context"
	"errors"
	"fmt"

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

// resolve is a with its standing read through q: a itself when the door read it.
func (a *Actor) resolve(ctx context.Context, q store.Querier) (*Actor, error) {
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

// reread is the Actor a write's transaction stands on (Actor.Reread).
func (a *Actor) reread(ctx context.Context, tx *store.Tx) (*Actor, error) {
	if a.Reread == nil {
		return a, nil
	}
	return a.Reread(ctx, tx)
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

var errNotAuthorized = refusal.New(refusal.Forbidden, refusal.CodeNotAuthorized, "Write standing on this run is required.")

// writeStanding checks the write standing on a run (docs/api.md#conventions): a workspace owner;
// the run's creator; for a conversation-hosted run the conversation's creator and its answering
// agent; the steward user of any agent among them.
func (e *Engine) writeStanding(ctx context.Context, q store.Querier, a *Actor, run *store.Run) error {
	if a.Role == store.RoleOwner {
		return nil
	}
	members := []Member{{Kind: run.CreatedByKind, PublicID: run.CreatedByPublicID}}
	if run.AnsweringAgentPublicID != nil && run.ConversationID != nil {
		members = append(members, Member{Kind: "agent", PublicID: *run.AnsweringAgentPublicID})
	}
	if run.ConversationID != nil {
		var c struct {
			Kind string `db:"created_by_kind"`
			ID   string `db:"created_by_public_id"`
		}
		if err := q.Get(ctx, &c, `SELECT created_by_kind, created_by_public_id FROM conversations WHERE id = ?`, *run.ConversationID); err == nil {
			members = append(members, Member{Kind: c.Kind, PublicID: c.ID})
		}
	}
	for _, m := range members {
		if m.Kind == a.Kind && m.PublicID == a.PublicID {
			return nil
		}
	}
	if a.Kind == "user" {
		for _, m := range members {
			if m.Kind != "agent" {
				continue
			}
			var steward string
			err := q.Get(ctx, &steward, `SELECT u.public_id FROM agents a JOIN users u ON u.id = a.steward_user_id WHERE a.public_id = ?`, m.PublicID)
			if err == nil && steward == a.PublicID {
				return nil
			}
		}
	}
	return errNotAuthorized
}

// loadRun finds a run of the actor's workspace; a malformed or unknown id is not_found.
func (e *Engine) loadRun(ctx context.Context, q store.Querier, a *Actor, publicID string) (*store.Run, error) {
	if !store.IsPublicID(publicID) {
		return nil, refusal.Newf(refusal.NotFound, refusal.CodeNotFound, "No run %s in this workspace.", publicID)
	}
	r, err := store.RunByPublicID(ctx, q, a.WorkspaceID, publicID)
	if errors.Is(err, store.ErrNotFound) {
		return nil, refusal.Newf(refusal.NotFound, refusal.CodeNotFound, "No run %s in this workspace.", publicID)
	}
	return r, err
}

func taskNotFound(key string) error {
	return refusal.Newf(refusal.NotFound, refusal.CodeNotFound, "No task %s in this run.", key)
}

func conflict(code, format string, args ...any) *refusal.Error {
	return refusal.New(refusal.Conflict, code, fmt.Sprintf(format, args...))
}
