package store

import (
	"context"
	"database/sql"
)

// AgentProfile is an agent's stored standing configuration. The JSON columns hold compact text
// that the profile service wrote and reads; the store never interprets them.
type AgentProfile struct {
	AgentID int64 `db:"agent_id"`
	// Revision is 1 after the first replacement and grows by one with each.
	Revision int64 `db:"revision"`
	// ToolDefinitions is the stored render of the explicit declaration ("[]" when none).
	ToolDefinitions string `db:"tool_definitions"`
	// KernelTools and RunnerExecutorPublicIDs are JSON arrays ("[]" when none).
	KernelTools             string `db:"kernel_tools"`
	RunnerExecutorPublicIDs string `db:"runner_executor_public_ids"`
	// RunnerToolNames is a JSON array, or NULL for "every model-facing tool".
	RunnerToolNames sql.NullString `db:"runner_tool_names"`
	ApprovalMode    sql.NullString `db:"approval_mode"`
	// ApprovalRules is a JSON array, or NULL when none was given.
	ApprovalRules sql.NullString `db:"approval_rules"`
	DefaultModel  sql.NullString `db:"default_model"`
	Instructions  sql.NullString `db:"instructions"`
	// UpdatedAt is Unix ms of the last replacement.
	UpdatedAt int64 `db:"updated_at"`
	// ToolProviderTools and EagerToolNames are JSON arrays ("[]" when none).
	ToolProviderTools string `db:"tool_provider_tools"`
	EagerToolNames    string `db:"eager_tool_names"`
	// PinImports is the profile's pin_imports; ImportPins the pinned definitions it recorded
	// (a JSON array), NULL when it does not pin.
	PinImports bool           `db:"pin_imports"`
	ImportPins sql.NullString `db:"import_pins"`
}

const agentProfileColumns = `p.agent_id, p.revision, p.tool_definitions, p.kernel_tools, p.runner_executor_public_ids,
       p.runner_tool_names, p.approval_mode, p.approval_rules, p.default_model, p.instructions, p.updated_at,
       p.tool_provider_tools, p.eager_tool_names, p.pin_imports, p.import_pins`

// AgentProfileOf reads an agent's profile; ErrNotFound when it was never written.
func AgentProfileOf(ctx context.Context, q Querier, agentID int64) (*AgentProfile, error) {
	var p AgentProfile
	if err := q.Get(ctx, &p, `SELECT `+agentProfileColumns+` FROM agent_profiles p WHERE p.agent_id = ?`, agentID); err != nil {
		return nil, notFound(err)
	}
	return &p, nil
}

// PutAgentProfile replaces an agent's profile whole and sets p.Revision to the new revision.
// The upsert is one statement, so replacements of one agent's profile are serialized by the
// row (PostgreSQL's ON CONFLICT takes its lock; SQLite has one writer) and each gets its own
// revision.
func PutAgentProfile(ctx context.Context, q Querier, p *AgentProfile) error {
	return q.Get(ctx, &p.Revision, `INSERT INTO agent_profiles (agent_id, revision, tool_definitions, kernel_tools,
    runner_executor_public_ids, runner_tool_names, approval_mode, approval_rules, default_model, instructions, updated_at,
    tool_provider_tools, eager_tool_names, pin_imports, import_pins)
VALUES (?, 1, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
ON CONFLICT (agent_id) DO UPDATE SET revision = agent_profiles.revision + 1,
    tool_definitions = excluded.tool_definitions, kernel_tools = excluded.kernel_tools,
    runner_executor_public_ids = excluded.runner_executor_public_ids, runner_tool_names = excluded.runner_tool_names,
    approval_mode = excluded.approval_mode, approval_rules = excluded.approval_rules,
    default_model = excluded.default_model, instructions = excluded.instructions, updated_at = excluded.updated_at,
    tool_provider_tools = excluded.tool_provider_tools, eager_tool_names = excluded.eager_tool_names,
    pin_imports = excluded.pin_imports, import_pins = excluded.import_pins
RETURNING revision`,
		p.AgentID, p.ToolDefinitions, p.KernelTools, p.RunnerExecutorPublicIDs, p.RunnerToolNames,
		p.ApprovalMode, p.ApprovalRules, p.DefaultModel, p.Instructions, p.UpdatedAt,
		p.ToolProviderTools, p.EagerToolNames, p.PinImports, p.ImportPins)
}

// AgentOf reads an agent by its internal id, removed or not.
func AgentOf(ctx context.Context, q Querier, agentID int64) (*Agent, error) {
	var a Agent
	err := q.Get(ctx, &a, `SELECT id, public_id, workspace_id, handle, display_name, steward_user_id, created_at, removed_at
FROM agents WHERE id = ?`, agentID)
	if err != nil {
		return nil, notFound(err)
	}
	return &a, nil
}
