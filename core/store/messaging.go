package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
)

// The two settings of the agent messaging policy
// (docs/agent-tools.md#delegation-and-conversations).
const (
	MessagingPublic  = "public"
	MessagingPrivate = "private"
)

// AgentMessagingPolicy reads a workspace's agent messaging policy (a JSON object of agent
// public id to setting) and its lock version; a workspace that never wrote one has "{}" at
// version 0.
func AgentMessagingPolicy(ctx context.Context, q Querier, workspaceID int64) (string, int64, error) {
	var row struct {
		Agents      string `db:"agents"`
		LockVersion int64  `db:"lock_version"`
	}
	err := q.Get(ctx, &row, `SELECT agents, lock_version FROM workspace_agent_messaging_policies WHERE workspace_id = ?`, workspaceID)
	if errors.Is(err, sql.ErrNoRows) {
		return "{}", 0, nil
	}
	if err != nil {
		return "", 0, err
	}
	return row.Agents, row.LockVersion, nil
}

// PutAgentMessagingPolicy writes a workspace's agent messaging policy at the given lock version.
func PutAgentMessagingPolicy(ctx context.Context, q Querier, workspaceID int64, agents string, lockVersion int64) error {
	_, err := q.Exec(ctx, `INSERT INTO workspace_agent_messaging_policies (workspace_id, agents, lock_version) VALUES (?, ?, ?)
ON CONFLICT (workspace_id) DO UPDATE SET agents = excluded.agents, lock_version = excluded.lock_version`,
		workspaceID, agents, lockVersion)
	return err
}

// AgentMessagingPrivate reports whether the workspace's messaging policy marks the agent (by
// canonical public id) private: then only the agent itself may spawn with it or send it new
// requests. An agent absent from the policy is public.
func AgentMessagingPrivate(ctx context.Context, q Querier, workspaceID int64, agentPublicID string) (bool, error) {
	raw, _, err := AgentMessagingPolicy(ctx, q, workspaceID)
	if err != nil {
		return false, err
	}
	var agents map[string]string
	if err := json.Unmarshal([]byte(raw), &agents); err != nil {
		return false, fmt.Errorf("store: the messaging policy of workspace %d: %w", workspaceID, err)
	}
	return agents[agentPublicID] == MessagingPrivate, nil
}
