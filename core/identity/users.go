package identity

import (
	"context"
	"database/sql"

	"github.com/nexuskernel/nexus/core/store"
)

// User is a person, with a role in the workspace it was read through.
type User struct {
	ID          int64
	PublicID    string
	Handle      string
	DisplayName string
	Role        string
	// CreatedAt is Unix ms.
	CreatedAt int64
}

// CreateUserRequest is POST /agent_api/v1/workspaces/{ws}/users.
type CreateUserRequest struct {
	Handle      string
	DisplayName string
	// Role is owner or member.
	Role string
}

// CreatedUser is a new person and their first token, shown once.
type CreatedUser struct {
	User  User
	Token string
}

// validRole reports whether r is a user's role.
func validRole(r string) bool { return r == RoleOwner || r == RoleMember }

// CreateUser invites a new person into the workspace of acc (owned by the caller) with a fresh
// token. User handles are global.
func (d *Directory) CreateUser(ctx context.Context, acc *Access, req *CreateUserRequest) (*CreatedUser, error) {
	if err := checkHandle("user.handle", req.Handle); err != nil {
		return nil, err
	}
	if !ValidDisplayName(req.DisplayName) {
		return nil, invalid("user.display_name", "display_name must be 1 to %d characters without control or bidirectional control characters.", maxDisplayNameChars)
	}
	if !validRole(req.Role) {
		return nil, invalid("user.role", "role must be owner or member.")
	}
	secret, hash := MintToken(MemberPlane)
	at := store.Millis(d.now())
	u := &store.User{PublicID: store.NewPublicID(), Handle: req.Handle, DisplayName: req.DisplayName, CreatedAt: at}
	err := d.store.Write(ctx, func(tx *store.Tx) error {
		if err := d.recheck(ctx, tx, acc, NeedOwner); err != nil {
			return err
		}
		if err := store.InsertUser(ctx, tx, u); err != nil {
			if store.IsUniqueViolation(err) {
				return errHandleTaken(req.Handle)
			}
			return err
		}
		if err := store.InsertMembership(ctx, tx, acc.Workspace.ID, u.ID, req.Role, at); err != nil {
			return err
		}
		return store.InsertToken(ctx, tx, &store.Token{PublicID: store.NewPublicID(), SecretHash: hash,
			UserID: sql.NullInt64{Int64: u.ID, Valid: true}, Label: initialTokenLabel, CreatedAt: at})
	})
	if err != nil {
		return nil, err
	}
	return &CreatedUser{
		User:  User{ID: u.ID, PublicID: u.PublicID, Handle: u.Handle, DisplayName: u.DisplayName, Role: req.Role, CreatedAt: at},
		Token: secret,
	}, nil
}
