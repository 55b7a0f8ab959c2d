package client

import (
	"context"
	"encoding/json"
	"net/http"
)

// ProfileConfiguration is an agent's standing configuration (PUT and GET
// /agent_api/v1/profile/configuration). A PUT replaces it whole: a field left nil is cleared.
type ProfileConfiguration struct {
	// ToolDefinitions is the explicit declaration; it reads back as the stored render, sorted,
	// kept here as the server's bytes.
	ToolDefinitions json.RawMessage `json:"tool_definitions"`
	// KernelTools are exact canonical names whose plain definitions are imported.
	KernelTools []string `json:"kernel_tools"`
	// RunnerExecutorPublicIDs are the Runner candidates, in order.
	RunnerExecutorPublicIDs []string `json:"runner_executor_public_ids"`
	// RunnerToolNames allowlists the selected Runner's tools: nil (null) imports all of them,
	// an empty non-nil slice ([]) none.
	RunnerToolNames []string `json:"runner_tool_names"`
	// ToolProviderTools imports the workspace's tool providers' tools by exact name or a name
	// with one trailing "*" ("fs_*"); nil imports none, ["*"] all.
	ToolProviderTools []string `json:"tool_provider_tools,omitempty"`
	// EagerToolNames are imported tools offered eagerly; every other import is deferred.
	EagerToolNames []string `json:"eager_tool_names,omitempty"`
	// PinImports pins what the profile imports: new work keeps the definitions recorded when
	// the profile was written, and a call is served only while its provider's definition
	// still matches.
	PinImports bool `json:"pin_imports,omitempty"`
	// ApprovalMode is bypass, ask or rules; required when the profile declares tools.
	ApprovalMode *string `json:"approval_mode"`
	// ApprovalRules is the approval rule list, kept as JSON.
	ApprovalRules json.RawMessage `json:"approval_rules"`
	// DefaultModel is a provider/model reference.
	DefaultModel *string `json:"default_model"`
	// Instructions are the agent's standing system instructions.
	Instructions *string `json:"instructions"`
}

// Pin is a recorded pin: a tool's name and its definition digest.
type Pin struct {
	Name   string `json:"name"`
	Digest string `json:"digest"`
}

// ImportProblem is an import refusal a profile write or the assembly reports instead of
// refusing, since a provider may be restarting.
type ImportProblem struct {
	Code     string  `json:"code"`
	Field    string  `json:"field"`
	Path     *string `json:"path"`
	ToolName string  `json:"tool_name,omitempty"`
	Message  string  `json:"message"`
}

// ProfileImports is what the profile doors answer beside the configuration: the recorded pins
// (nil when the profile does not pin) and the problems a write reported.
type ProfileImports struct {
	Pins     []Pin           `json:"pins"`
	Problems []ImportProblem `json:"problems"`
}

// ProfileConfigurationRequest is the body of a PUT.
type ProfileConfigurationRequest struct {
	Configuration ProfileConfiguration `json:"configuration"`
}

// ProfileConfigurationResponse is the read-back form both verbs answer.
type ProfileConfigurationResponse struct {
	// Raw is the response body as served.
	Raw           json.RawMessage      `json:"-"`
	Configuration ProfileConfiguration `json:"configuration"`
	Imports       ProfileImports       `json:"imports"`
}

// ProfileConfiguration reads the calling agent's configuration.
func (c *Client) ProfileConfiguration(ctx context.Context) (*ProfileConfigurationResponse, error) {
	out := &ProfileConfigurationResponse{}
	return out, c.call(ctx, http.MethodGet, "/agent_api/v1/profile/configuration", nil, out, &out.Raw)
}

// PutProfileConfiguration replaces the calling agent's configuration and returns its read-back.
func (c *Client) PutProfileConfiguration(ctx context.Context, req *ProfileConfigurationRequest) (*ProfileConfigurationResponse, error) {
	out := &ProfileConfigurationResponse{}
	return out, c.call(ctx, http.MethodPut, "/agent_api/v1/profile/configuration", req, out, &out.Raw)
}

// AssemblyConfiguration is a proposed set of declaration sources. It replaces the profile's
// sources for one assembly; it is not a patch.
type AssemblyConfiguration struct {
	ToolDefinitions         json.RawMessage `json:"tool_definitions"`
	KernelTools             []string        `json:"kernel_tools"`
	RunnerExecutorPublicIDs []string        `json:"runner_executor_public_ids"`
	RunnerToolNames         []string        `json:"runner_tool_names"`
	ToolProviderTools       []string        `json:"tool_provider_tools,omitempty"`
	EagerToolNames          []string        `json:"eager_tool_names,omitempty"`
}

// AssemblyRequest is the body of POST /agent_api/v1/tools/assembly.
type AssemblyRequest struct {
	// DefaultRunnerExecutorPublicID selects a Runner; nil sends null, which selects none.
	// The key is always sent: the server requires it.
	DefaultRunnerExecutorPublicID *string `json:"default_runner_executor_public_id"`
	// Configuration is the proposal; nil assembles the agent's stored profile sources.
	Configuration *AssemblyConfiguration `json:"configuration,omitempty"`
}

// RunnerRow is one Runner of an assembled environment.
type RunnerRow struct {
	RunnerExecutorPublicID string          `json:"runner_executor_public_id"`
	DisplayName            string          `json:"display_name"`
	Environment            json.RawMessage `json:"environment"`
}

// AssemblyEnvironment is what new work would freeze as its environment.
type AssemblyEnvironment struct {
	DefaultRunnerExecutorPublicID *string     `json:"default_runner_executor_public_id"`
	Executors                     []RunnerRow `json:"executors"`
	RunnerCandidates              []RunnerRow `json:"runner_candidates"`
}

// AssemblyResponse is what new work would freeze: the complete rendered, sorted set (alias
// facts, routes and defer_loading kept, as the server's bytes) and its environment. Read
// callable names from here; never derive them.
type AssemblyResponse struct {
	// Raw is the response body as served.
	Raw             json.RawMessage     `json:"-"`
	ToolDefinitions json.RawMessage     `json:"tool_definitions"`
	Environment     AssemblyEnvironment `json:"environment"`
	// Imports are the imported tools of the set, with their source and pin.
	Imports []ImportedTool `json:"imports"`
	// Problems are the import refusals new work would meet now.
	Problems []ImportProblem `json:"problems"`
}

// ImportedTool is one imported tool of an assembled set.
type ImportedTool struct {
	Callable string `json:"callable"`
	// Source is kernel, runner or tool_provider.
	Source                 string `json:"source"`
	ToolName               string `json:"tool_name"`
	RunnerExecutorPublicID string `json:"runner_executor_public_id,omitempty"`
	Deferred               bool   `json:"deferred"`
	// Pin is the pinned definition digest; nil when the tool is not pinned.
	Pin *string `json:"pin"`
}

// AssembleTools previews what new work would freeze, creating and changing nothing.
func (c *Client) AssembleTools(ctx context.Context, req *AssemblyRequest) (*AssemblyResponse, error) {
	out := &AssemblyResponse{}
	return out, c.call(ctx, http.MethodPost, "/agent_api/v1/tools/assembly", req, out, &out.Raw)
}
