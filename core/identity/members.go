package identity

import (
	"context"
	"errors"
	"sort"

	"github.com/nexuskernel/nexus/core/refusal"
	"github.com/nexuskernel/nexus/core/store"
)

// Member is a user or an agent as a member of a workspace.
type Member struct {
	// Kind is user or agent.
	Kind        string
	PublicID    string
	Handle      string
	DisplayName string
	// Role is owner or member for a user, agent for an agent.
	Role string
	// JoinedAt is Unix ms: when the user was added, when the agent was created.
	JoinedAt int64
}

// Members lists the workspace's members: users by handle, then agents by handle.
func (d *Directory) Members(ctx context.Context, acc *Access) ([]Member, error) {
	q := d.store.Reader()
	users, err := store.UserMembers(ctx, q, acc.Workspace.ID)
	if err != nil {
		return nil, err
	}
	agents, err := store.AgentsOfWorkspace(ctx, q, acc.Workspace.ID)
	if err != nil {
		return nil, err
	}
	out := make([]Member, 0, len(users)+len(agents))
	for _, u := range users {
		out = append(out, Member{Kind: KindUser, PublicID: u.PublicID, Handle: u.Handle, DisplayName: u.DisplayName, Role: u.Role, JoinedAt: u.JoinedAt})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Handle < out[j].Handle })
	n := len(out)
	for _, a := range agents {
		out = append(out, Member{Kind: KindAgent, PublicID: a.PublicID, Handle: a.Handle, DisplayName: a.DisplayName, Role: RoleAgent, JoinedAt: a.CreatedAt})
	}
	sort.Slice(out[n:], func(i, j int) bool { return out[n+i].Handle < out[n+j].Handle })
	return out, nil
}

// AddMemberRequest is POST /agent_api/v1/workspaces/{ws}/members.
type AddMemberRequest struct {
	UserPublicID string
	// Role is owner or member.
	Role string
}

// AddMember adds an existing user to the workspace of acc (owned by the caller).
func (d *Directory) AddMember(ctx context.Context, acc *Access, req *AddMemberRequest) (*Member, error) {
	const path = "member.user_public_id"
	id, ok := canonicalID(req.UserPublicID)
	if !ok {
		return nil, invalid(path, "user_public_id must be the public id of a user.")
	}
	if !validRole(req.Role) {
		return nil, invalid("member.role", "role must be owner or member.")
	}
	at := store.Millis(d.now())
	var out *Member
	err := d.store.Write(ctx, func(tx *store.Tx) error {
		if err := d.recheck(ctx, tx, acc, NeedOwner); err != nil {
			return err
		}
		u, err := store.UserByPublicID(ctx, tx, id)
		if errors.Is(err, store.ErrNotFound) {
			return invalid(path, "No user %s.", id)
		}
		if err != nil {
			return err
		}
		if _, err := store.UserRole(ctx, tx, acc.Workspace.ID, u.ID); err == nil {
			return refusal.Newf(refusal.Conflict, CodeAlreadyMember, "User %s is already a member of this workspace.", u.Handle)
		} else if !errors.Is(err, store.ErrNotFound) {
			return err
		}
		if err := store.InsertMembership(ctx, tx, acc.Workspace.ID, u.ID, req.Role, at); err != nil {
			if store.IsUniqueViolation(err) {
				return refusal.Newf(refusal.Conflict, CodeAlreadyMember, "User %s is already a member of this workspace.", u.Handle)
			}
			return err
		}
		out = &Member{Kind: KindUser, PublicID: u.PublicID, Handle: u.Handle, DisplayName: u.DisplayName, Role: req.Role, JoinedAt: at}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// RemoveMember removes a user or an agent (by public id) from the workspace of acc (owned by the
// caller). A removed user's tokens stop reaching the workspace at once because every workspace
// route reads the membership; a removed agent belongs to no workspace any more, so its tokens stop
// authenticating at all, and this instance's cache (and, through NOTIFY, every other's) forgets
// them before the answer.
func (d *Directory) RemoveMember(ctx context.Context, acc *Access, publicID string) error {
	id, ok := canonicalID(publicID)
	if !ok {
		return errNoMember(publicID)
	}
	var invs []invalidation
	defer func() { d.auth.forget(invs...) }()
	return d.store.Write(ctx, func(tx *store.Tx) error {
		if err := d.recheck(ctx, tx, acc, NeedOwner); err != nil {
			return err
		}
		u, err := store.UserByPublicID(ctx, tx, id)
		switch {
		case err == nil:
			role, err := store.UserRole(ctx, tx, acc.Workspace.ID, u.ID)
			if errors.Is(err, store.ErrNotFound) {
				return errNoMember(publicID)
			}
			if err != nil {
				return err
			}
			if role == RoleOwner {
				n, err := store.CountOwners(ctx, tx, acc.Workspace.ID)
				if err != nil {
					return err
				}
				if n <= 1 {
					return refusal.New(refusal.Conflict, CodeLastOwner, "A workspace keeps at least one owner; add another owner first.")
				}
			}
			_, err = store.DeleteMembership(ctx, tx, acc.Workspace.ID, u.ID)
			return err
		case !errors.Is(err, store.ErrNotFound):
			return err
		}
		a, err := store.AgentInWorkspace(ctx, tx, acc.Workspace.ID, id)
		if errors.Is(err, store.ErrNotFound) || (err == nil && a.RemovedAt.Valid) {
			return errNoMember(publicID)
		}
		if err != nil {
			return err
		}
		if _, err := store.RemoveAgent(ctx, tx, a.ID, store.Millis(d.now())); err != nil {
			return err
		}
		invs = append(invs, invalidation{kind: invalidateAgent, id: a.ID})
		return d.auth.announce(ctx, tx, invs...)
	})
}
