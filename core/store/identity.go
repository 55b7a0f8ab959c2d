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
