package identity

import (
	"context"
	"database/sql"
	"errors"
	"sort"
	"time"

	"github.com/nexuskernel/nexus/core/store"
)

// Roles a member has in a workspace: users are owners or members, agents are agents.
const (
	RoleOwner  = store.RoleOwner
	RoleMember = store.RoleMember
	RoleAgent  = "agent"
)

// Directory is the administration of identities: workspaces, their members, agents, executors
// and tokens. Every method takes the authenticated caller and answers only about workspaces the
// caller belongs to; anything else is not_found, never forbidden, so that existence does not
// leak (docs/api.md#identity).
type Directory struct {
	store   *store.Store
	auth    *Authenticator
	now     func() time.Time
	revoked RevocationEffects
}

// RevocationEffects is what revoking an executor does to work, beyond its tokens
// (docs/api.md#executors): settling the rows addressed to it executor_revoked, in the revoking
// transaction, and closing its event streams once that committed. The executor plane provides
// it; until then a revocation stops the executor's tokens and nothing else.
type RevocationEffects interface {
	// SettleRevoked runs inside the revoking transaction, after the executor's status and tokens
	// changed; an error rolls the whole revocation back.
	SettleRevoked(ctx context.Context, tx *store.Tx, executorID int64, at time.Time) error
	// Revoked runs after the revocation committed (close the executor's streams).
	Revoked(executorID int64)
}

// DirectoryOptions configure a Directory.
type DirectoryOptions struct {
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// Revocation is filled by the executor plane; nil means no effects beyond the tokens.
	Revocation RevocationEffects
}

// NewDirectory returns a Directory over s. It invalidates auth's cache on every revocation path.
func NewDirectory(s *store.Store, auth *Authenticator, opts DirectoryOptions) *Directory {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	return &Directory{store: s, auth: auth, now: opts.Now, revoked: opts.Revocation}
}

// Workspace is a workspace as one caller sees it.
type Workspace struct {
	ID       int64
	PublicID string
	Handle   string
	Name     string
	// Role is the caller's: owner, member or agent.
	Role string
	// CreatedAt is Unix ms.
	CreatedAt int64
}

// Need is the standing a route needs in a workspace.
type Need int

const (
	// NeedMember: any member, owner, member or agent.
	NeedMember Need = iota
	// NeedOwner: a user who owns the workspace (an agent is not_user, a member not_authorized).
	NeedOwner
	// NeedAgent: an agent of the workspace (a user is not_agent), for the routes only an agent
	// application calls (its profile, for one).
	NeedAgent
)

// Access is the caller's standing in one workspace, checked.
type Access struct {
	Caller    *Principal
	Workspace Workspace
}

// Access resolves ref (a workspace public id, or a handle: a UUID-form value is a public id) to a
// workspace the caller belongs to and checks the standing need, in the order
// (docs/api.md#identity): visibility (404 not_found), kind (403 not_user), role (403
// not_authorized).
func (d *Directory) Access(ctx context.Context, caller *Principal, ref string, need Need) (*Access, error) {
	return d.AccessIn(ctx, d.store.Reader(), caller, ref, need)
}

// AccessIn is Access read through q: a write that reads the caller's standing in the statement
// that acts (store.Standing) reads it here only when it needs the word of a refusal or the
// workspace itself, through q.
func (d *Directory) AccessIn(ctx context.Context, q store.Querier, caller *Principal, ref string, need Need) (*Access, error) {
	w, err := d.visible(ctx, q, caller, ref)
	if err != nil {
		return nil, err
	}
	if err := checkNeed(caller, w.Role, need); err != nil {
		return nil, err
	}
	return &Access{Caller: caller, Workspace: *w}, nil
}

func checkNeed(caller *Principal, role string, need Need) error {
	switch need {
	case NeedOwner:
		if !caller.IsUser() {
			return ErrNotUser
		}
		if role != RoleOwner {
			return ErrNotAuthorized
		}
	case NeedAgent:
		if caller.IsUser() {
			return ErrNotAgent
		}
	}
	return nil
}

// visible finds the workspace ref names if the caller is a member of it. A user's workspace and
// role are read in one statement; an agent's role needs no read.
func (d *Directory) visible(ctx context.Context, q store.Querier, caller *Principal, ref string) (*Workspace, error) {
	id, byID := workspaceRef(ref)
	if !byID && !ValidHandle(ref) {
		return nil, errNoWorkspace(ref)
	}
	if caller.IsUser() {
		w, err := store.WorkspaceWithRole(ctx, q, id, byID, caller.ID)
		if errors.Is(err, store.ErrNotFound) {
			return nil, errNoWorkspace(ref)
		}
		if err != nil {
			return nil, err
		}
		if w.Role == "" {
			return nil, errNoWorkspace(ref)
		}
		return workspaceOf(&w.Workspace, w.Role), nil
	}
	var w *store.Workspace
	var err error
	if byID {
		w, err = store.WorkspaceByPublicID(ctx, q, id)
	} else {
		w, err = store.WorkspaceByHandle(ctx, q, ref)
	}
	if errors.Is(err, store.ErrNotFound) {
		return nil, errNoWorkspace(ref)
	}
	if err != nil {
		return nil, err
	}
	role, err := roleIn(ctx, q, caller, w.ID)
	if err != nil {
		return nil, err
	}
	if role == "" {
		return nil, errNoWorkspace(ref)
	}
	return workspaceOf(w, role), nil
}

// roleIn is the caller's role in a workspace, "" when not a member.
func roleIn(ctx context.Context, q store.Querier, caller *Principal, workspaceID int64) (string, error) {
	if !caller.IsUser() {
		if caller.WorkspaceID == workspaceID {
			return RoleAgent, nil
		}
		return "", nil
	}
	role, err := store.UserRole(ctx, q, workspaceID, caller.ID)
	if errors.Is(err, store.ErrNotFound) {
		return "", nil
	}
	return role, err
}

// recheck repeats an access check inside a write transaction, after locking the workspace's
// membership, so that a change decided on an earlier read cannot outlive the standing it needed.
func (d *Directory) recheck(ctx context.Context, tx *store.Tx, acc *Access, need Need) error {
	if err := store.LockWorkspace(ctx, tx, acc.Workspace.ID); err != nil {
		return err
	}
	role, err := roleIn(ctx, tx, acc.Caller, acc.Workspace.ID)
	if err != nil {
		return err
	}
	if role == "" {
		return errNoWorkspace(acc.Workspace.Handle)
	}
	return checkNeed(acc.Caller, role, need)
}

func workspaceOf(w *store.Workspace, role string) *Workspace {
	return &Workspace{ID: w.ID, PublicID: w.PublicID, Handle: w.Handle, Name: w.Name, Role: role, CreatedAt: w.CreatedAt}
}

// Workspaces lists the caller's workspaces by handle: a user's memberships, an agent's one
// workspace.
func (d *Directory) Workspaces(ctx context.Context, caller *Principal) ([]Workspace, error) {
	q := d.store.Reader()
	var out []Workspace
	if caller.IsUser() {
		rows, err := store.WorkspacesOfUser(ctx, q, caller.ID)
		if err != nil {
			return nil, err
		}
		for i := range rows {
			out = append(out, *workspaceOf(&rows[i].Workspace, rows[i].Role))
		}
	} else {
		w, err := store.WorkspaceByID(ctx, q, caller.WorkspaceID)
		if err != nil {
			return nil, err
		}
		out = append(out, *workspaceOf(w, RoleAgent))
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Handle < out[j].Handle })
	return out, nil
}

// CreateWorkspaceRequest is POST /agent_api/v1/workspaces.
type CreateWorkspaceRequest struct {
	Handle string
	Name   string
}

// CreateWorkspace creates a workspace owned by the caller, who must be a user.
func (d *Directory) CreateWorkspace(ctx context.Context, caller *Principal, req *CreateWorkspaceRequest) (*Workspace, error) {
	if !caller.IsUser() {
		return nil, ErrNotUser
	}
	if err := checkHandle("workspace.handle", req.Handle); err != nil {
		return nil, err
	}
	if !ValidDisplayName(req.Name) {
		return nil, invalid("workspace.name", "name must be 1 to %d characters without control or bidirectional control characters.", maxDisplayNameChars)
	}
	at := store.Millis(d.now())
	w := &store.Workspace{PublicID: store.NewPublicID(), Handle: req.Handle, Name: req.Name, CreatedAt: at}
	err := d.store.Write(ctx, func(tx *store.Tx) error {
		if err := store.InsertWorkspace(ctx, tx, w); err != nil {
			if store.IsUniqueViolation(err) {
				return errHandleTaken(req.Handle)
			}
			return err
		}
		return store.InsertMembership(ctx, tx, w.ID, caller.ID, store.RoleOwner, at)
	})
	if err != nil {
		return nil, err
	}
	return workspaceOf(w, RoleOwner), nil
}

func checkHandle(path, h string) error {
	if !ValidHandle(h) {
		return invalid(path, "%s must match [a-z0-9][a-z0-9_-]{0,62} and must not have the form of a UUID.", path)
	}
	return nil
}

func nullMillis(v sql.NullInt64) *int64 {
	if !v.Valid {
		return nil
	}
	x := v.Int64
	return &x
}

// WorkspaceRef parses a route's workspace reference as Access takes it, reading nothing: a
// UUID-form value is a public id (answered in its stored form), anything else a handle. It
// answers false for a reference that cannot name a workspace, which Access refuses not_found.
func WorkspaceRef(ref string) (publicID, handle string, ok bool) {
	id, byID := workspaceRef(ref)
	if byID {
		return id, "", true
	}
	return "", ref, ValidHandle(ref)
}

// workspaceRef is the column value a reference names a workspace by: its canonical public id
// (byID) or its handle.
func workspaceRef(ref string) (string, bool) {
	if id, byID := canonicalID(ref); byID {
		return id, true
	}
	return ref, false
}
