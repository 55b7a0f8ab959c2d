package httpapi

import (
	"encoding/json"
	"net/http"

	"github.com/nexuskernel/nexus/core/identity"
)

// The agent routes of a workspace (docs/api.md#identity).
func (a *API) agentRoutes() {
	a.handle("POST /agent_api/v1/workspaces/{ws}/agents", routeOpts{}, a.createAgent)
	a.handle("GET /agent_api/v1/workspaces/{ws}/agents", routeOpts{}, a.listAgents)
	a.handle("GET /agent_api/v1/workspaces/{ws}/agent_messaging_policy", routeOpts{}, a.getMessagingPolicy)
	a.handle("PUT /agent_api/v1/workspaces/{ws}/agent_messaging_policy", routeOpts{}, a.putMessagingPolicy)
	a.handle("POST /agent_api/v1/workspaces/{ws}/agents/{agent}/tokens", routeOpts{}, a.createAgentToken)
}

type agentJSON struct {
	PublicID            string `json:"public_id"`
	Handle              string `json:"handle"`
	DisplayName         string `json:"display_name"`
	StewardUserPublicID string `json:"steward_user_public_id"`
	WorkspacePublicID   string `json:"workspace_public_id"`
	CreatedAt           string `json:"created_at"`
}

func agentWire(ag *identity.Agent) agentJSON {
	return agentJSON{PublicID: ag.PublicID, Handle: ag.Handle, DisplayName: ag.DisplayName,
		StewardUserPublicID: ag.StewardUserPublicID, WorkspacePublicID: ag.WorkspacePublicID, CreatedAt: formatTime(ag.CreatedAt)}
}

func (a *API) createAgent(w http.ResponseWriter, r *http.Request, c *Call) error {
	acc, err := a.deps.Directory.Access(r.Context(), c.Member, r.PathValue("ws"), identity.NeedOwner)
	if err != nil {
		return err
	}
	var body struct {
		Agent *struct {
			Handle              string  `json:"handle"`
			DisplayName         string  `json:"display_name"`
			StewardUserPublicID *string `json:"steward_user_public_id"`
		} `json:"agent"`
	}
	if err := decodeRequired(c, wordValidation, "agent", nil, &body); err != nil {
		return err
	}
	res, err := a.deps.Directory.CreateAgent(r.Context(), acc, &identity.CreateAgentRequest{
		Handle: body.Agent.Handle, DisplayName: body.Agent.DisplayName, StewardUserPublicID: body.Agent.StewardUserPublicID,
	})
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusCreated, struct {
		Agent agentJSON `json:"agent"`
		Token string    `json:"token"`
	}{agentWire(&res.Agent), res.Token})
	return nil
}

func (a *API) listAgents(w http.ResponseWriter, r *http.Request, c *Call) error {
	acc, err := a.deps.Directory.Access(r.Context(), c.Member, r.PathValue("ws"), identity.NeedMember)
	if err != nil {
		return err
	}
	agents, err := a.deps.Directory.Agents(r.Context(), acc)
	if err != nil {
		return err
	}
	out := make([]agentJSON, 0, len(agents))
	for i := range agents {
		out = append(out, agentWire(&agents[i]))
	}
	writeJSON(w, http.StatusOK, struct {
		Agents []agentJSON `json:"agents"`
	}{out})
	return nil
}

// messagingPolicyJSON is the policy door's answer
// (docs/agent-tools.md#delegation-and-conversations).
type messagingPolicyJSON struct {
	Policy struct {
		Agents map[string]string `json:"agents"`
	} `json:"agent_messaging_policy"`
	LockVersion int64 `json:"lock_version"`
}

func writePolicy(w http.ResponseWriter, p *identity.MessagingPolicy) {
	var out messagingPolicyJSON
	out.Policy.Agents = p.Agents
	out.LockVersion = p.LockVersion
	writeJSON(w, http.StatusOK, out)
}

// getMessagingPolicy answers the workspace's agent messaging policy (owner standing).
func (a *API) getMessagingPolicy(w http.ResponseWriter, r *http.Request, c *Call) error {
	acc, err := a.deps.Directory.Access(r.Context(), c.Member, r.PathValue("ws"), identity.NeedOwner)
	if err != nil {
		return err
	}
	p, err := a.deps.Directory.MessagingPolicy(r.Context(), acc)
	if err != nil {
		return err
	}
	writePolicy(w, p)
	return nil
}

// putMessagingPolicy replaces the workspace's agent messaging policy whole (owner standing).
func (a *API) putMessagingPolicy(w http.ResponseWriter, r *http.Request, c *Call) error {
	acc, err := a.deps.Directory.Access(r.Context(), c.Member, r.PathValue("ws"), identity.NeedOwner)
	if err != nil {
		return err
	}
	// The policy's values are the directory's to judge; its shape and keys are the door's.
	var req identity.PutMessagingPolicyRequest
	if present, err := decodeBody(c, wordParameter, &req); err != nil {
		return err
	} else if !present {
		return errNotObject
	}
	if _, err := decodeObjectAt(req.Policy, "agent_messaging_policy", wordParameter, &struct {
		Agents json.RawMessage `json:"agents"`
	}{}); err != nil {
		return err
	}
	p, err := a.deps.Directory.PutMessagingPolicy(r.Context(), acc, &req)
	if err != nil {
		return err
	}
	writePolicy(w, p)
	return nil
}

// createAgentToken mints a token for an agent, by its steward or an owner
// (docs/api.md#an-agents-profile-and-tokens); revoke_others revokes its other tokens.
func (a *API) createAgentToken(w http.ResponseWriter, r *http.Request, c *Call) error {
	acc, err := a.deps.Directory.AgentAccess(r.Context(), c.Member, r.PathValue("ws"), r.PathValue("agent"))
	if err != nil {
		return err
	}
	// The body is optional: an empty one mints a token labelled after the caller that does not
	// expire, and revokes nothing.
	var body struct {
		Token        *tokenFields `json:"token"`
		RevokeOthers *bool        `json:"revoke_others"`
	}
	if _, err := decodeBody(c, wordValidation, &body); err != nil {
		return err
	}
	label, expires, err := body.Token.read()
	if err != nil {
		return err
	}
	req := &identity.CreateAgentTokenRequest{Label: label, ExpiresAt: expires, RevokeOthers: body.RevokeOthers != nil && *body.RevokeOthers}
	res, err := a.deps.Directory.CreateAgentToken(r.Context(), acc, req)
	if err != nil {
		return err
	}
	revoked := res.Revoked
	if revoked == nil {
		revoked = []string{}
	}
	writeJSON(w, http.StatusCreated, struct {
		Agent     agentJSON     `json:"agent"`
		Token     string        `json:"token"`
		TokenInfo tokenInfoJSON `json:"token_info"`
		Revoked   []string      `json:"revoked_token_public_ids"`
	}{agentWire(&acc.Agent), res.Token, tokenInfoWire(&res.Info), revoked})
	return nil
}
