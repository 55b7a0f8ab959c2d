package client

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"time"
)

// Executor is a runner or a tool provider. The discovery fields (ServedTools and after) are
// filled by the member routes that read executors, not by creation, rotation or revocation.
type Executor struct {
	PublicID          string    `json:"public_id"`
	Kind              string    `json:"kind"`
	Status            string    `json:"status"`
	DisplayName       string    `json:"display_name"`
	WorkspacePublicID string    `json:"workspace_public_id"`
	CreatedAt         time.Time `json:"created_at"`

	ServedTools     []json.RawMessage `json:"served_tools,omitempty"`
	ServedDocuments []json.RawMessage `json:"served_documents,omitempty"`
	Environment     json.RawMessage   `json:"environment,omitempty"`
	AnnouncedAt     *time.Time        `json:"announced_at,omitempty"`
	// Presence is online, offline or not_yet_seen; display only.
	Presence    string     `json:"presence,omitempty"`
	LastSeenAt  *time.Time `json:"last_seen_at,omitempty"`
	ConnectedAt *time.Time `json:"connected_at,omitempty"`
}

// CreateExecutorRequest is POST /agent_api/v1/executors.
type CreateExecutorRequest struct {
	// Kind is runner or tool_provider.
	Kind        string `json:"kind"`
	DisplayName string `json:"display_name"`
	// WorkspacePublicID is the workspace's public id or handle; empty is allowed when the caller
	// owns exactly one workspace.
	WorkspacePublicID string `json:"workspace_public_id,omitempty"`
}

// ExecutorTokenResponse is an executor and a token for it, shown once.
type ExecutorTokenResponse struct {
	// Raw is the response body as served.
	Raw      json.RawMessage `json:"-"`
	Executor Executor        `json:"executor"`
	Token    string          `json:"token"`
}

// ExecutorResponse carries one executor.
type ExecutorResponse struct {
	// Raw is the response body as served.
	Raw      json.RawMessage `json:"-"`
	Executor Executor        `json:"executor"`
}

// ListExecutorsRequest filters GET /agent_api/v1/executors; empty fields do not filter (the
// server lists active executors when Status is empty).
type ListExecutorsRequest struct {
	Kind   string
	Status string
	// Workspace narrows the listing to one workspace (public id or handle).
	Workspace string
}

// ExecutorsResponse is GET /agent_api/v1/executors.
type ExecutorsResponse struct {
	// Raw is the response body as served.
	Raw       json.RawMessage `json:"-"`
	Executors []Executor      `json:"executors"`
}

// ExecutorIdentityResponse is GET /agent_api/v1/executor, the executor plane's identity.
type ExecutorIdentityResponse struct {
	// Raw is the response body as served.
	Raw      json.RawMessage `json:"-"`
	Executor Executor        `json:"executor"`
	// MeasuredAt is the server's clock.
	MeasuredAt time.Time `json:"measured_at"`
}

// CreateExecutor creates a runner or a tool provider in a workspace the caller owns.
func (c *Client) CreateExecutor(ctx context.Context, req *CreateExecutorRequest) (*ExecutorTokenResponse, error) {
	out := &ExecutorTokenResponse{}
	return out, c.call(ctx, http.MethodPost, "/agent_api/v1/executors", map[string]any{"executor": req}, out, &out.Raw)
}

// Executors lists the executors of the caller's workspaces.
func (c *Client) Executors(ctx context.Context, req *ListExecutorsRequest) (*ExecutorsResponse, error) {
	q := url.Values{}
	if req != nil {
		for k, v := range map[string]string{"kind": req.Kind, "status": req.Status, "workspace": req.Workspace} {
			if v != "" {
				q.Set(k, v)
			}
		}
	}
	path := "/agent_api/v1/executors"
	if len(q) > 0 {
		path += "?" + q.Encode()
	}
	out := &ExecutorsResponse{}
	return out, c.call(ctx, http.MethodGet, path, nil, out, &out.Raw)
}

// Executor reads one executor.
func (c *Client) Executor(ctx context.Context, publicID string) (*ExecutorResponse, error) {
	out := &ExecutorResponse{}
	return out, c.call(ctx, http.MethodGet, "/agent_api/v1/executors/"+url.PathEscape(publicID), nil, out, &out.Raw)
}

// RotateExecutorToken mints a new token for an executor and invalidates its old ones.
func (c *Client) RotateExecutorToken(ctx context.Context, publicID string) (*ExecutorTokenResponse, error) {
	out := &ExecutorTokenResponse{}
	return out, c.call(ctx, http.MethodPost, "/agent_api/v1/executors/"+url.PathEscape(publicID)+"/token", nil, out, &out.Raw)
}

// RevokeExecutor revokes an executor; its tokens stop working at once.
func (c *Client) RevokeExecutor(ctx context.Context, publicID string) (*ExecutorResponse, error) {
	out := &ExecutorResponse{}
	return out, c.call(ctx, http.MethodDelete, "/agent_api/v1/executors/"+url.PathEscape(publicID), nil, out, &out.Raw)
}

// ExecutorIdentity reads the identity of the executor whose token this client sends.
func (c *Client) ExecutorIdentity(ctx context.Context) (*ExecutorIdentityResponse, error) {
	out := &ExecutorIdentityResponse{}
	return out, c.call(ctx, http.MethodGet, "/agent_api/v1/executor", nil, out, &out.Raw)
}
