package httpapi

import (
	"net/http"

	"github.com/nexuskernel/nexus/core/identity"
)

// The workspace routes and me (docs/api.md#identity).
func (a *API) workspaceRoutes() {
	a.handle("GET /agent_api/v1/workspaces", routeOpts{}, a.listWorkspaces)
	a.handle("POST /agent_api/v1/workspaces", routeOpts{}, a.createWorkspace)
	a.handle("GET /agent_api/v1/workspaces/{ws}", routeOpts{}, a.getWorkspace)
	a.handle("GET /agent_api/v1/me", routeOpts{}, a.me)
}

// workspaceJSON is the list item of a workspace, role being the caller's.
type workspaceJSON struct {
	PublicID  string `json:"public_id"`
	Handle    string `json:"handle"`
	Name      string `json:"name"`
	Role      string `json:"role"`
	CreatedAt string `json:"created_at"`
}

type workspaceBody struct {
	Workspace workspaceJSON `json:"workspace"`
}

func workspaceWire(w *identity.Workspace) workspaceJSON {
	return workspaceJSON{PublicID: w.PublicID, Handle: w.Handle, Name: w.Name, Role: w.Role, CreatedAt: formatTime(w.CreatedAt)}
}

func workspacesWire(ws []identity.Workspace) []workspaceJSON {
	out := make([]workspaceJSON, 0, len(ws))
	for i := range ws {
		out = append(out, workspaceWire(&ws[i]))
	}
	return out
}

func (a *API) listWorkspaces(w http.ResponseWriter, r *http.Request, c *Call) error {
	ws, err := a.deps.Directory.Workspaces(r.Context(), c.Member)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, struct {
		Workspaces []workspaceJSON `json:"workspaces"`
	}{workspacesWire(ws)})
	return nil
}

func (a *API) createWorkspace(w http.ResponseWriter, r *http.Request, c *Call) error {
	if !c.Member.IsUser() {
		return identity.ErrNotUser
	}
	var body struct {
		Workspace *struct {
			Handle string `json:"handle"`
			Name   string `json:"name"`
		} `json:"workspace"`
	}
	if err := decodeRequired(c, wordValidation, "workspace", nil, &body); err != nil {
		return err
	}
	ws, err := a.deps.Directory.CreateWorkspace(r.Context(), c.Member, &identity.CreateWorkspaceRequest{
		Handle: body.Workspace.Handle, Name: body.Workspace.Name,
	})
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusCreated, workspaceBody{workspaceWire(ws)})
	return nil
}

func (a *API) getWorkspace(w http.ResponseWriter, r *http.Request, c *Call) error {
	acc, err := a.deps.Directory.Access(r.Context(), c.Member, r.PathValue("ws"), identity.NeedMember)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, workspaceBody{workspaceWire(&acc.Workspace)})
	return nil
}

// principalJSON is the caller as GET /me shows it.
type principalJSON struct {
	Kind        string `json:"kind"`
	PublicID    string `json:"public_id"`
	Handle      string `json:"handle"`
	DisplayName string `json:"display_name"`
}

func (a *API) me(w http.ResponseWriter, r *http.Request, c *Call) error {
	ws, err := a.deps.Directory.Workspaces(r.Context(), c.Member)
	if err != nil {
		return err
	}
	p := c.Member
	writeJSON(w, http.StatusOK, struct {
		Principal  principalJSON   `json:"principal"`
		Workspaces []workspaceJSON `json:"workspaces"`
	}{
		principalJSON{Kind: p.Kind, PublicID: p.PublicID, Handle: p.Handle, DisplayName: p.DisplayName},
		workspacesWire(ws),
	})
	return nil
}
