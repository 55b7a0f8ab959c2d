package store

import (
	"context"
	"database/sql"
	"fmt"
)

// User is a person.
type User struct {
	ID          int64  `db:"id"`
	PublicID    string `db:"public_id"`
	Handle      string `db:"handle"`
	DisplayName string `db:"display_name"`
	CreatedAt   int64  `db:"created_at"`
}

// Workspace is the tenancy unit.
type Workspace struct {
	ID        int64  `db:"id"`
	PublicID  string `db:"public_id"`
	Handle    string `db:"handle"`
	Name      string `db:"name"`
	CreatedAt int64  `db:"created_at"`
}

// Agent is an agent application, a member of exactly one workspace.
type Agent struct {
	ID            int64         `db:"id"`
	PublicID      string        `db:"public_id"`
	WorkspaceID   int64         `db:"workspace_id"`
	Handle        string        `db:"handle"`
	DisplayName   string        `db:"display_name"`
	StewardUserID int64         `db:"steward_user_id"`
	CreatedAt     int64         `db:"created_at"`
	RemovedAt     sql.NullInt64 `db:"removed_at"`
}

// Token is a stored credential. The secret itself is never stored, only its SHA-256.
type Token struct {
	ID         int64         `db:"id"`
	PublicID   string        `db:"public_id"`
	SecretHash []byte        `db:"secret_hash"`
	UserID     sql.NullInt64 `db:"user_id"`
	AgentID    sql.NullInt64 `db:"agent_id"`
	Label      string        `db:"label"`
	CreatedAt  int64         `db:"created_at"`
	ExpiresAt  sql.NullInt64 `db:"expires_at"`
	RevokedAt  sql.NullInt64 `db:"revoked_at"`
}

// CountUsers counts every user of the deployment.
func CountUsers(ctx context.Context, q Querier) (int64, error) {
	var n int64
	err := q.Get(ctx, &n, `SELECT COUNT(*) FROM users`)
	return n, err
}

// InsertUser stores u and sets its ID.
func InsertUser(ctx context.Context, q Querier, u *User) error {
	return q.Get(ctx, &u.ID,
		`INSERT INTO users (public_id, handle, display_name, created_at) VALUES (?, ?, ?, ?) RETURNING id`,
		u.PublicID, u.Handle, u.DisplayName, u.CreatedAt)
}

// UserByHandle finds a user by handle.
func UserByHandle(ctx context.Context, q Querier, handle string) (*User, error) {
	var u User
	err := q.Get(ctx, &u, `SELECT id, public_id, handle, display_name, created_at FROM users WHERE handle = ?`, handle)
	if err != nil {
		return nil, notFound(err)
	}
	return &u, nil
}

// InsertWorkspace stores w and sets its ID.
func InsertWorkspace(ctx context.Context, q Querier, w *Workspace) error {
	return q.Get(ctx, &w.ID,
		`INSERT INTO workspaces (public_id, handle, name, created_at) VALUES (?, ?, ?, ?) RETURNING id`,
		w.PublicID, w.Handle, w.Name, w.CreatedAt)
}

// Member roles of users in a workspace.
const (
	RoleOwner  = "owner"
	RoleMember = "member"
)

// InsertMembership makes a user a member of a workspace.
func InsertMembership(ctx context.Context, q Querier, workspaceID, userID int64, role string, at int64) error {
	_, err := q.Exec(ctx,
		`INSERT INTO workspace_members (workspace_id, user_id, role, joined_at) VALUES (?, ?, ?, ?)`,
		workspaceID, userID, role, at)
	return err
}

// InsertToken stores t and sets its ID.
func InsertToken(ctx context.Context, q Querier, t *Token) error {
	return q.Get(ctx, &t.ID,
		`INSERT INTO tokens (public_id, secret_hash, user_id, agent_id, label, created_at, expires_at)
		 VALUES (?, ?, ?, ?, ?, ?, ?) RETURNING id`,
		t.PublicID, t.SecretHash, t.UserID, t.AgentID, t.Label, t.CreatedAt, t.ExpiresAt)
}

// Principal kinds of the member plane.
const (
	KindUser  = "user"
	KindAgent = "agent"
)

// TokenPrincipal is what a member token authenticates as, read in one query.
type TokenPrincipal struct {
	TokenID     int64         `db:"token_id"`
	SecretHash  []byte        `db:"secret_hash"`
	ExpiresAt   sql.NullInt64 `db:"expires_at"`
	RevokedAt   sql.NullInt64 `db:"revoked_at"`
	Kind        string        `db:"kind"`
	PrincipalID int64         `db:"principal_id"`
	PublicID    string        `db:"public_id"`
	Handle      string        `db:"handle"`
	DisplayName string        `db:"display_name"`
	// AgentWorkspaceID is the agent's workspace; zero for a user.
	AgentWorkspaceID int64 `db:"agent_workspace_id"`
	// AgentRemoved is set when the agent was removed from its workspace.
	AgentRemoved bool `db:"agent_removed"`
}

// MemberTokenByHash finds the member token with this secret hash and the principal it names.
func MemberTokenByHash(ctx context.Context, q Querier, hash []byte) (*TokenPrincipal, error) {
	var p TokenPrincipal
	err := q.Get(ctx, &p, `
SELECT t.id AS token_id, t.secret_hash, t.expires_at, t.revoked_at,
       CASE WHEN t.user_id IS NOT NULL THEN 'user' ELSE 'agent' END AS kind,
       COALESCE(u.id, a.id) AS principal_id,
       COALESCE(u.public_id, a.public_id) AS public_id,
       COALESCE(u.handle, a.handle) AS handle,
       COALESCE(u.display_name, a.display_name) AS display_name,
       COALESCE(a.workspace_id, 0) AS agent_workspace_id,
       (a.removed_at IS NOT NULL) AS agent_removed
FROM tokens t
LEFT JOIN users u ON u.id = t.user_id
LEFT JOIN agents a ON a.id = t.agent_id
WHERE t.secret_hash = ?`, hash)
	if err != nil {
		return nil, notFound(err)
	}
	return &p, nil
}

// LockBootstrap serializes the first-start bootstrap across server instances sharing a database.
// SQLite's immediate transaction already holds the write lock; PostgreSQL takes a transaction-scoped
// advisory lock.
func LockBootstrap(ctx context.Context, tx *Tx) error {
	if tx.Dialect() != Postgres {
		return nil
	}
	// bootstrapLockKey is an arbitrary constant that only the bootstrap uses.
	const bootstrapLockKey = 0x6e657875_73000001
	if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(?)`, int64(bootstrapLockKey)); err != nil {
		return fmt.Errorf("store: bootstrap lock: %w", err)
	}
	return nil
}

// WorkspaceByPublicID finds a workspace by public id. The id must already be in canonical UUID
// form: PostgreSQL refuses to compare anything else with a uuid column.
func WorkspaceByPublicID(ctx context.Context, q Querier, publicID string) (*Workspace, error) {
	var w Workspace
	err := q.Get(ctx, &w, `SELECT id, public_id, handle, name, created_at FROM workspaces WHERE public_id = ?`, ID(publicID))
	if err != nil {
		return nil, notFound(err)
	}
	return &w, nil
}

// WorkspaceByHandle finds a workspace by handle.
func WorkspaceByHandle(ctx context.Context, q Querier, handle string) (*Workspace, error) {
	var w Workspace
	err := q.Get(ctx, &w, `SELECT id, public_id, handle, name, created_at FROM workspaces WHERE handle = ?`, handle)
	if err != nil {
		return nil, notFound(err)
	}
	return &w, nil
}

// WorkspaceByID finds a workspace by row id.
func WorkspaceByID(ctx context.Context, q Querier, id int64) (*Workspace, error) {
	var w Workspace
	err := q.Get(ctx, &w, `SELECT id, public_id, handle, name, created_at FROM workspaces WHERE id = ?`, id)
	if err != nil {
		return nil, notFound(err)
	}
	return &w, nil
}

// WorkspaceRole is a workspace with one member's role in it.
type WorkspaceRole struct {
	Workspace
	Role string `db:"role"`
}

// WorkspacesOfUser lists the workspaces a user is a member of, with the user's role, in no
// particular order.
func WorkspacesOfUser(ctx context.Context, q Querier, userID int64) ([]WorkspaceRole, error) {
	var out []WorkspaceRole
	err := q.Select(ctx, &out, `
SELECT w.id, w.public_id, w.handle, w.name, w.created_at, m.role
FROM workspace_members m JOIN workspaces w ON w.id = m.workspace_id
WHERE m.user_id = ?`, userID)
	return out, err
}

// WorkspaceWithRole finds a workspace by handle (or, byPublicID, by its canonical public id)
// with a user's role in it, in one statement; Role is "" when the user is not a member, and
// ErrNotFound answers a workspace that does not exist.
func WorkspaceWithRole(ctx context.Context, q Querier, ref string, byPublicID bool, userID int64) (*WorkspaceRole, error) {
	col := "w.handle"
	if byPublicID {
		col = "w.public_id"
	}
	var w WorkspaceRole
	err := q.Get(ctx, &w, `SELECT w.id, w.public_id, w.handle, w.name, w.created_at, COALESCE(m.role, '') AS role
FROM workspaces w LEFT JOIN workspace_members m ON m.workspace_id = w.id AND m.user_id = ?
WHERE `+col+` = ?`, userID, ref)
	if err != nil {
		return nil, notFound(err)
	}
	return &w, nil
}

// UserRole returns a user's role in a workspace, or ErrNotFound when the user is not a member.
func UserRole(ctx context.Context, q Querier, workspaceID, userID int64) (string, error) {
	var role string
	err := q.Get(ctx, &role, `SELECT role FROM workspace_members WHERE workspace_id = ? AND user_id = ?`, workspaceID, userID)
	if err != nil {
		return "", notFound(err)
	}
	return role, nil
}

// LockWorkspace serializes membership changes of one workspace inside a write transaction, so
// that two concurrent removals cannot both see another owner and leave none. SQLite's immediate
// transaction already holds the database's write lock; PostgreSQL locks the workspace row.
func LockWorkspace(ctx context.Context, tx *Tx, workspaceID int64) error {
	if tx.Dialect() != Postgres {
		return nil
	}
	var id int64
	if err := tx.Get(ctx, &id, `SELECT id FROM workspaces WHERE id = ? FOR UPDATE`, workspaceID); err != nil {
		return notFound(err)
	}
	return nil
}

// UserByPublicID finds a user by public id (canonical UUID form).
func UserByPublicID(ctx context.Context, q Querier, publicID string) (*User, error) {
	var u User
	err := q.Get(ctx, &u, `SELECT id, public_id, handle, display_name, created_at FROM users WHERE public_id = ?`, ID(publicID))
	if err != nil {
		return nil, notFound(err)
	}
	return &u, nil
}

// UserByID finds a user by row id.
func UserByID(ctx context.Context, q Querier, id int64) (*User, error) {
	var u User
	err := q.Get(ctx, &u, `SELECT id, public_id, handle, display_name, created_at FROM users WHERE id = ?`, id)
	if err != nil {
		return nil, notFound(err)
	}
	return &u, nil
}

// UserMember is a user's membership row with the user.
type UserMember struct {
	User
	Role     string `db:"role"`
	JoinedAt int64  `db:"joined_at"`
}

// UserMembers lists the users of a workspace with their roles, in no particular order.
func UserMembers(ctx context.Context, q Querier, workspaceID int64) ([]UserMember, error) {
	var out []UserMember
	err := q.Select(ctx, &out, `
SELECT u.id, u.public_id, u.handle, u.display_name, u.created_at, m.role, m.joined_at
FROM workspace_members m JOIN users u ON u.id = m.user_id
WHERE m.workspace_id = ?`, workspaceID)
	return out, err
}

// CountOwners counts the owners of a workspace.
func CountOwners(ctx context.Context, q Querier, workspaceID int64) (int64, error) {
	var n int64
	err := q.Get(ctx, &n, `SELECT COUNT(*) FROM workspace_members WHERE workspace_id = ? AND role = ?`, workspaceID, RoleOwner)
	return n, err
}

// DeleteMembership removes a user from a workspace and reports whether a row was removed.
func DeleteMembership(ctx context.Context, q Querier, workspaceID, userID int64) (bool, error) {
	res, err := q.Exec(ctx, `DELETE FROM workspace_members WHERE workspace_id = ? AND user_id = ?`, workspaceID, userID)
	if err != nil {
		return false, err
	}
	n, err := res.RowsAffected()
	return n > 0, err
}

// agentColumns are the columns every agent read selects, with the steward's and workspace's
// public ids the API serves.
const agentColumns = `a.id, a.public_id, a.workspace_id, a.handle, a.display_name, a.steward_user_id, a.created_at, a.removed_at,
       u.public_id AS steward_user_public_id, w.public_id AS workspace_public_id`

// AgentRow is an agent with the public ids of its steward and workspace.
type AgentRow struct {
	Agent
	StewardUserPublicID string `db:"steward_user_public_id"`
	WorkspacePublicID   string `db:"workspace_public_id"`
}

// InsertAgent stores a and sets its ID.
func InsertAgent(ctx context.Context, q Querier, a *Agent) error {
	return q.Get(ctx, &a.ID,
		`INSERT INTO agents (public_id, workspace_id, handle, display_name, steward_user_id, created_at) VALUES (?, ?, ?, ?, ?, ?) RETURNING id`,
		a.PublicID, a.WorkspaceID, a.Handle, a.DisplayName, a.StewardUserID, a.CreatedAt)
}

// AgentsOfWorkspace lists the agents of a workspace that were not removed, in no particular order.
func AgentsOfWorkspace(ctx context.Context, q Querier, workspaceID int64) ([]AgentRow, error) {
	var out []AgentRow
	err := q.Select(ctx, &out, `SELECT `+agentColumns+`
FROM agents a JOIN users u ON u.id = a.steward_user_id JOIN workspaces w ON w.id = a.workspace_id
WHERE a.workspace_id = ? AND a.removed_at IS NULL`, workspaceID)
	return out, err
}

// AgentInWorkspace finds an agent of a workspace by public id (canonical UUID form), removed or
// not.
func AgentInWorkspace(ctx context.Context, q Querier, workspaceID int64, publicID string) (*AgentRow, error) {
	var a AgentRow
	err := q.Get(ctx, &a, `SELECT `+agentColumns+`
FROM agents a JOIN users u ON u.id = a.steward_user_id JOIN workspaces w ON w.id = a.workspace_id
WHERE a.workspace_id = ? AND a.public_id = ?`, workspaceID, ID(publicID))
	if err != nil {
		return nil, notFound(err)
	}
	return &a, nil
}

// RemoveAgent marks an agent removed from its workspace and reports whether it was a member
// until now.
func RemoveAgent(ctx context.Context, q Querier, agentID, at int64) (bool, error) {
	res, err := q.Exec(ctx, `UPDATE agents SET removed_at = ? WHERE id = ? AND removed_at IS NULL`, at, agentID)
	if err != nil {
		return false, err
	}
	n, err := res.RowsAffected()
	return n > 0, err
}

// tokenColumns are the columns of a member token read.
const tokenColumns = `id, public_id, secret_hash, user_id, agent_id, label, created_at, expires_at, revoked_at`

// LiveTokensOf lists the tokens of a user (kind "user") or an agent (kind "agent") that are
// neither revoked nor expired at now, in no particular order.
func LiveTokensOf(ctx context.Context, q Querier, kind string, principalID, now int64) ([]Token, error) {
	col := "user_id"
	if kind == KindAgent {
		col = "agent_id"
	}
	var out []Token
	err := q.Select(ctx, &out, `SELECT `+tokenColumns+` FROM tokens
WHERE `+col+` = ? AND revoked_at IS NULL AND (expires_at IS NULL OR expires_at > ?)`, principalID, now)
	return out, err
}

// TokenOf finds a token of a user or an agent by public id (canonical UUID form).
func TokenOf(ctx context.Context, q Querier, kind string, principalID int64, publicID string) (*Token, error) {
	col := "user_id"
	if kind == KindAgent {
		col = "agent_id"
	}
	var t Token
	err := q.Get(ctx, &t, `SELECT `+tokenColumns+` FROM tokens WHERE `+col+` = ? AND public_id = ?`, principalID, ID(publicID))
	if err != nil {
		return nil, notFound(err)
	}
	return &t, nil
}

// TokenByID finds a member token by row id.
func TokenByID(ctx context.Context, q Querier, id int64) (*Token, error) {
	var t Token
	err := q.Get(ctx, &t, `SELECT `+tokenColumns+` FROM tokens WHERE id = ?`, id)
	if err != nil {
		return nil, notFound(err)
	}
	return &t, nil
}

// RevokeAgentTokensExcept revokes at at every live token of an agent but keep (a row id), and
// answers the public ids it revoked, in no particular order.
func RevokeAgentTokensExcept(ctx context.Context, q Querier, agentID, keep, at int64) ([]string, error) {
	var out []string
	err := q.Select(ctx, &out, `UPDATE tokens SET revoked_at = ?
WHERE agent_id = ? AND id <> ? AND revoked_at IS NULL AND (expires_at IS NULL OR expires_at > ?)
RETURNING public_id`, at, agentID, keep, at)
	return out, err
}

// RevokeToken marks a member token revoked at at, unless it already was.
func RevokeToken(ctx context.Context, q Querier, id, at int64) error {
	_, err := q.Exec(ctx, `UPDATE tokens SET revoked_at = ? WHERE id = ? AND revoked_at IS NULL`, at, id)
	return err
}
