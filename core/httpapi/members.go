package httpapi

import (
	"net/http"

	"github.com/nexuskernel/nexus/core/identity"
)

// The member and user routes of a workspace (docs/api.md#identity).
func (a *API) memberRoutes() {
	a.handle("GET /agent_api/v1/workspaces/{ws}/members", routeOpts{}, a.listMembers)
	a.handle("POST /agent_api/v1/workspaces/{ws}/members", routeOpts{}, a.addMember)
	a.handle("DELETE /agent_api/v1/workspaces/{ws}/members/{public_id}", routeOpts{}, a.removeMember)
	a.handle("POST /agent_api/v1/workspaces/{ws}/users", routeOpts{}, a.createUser)
}

type memberJSON struct {
	Kind        string `json:"kind"`
	PublicID    string `json:"public_id"`
	Handle      string `json:"handle"`
	DisplayName string `json:"display_name"`
	Role        string `json:"role"`
	JoinedAt    string `json:"joined_at"`
}

func memberWire(m *identity.Member) memberJSON {
	return memberJSON{Kind: m.Kind, PublicID: m.PublicID, Handle: m.Handle, DisplayName: m.DisplayName, Role: m.Role, JoinedAt: formatTime(m.JoinedAt)}
}

func (a *API) listMembers(w http.ResponseWriter, r *http.Request, c *Call) error {
	acc, err := a.deps.Directory.Access(r.Context(), c.Member, r.PathValue("ws"), identity.NeedMember)
	if err != nil {
		return err
	}
	ms, err := a.deps.Directory.Members(r.Context(), acc)
	if err != nil {
		return err
	}
	out := make([]memberJSON, 0, len(ms))
	for i := range ms {
		out = append(out, memberWire(&ms[i]))
	}
	writeJSON(w, http.StatusOK, struct {
		Members []memberJSON `json:"members"`
	}{out})
	return nil
}

func (a *API) addMember(w http.ResponseWriter, r *http.Request, c *Call) error {
	acc, err := a.deps.Directory.Access(r.Context(), c.Member, r.PathValue("ws"), identity.NeedOwner)
	if err != nil {
		return err
	}
	var body struct {
		Member *struct {
			UserPublicID string `json:"user_public_id"`
			Role         string `json:"role"`
		} `json:"member"`
	}
	if err := decodeRequired(c, wordValidation, "member", nil, &body); err != nil {
		return err
	}
	m, err := a.deps.Directory.AddMember(r.Context(), acc, &identity.AddMemberRequest{UserPublicID: body.Member.UserPublicID, Role: body.Member.Role})
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusCreated, struct {
		Member memberJSON `json:"member"`
	}{memberWire(m)})
	return nil
}

func (a *API) removeMember(w http.ResponseWriter, r *http.Request, c *Call) error {
	acc, err := a.deps.Directory.Access(r.Context(), c.Member, r.PathValue("ws"), identity.NeedOwner)
	if err != nil {
		return err
	}
	if _, err := decodeBody(c, wordParameter, &noFields{}); err != nil {
		return err
	}
	if err := a.deps.Directory.RemoveMember(r.Context(), acc, r.PathValue("public_id")); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

type userJSON struct {
	PublicID    string `json:"public_id"`
	Handle      string `json:"handle"`
	DisplayName string `json:"display_name"`
	Role        string `json:"role"`
	CreatedAt   string `json:"created_at"`
}

func (a *API) createUser(w http.ResponseWriter, r *http.Request, c *Call) error {
	acc, err := a.deps.Directory.Access(r.Context(), c.Member, r.PathValue("ws"), identity.NeedOwner)
	if err != nil {
		return err
	}
	var body struct {
		User *struct {
			Handle      string `json:"handle"`
			DisplayName string `json:"display_name"`
			Role        string `json:"role"`
		} `json:"user"`
	}
	if err := decodeRequired(c, wordValidation, "user", nil, &body); err != nil {
		return err
	}
	res, err := a.deps.Directory.CreateUser(r.Context(), acc, &identity.CreateUserRequest{
		Handle: body.User.Handle, DisplayName: body.User.DisplayName, Role: body.User.Role,
	})
	if err != nil {
		return err
	}
	u := res.User
	writeJSON(w, http.StatusCreated, struct {
		User  userJSON `json:"user"`
		Token string   `json:"token"`
	}{userJSON{PublicID: u.PublicID, Handle: u.Handle, DisplayName: u.DisplayName, Role: u.Role, CreatedAt: formatTime(u.CreatedAt)}, res.Token})
	return nil
}
