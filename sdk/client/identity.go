package client

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"time"
)

// Workspace is a workspace as the caller sees it; Role is the caller's (owner, member or agent).
type Workspace struct {
	PublicID  string    `json:"public_id"`
	Handle    string    `json:"handle"`
	Name      string    `json:"name"`
	Role      string    `json:"role"`
	CreatedAt time.Time `json:"created_at"`
}

// Principal is an authenticated member.
type Principal struct {
	// Kind is user or agent.
	Kind        string `json:"kind"`
	PublicID    string `json:"public_id"`
	Handle      string `json:"handle"`
	DisplayName string `json:"display_name"`
}

// Agent is an agent application of one workspace.
type Agent struct {
	PublicID            string    `json:"public_id"`
	Handle              string    `json:"handle"`
	DisplayName         string    `json:"display_name"`
	StewardUserPublicID string    `json:"steward_user_public_id"`
	WorkspacePublicID   string    `json:"workspace_public_id"`
	CreatedAt           time.Time `json:"created_at"`
}

// User is a person with a role in a workspace.
type User struct {
	PublicID    string    `json:"public_id"`
	Handle      string    `json:"handle"`
	DisplayName string    `json:"display_name"`
	Role        string    `json:"role"`
	CreatedAt   time.Time `json:"created_at"`
}

// Member is a user or an agent as a member of a workspace.
type Member struct {
	Kind        string    `json:"kind"`
	PublicID    string    `json:"public_id"`
	Handle      string    `json:"handle"`
	DisplayName string    `json:"display_name"`
	Role        string    `json:"role"`
	JoinedAt    time.Time `json:"joined_at"`
}

// TokenInfo describes one of the caller's tokens; its value is never shown again.
type TokenInfo struct {
	PublicID  string     `json:"public_id"`
	Label     string     `json:"label"`
	CreatedAt time.Time  `json:"created_at"`
	ExpiresAt *time.Time `json:"expires_at"`
	// Current marks the token this client sent.
	Current bool `json:"current"`
}

// MeResponse is GET /agent_api/v1/me.
type MeResponse struct {
	// Raw is the response body as served.
	Raw        json.RawMessage `json:"-"`
	Principal  Principal       `json:"principal"`
	Workspaces []Workspace     `json:"workspaces"`
}

// WorkspacesResponse is GET /agent_api/v1/workspaces.
type WorkspacesResponse struct {
	// Raw is the response body as served.
	Raw        json.RawMessage `json:"-"`
	Workspaces []Workspace     `json:"workspaces"`
}

// WorkspaceResponse carries one workspace.
type WorkspaceResponse struct {
	// Raw is the response body as served.
	Raw       json.RawMessage `json:"-"`
	Workspace Workspace       `json:"workspace"`
}

// CreateWorkspaceRequest is POST /agent_api/v1/workspaces.
type CreateWorkspaceRequest struct {
	Handle string `json:"handle"`
	Name   string `json:"name"`
}

// CreateAgentRequest is POST /agent_api/v1/workspaces/{ws}/agents.
type CreateAgentRequest struct {
	Handle      string `json:"handle"`
	DisplayName string `json:"display_name"`
	// StewardUserPublicID names a user member of the workspace; empty means the caller.
	StewardUserPublicID string `json:"steward_user_public_id,omitempty"`
}

// CreateAgentResponse is a new agent and its token, shown once.
type CreateAgentResponse struct {
	// Raw is the response body as served.
	Raw   json.RawMessage `json:"-"`
	Agent Agent           `json:"agent"`
	Token string          `json:"token"`
}

// AgentsResponse is GET /agent_api/v1/workspaces/{ws}/agents.
type AgentsResponse struct {
	// Raw is the response body as served.
	Raw    json.RawMessage `json:"-"`
	Agents []Agent         `json:"agents"`
}

// CreateUserRequest is POST /agent_api/v1/workspaces/{ws}/users.
type CreateUserRequest struct {
	Handle      string `json:"handle"`
	DisplayName string `json:"display_name"`
	// Role is owner or member.
	Role string `json:"role"`
}

// CreateUserResponse is a new person and their token, shown once.
type CreateUserResponse struct {
	// Raw is the response body as served.
	Raw   json.RawMessage `json:"-"`
	User  User            `json:"user"`
	Token string          `json:"token"`
}

// MembersResponse is GET /agent_api/v1/workspaces/{ws}/members.
type MembersResponse struct {
	// Raw is the response body as served.
	Raw     json.RawMessage `json:"-"`
	Members []Member        `json:"members"`
}

// AddMemberRequest is POST /agent_api/v1/workspaces/{ws}/members.
type AddMemberRequest struct {
	UserPublicID string `json:"user_public_id"`
	// Role is owner or member.
	Role string `json:"role"`
}

// MemberResponse carries one member.
type MemberResponse struct {
	// Raw is the response body as served.
	Raw    json.RawMessage `json:"-"`
	Member Member          `json:"member"`
}

// CreateTokenRequest is POST /agent_api/v1/tokens; both fields are optional.
type CreateTokenRequest struct {
	Label string `json:"label,omitempty"`
	// ExpiresAt, when set, is when the token stops working.
	ExpiresAt *time.Time `json:"expires_at,omitempty"`
}

// CreateTokenResponse is a new token, shown once, and its description.
type CreateTokenResponse struct {
	// Raw is the response body as served.
	Raw       json.RawMessage `json:"-"`
	Token     string          `json:"token"`
	TokenInfo TokenInfo       `json:"token_info"`
}

// TokensResponse is GET /agent_api/v1/tokens.
type TokensResponse struct {
	// Raw is the response body as served.
	Raw    json.RawMessage `json:"-"`
	Tokens []TokenInfo     `json:"tokens"`
}

// Me reads the caller and its workspaces.
func (c *Client) Me(ctx context.Context) (*MeResponse, error) {
	out := &MeResponse{}
	return out, c.call(ctx, http.MethodGet, "/agent_api/v1/me", nil, out, &out.Raw)
}

// Workspaces lists the caller's workspaces.
func (c *Client) Workspaces(ctx context.Context) (*WorkspacesResponse, error) {
	out := &WorkspacesResponse{}
	return out, c.call(ctx, http.MethodGet, "/agent_api/v1/workspaces", nil, out, &out.Raw)
}

// CreateWorkspace creates a workspace the caller (a user) owns.
func (c *Client) CreateWorkspace(ctx context.Context, req *CreateWorkspaceRequest) (*WorkspaceResponse, error) {
	out := &WorkspaceResponse{}
	return out, c.call(ctx, http.MethodPost, "/agent_api/v1/workspaces", map[string]any{"workspace": req}, out, &out.Raw)
}

// Workspace reads one workspace by public id or handle.
func (c *Client) Workspace(ctx context.Context, ws string) (*WorkspaceResponse, error) {
	out := &WorkspaceResponse{}
	return out, c.call(ctx, http.MethodGet, wsPath(ws, ""), nil, out, &out.Raw)
}

// CreateAgent creates an agent in a workspace the caller owns.
func (c *Client) CreateAgent(ctx context.Context, ws string, req *CreateAgentRequest) (*CreateAgentResponse, error) {
	out := &CreateAgentResponse{}
	return out, c.call(ctx, http.MethodPost, wsPath(ws, "/agents"), map[string]any{"agent": req}, out, &out.Raw)
}

// Agents lists a workspace's agents.
func (c *Client) Agents(ctx context.Context, ws string) (*AgentsResponse, error) {
	out := &AgentsResponse{}
	return out, c.call(ctx, http.MethodGet, wsPath(ws, "/agents"), nil, out, &out.Raw)
}

// CreateUser invites a new person into a workspace the caller owns.
func (c *Client) CreateUser(ctx context.Context, ws string, req *CreateUserRequest) (*CreateUserResponse, error) {
	out := &CreateUserResponse{}
	return out, c.call(ctx, http.MethodPost, wsPath(ws, "/users"), map[string]any{"user": req}, out, &out.Raw)
}

// Members lists a workspace's members: users, then agents.
func (c *Client) Members(ctx context.Context, ws string) (*MembersResponse, error) {
	out := &MembersResponse{}
	return out, c.call(ctx, http.MethodGet, wsPath(ws, "/members"), nil, out, &out.Raw)
}

// AddMember adds an existing user to a workspace the caller owns.
func (c *Client) AddMember(ctx context.Context, ws string, req *AddMemberRequest) (*MemberResponse, error) {
	out := &MemberResponse{}
	return out, c.call(ctx, http.MethodPost, wsPath(ws, "/members"), map[string]any{"member": req}, out, &out.Raw)
}

// RemoveMember removes a user or an agent from a workspace the caller owns.
func (c *Client) RemoveMember(ctx context.Context, ws, publicID string) error {
	return c.call(ctx, http.MethodDelete, wsPath(ws, "/members/"+url.PathEscape(publicID)), nil, nil, nil)
}

// CreateToken mints an additional token for the caller.
func (c *Client) CreateToken(ctx context.Context, req *CreateTokenRequest) (*CreateTokenResponse, error) {
	out := &CreateTokenResponse{}
	var body any
	if req != nil {
		body = map[string]any{"token": req}
	}
	return out, c.call(ctx, http.MethodPost, "/agent_api/v1/tokens", body, out, &out.Raw)
}

// Tokens lists the caller's live tokens, without their values.
func (c *Client) Tokens(ctx context.Context) (*TokensResponse, error) {
	out := &TokensResponse{}
	return out, c.call(ctx, http.MethodGet, "/agent_api/v1/tokens", nil, out, &out.Raw)
}

// RevokeToken revokes one of the caller's tokens by public id.
func (c *Client) RevokeToken(ctx context.Context, publicID string) error {
	return c.call(ctx, http.MethodDelete, "/agent_api/v1/tokens/"+url.PathEscape(publicID), nil, nil, nil)
}

// RevokeCurrentToken revokes the token this client sends; the client is useless afterwards.
func (c *Client) RevokeCurrentToken(ctx context.Context) error {
	return c.call(ctx, http.MethodDelete, "/agent_api/v1/tokens/current", nil, nil, nil)
}

func wsPath(ws, rest string) string {
	return "/agent_api/v1/workspaces/" + url.PathEscape(ws) + rest
}

// call sends a request and decodes a 2xx body into out, keeping the bytes in raw.
func (c *Client) call(ctx context.Context, method, path string, in, out any, raw *json.RawMessage) error {
	_, body, err := c.do(ctx, method, path, in, nil)
	if err != nil {
		return err
	}
	if out == nil || len(body) == 0 {
		return nil
	}
	if raw != nil {
		*raw = body
	}
	return json.Unmarshal(body, out)
}
