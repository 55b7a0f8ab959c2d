package client

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"
	"time"
)

// agentPath is the member path of one agent of a workspace: agent is its public id or its handle.
func agentPath(ws, agent, rest string) string {
	return wsPath(ws, "/agents/"+url.PathEscape(agent)+rest)
}

// AgentProfileConfiguration reads an agent's configuration as its steward or an owner of its
// workspace (GET …/agents/{agent}/profile/configuration): the bytes the agent's own read answers.
func (c *Client) AgentProfileConfiguration(ctx context.Context, ws, agent string) (*ProfileConfigurationResponse, error) {
	out := &ProfileConfigurationResponse{}
	return out, c.call(ctx, http.MethodGet, agentPath(ws, agent, "/profile/configuration"), nil, out, &out.Raw)
}

// PutAgentProfileConfiguration replaces an agent's configuration whole as its steward or an owner,
// with the agent's own door's validation and words, and returns the read-back. body is a
// *ProfileConfigurationRequest, or any value that marshals to {"configuration": {…}}.
func (c *Client) PutAgentProfileConfiguration(ctx context.Context, ws, agent string, body any) (*ProfileConfigurationResponse, error) {
	out := &ProfileConfigurationResponse{}
	return out, c.call(ctx, http.MethodPut, agentPath(ws, agent, "/profile/configuration"), body, out, &out.Raw)
}

// AssembleAgentTools previews what an agent's new work would freeze, as its steward or an owner
// (POST …/agents/{agent}/tools/assembly), creating and changing nothing.
func (c *Client) AssembleAgentTools(ctx context.Context, ws, agent string, req *AssemblyRequest) (*AssemblyResponse, error) {
	out := &AssemblyResponse{}
	return out, c.call(ctx, http.MethodPost, agentPath(ws, agent, "/tools/assembly"), req, out, &out.Raw)
}

// CreateAgentTokenRequest is POST …/agents/{agent}/tokens; every field is optional.
type CreateAgentTokenRequest struct {
	// Label names the token; empty labels it "minted by <your handle>".
	Label string
	// ExpiresAt, when set, is when the token stops working.
	ExpiresAt *time.Time
	// RevokeOthers revokes every other live token of the agent (the lost-token case).
	RevokeOthers bool
}

// CreateAgentTokenResponse is the agent's new token, shown once, and the tokens revoked with it.
type CreateAgentTokenResponse struct {
	// Raw is the response body as served.
	Raw       json.RawMessage `json:"-"`
	Agent     Agent           `json:"agent"`
	Token     string          `json:"token"`
	TokenInfo TokenInfo       `json:"token_info"`
	// RevokedTokenPublicIDs are the agent's tokens revoked by RevokeOthers.
	RevokedTokenPublicIDs []string `json:"revoked_token_public_ids"`
}

// CreateAgentToken mints a token for an agent as its steward or an owner of its workspace.
func (c *Client) CreateAgentToken(ctx context.Context, ws, agent string, req *CreateAgentTokenRequest) (*CreateAgentTokenResponse, error) {
	body := map[string]any{}
	if req != nil {
		if req.Label != "" || req.ExpiresAt != nil {
			body["token"] = CreateTokenRequest{Label: req.Label, ExpiresAt: req.ExpiresAt}
		}
		if req.RevokeOthers {
			body["revoke_others"] = true
		}
	}
	out := &CreateAgentTokenResponse{}
	return out, c.call(ctx, http.MethodPost, agentPath(ws, agent, "/tokens"), body, out, &out.Raw)
}

// ConversationsResponse is one page of GET …/conversations, newest first.
type ConversationsResponse struct {
	// Raw is the response body as served.
	Raw           json.RawMessage `json:"-"`
	Conversations []Conversation  `json:"conversations"`
	Pagination    struct {
		NextAfter *string `json:"next_after"`
	} `json:"pagination"`
}

// Conversations lists a workspace's conversations, newest first; empty filters are not sent.
// status is active or archived.
func (c *Client) Conversations(ctx context.Context, ws, status, after string, limit int) (*ConversationsResponse, error) {
	out := &ConversationsResponse{}
	return out, c.call(ctx, http.MethodGet, wsPath(ws, "/conversations")+pageQuery(map[string]string{"status": status, "after": after}, limit), nil, out, &out.Raw)
}

// pageQuery is a query string of the non-empty values and a positive limit, "" for none.
func pageQuery(values map[string]string, limit int) string {
	q := url.Values{}
	for k, v := range values {
		if v != "" {
			q.Set(k, v)
		}
	}
	if limit > 0 {
		q.Set("limit", strconv.Itoa(limit))
	}
	if len(q) == 0 {
		return ""
	}
	return "?" + q.Encode()
}

// MessagingPolicy is a workspace's agent messaging policy: the agents (by public id) that take
// new requests only from themselves and their own spawned copies ("private"); an agent absent
// from the map is public.
type MessagingPolicy struct {
	Agents map[string]string `json:"agents"`
}

// MessagingPolicyResponse answers both policy doors.
type MessagingPolicyResponse struct {
	// Raw is the response body as served.
	Raw         json.RawMessage `json:"-"`
	Policy      MessagingPolicy `json:"agent_messaging_policy"`
	LockVersion int64           `json:"lock_version"`
}

// MessagingPolicy reads a workspace's agent messaging policy (owners).
func (c *Client) MessagingPolicy(ctx context.Context, ws string) (*MessagingPolicyResponse, error) {
	out := &MessagingPolicyResponse{}
	return out, c.call(ctx, http.MethodGet, wsPath(ws, "/agent_messaging_policy"), nil, out, &out.Raw)
}

// PutMessagingPolicy replaces a workspace's agent messaging policy whole at the lock version the
// caller read (owners); a stale version is refused stale_object.
func (c *Client) PutMessagingPolicy(ctx context.Context, ws string, agents map[string]string, expectedLockVersion int64) (*MessagingPolicyResponse, error) {
	if agents == nil {
		agents = map[string]string{}
	}
	body := map[string]any{"agent_messaging_policy": MessagingPolicy{Agents: agents}, "expected_lock_version": expectedLockVersion}
	out := &MessagingPolicyResponse{}
	return out, c.call(ctx, http.MethodPut, wsPath(ws, "/agent_messaging_policy"), body, out, &out.Raw)
}
