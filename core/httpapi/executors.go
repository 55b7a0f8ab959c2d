package httpapi

import (
	"encoding/json"
	"net/http"

	"github.com/nexuskernel/nexus/core/executors"
	"github.com/nexuskernel/nexus/core/identity"
	"github.com/nexuskernel/nexus/sdk/announce"
)

// The member plane's executor routes (docs/api.md#executors): creation, token rotation and
// revocation by an owner; discovery by any member.
func (a *API) executorRoutes() {
	a.handle("POST /agent_api/v1/executors", routeOpts{}, a.createExecutor)
	a.handle("GET /agent_api/v1/executors", routeOpts{}, a.listExecutors)
	a.handle("GET /agent_api/v1/executors/{public_id}", routeOpts{}, a.getExecutor)
	a.handle("POST /agent_api/v1/executors/{public_id}/token", routeOpts{}, a.rotateExecutorToken)
	a.handle("DELETE /agent_api/v1/executors/{public_id}", routeOpts{}, a.revokeExecutor)
}

// executorJSON is the executor object of the creation, rotation, revocation and identity answers.
type executorJSON struct {
	PublicID          string `json:"public_id"`
	Kind              string `json:"kind"`
	Status            string `json:"status"`
	DisplayName       string `json:"display_name"`
	WorkspacePublicID string `json:"workspace_public_id"`
	CreatedAt         string `json:"created_at"`
	// ManagedBy is {"plugin": name} on a plugin's managed executor
	// (docs/plugins.md#what-the-host-checks), absent on every other.
	ManagedBy map[string]string `json:"managed_by,omitempty"`
}

// managedBy is an executor's managed_by object; nil for an ordinary executor.
func managedBy(e *identity.Executor) map[string]string {
	if e.ManagedBy == "" {
		return nil
	}
	return map[string]string{"plugin": e.ManagedBy}
}

func executorWire(e *identity.Executor) executorJSON {
	return executorJSON{PublicID: e.PublicID, Kind: e.Kind, Status: e.Status, DisplayName: e.DisplayName,
		WorkspacePublicID: e.WorkspacePublicID, CreatedAt: formatTime(e.CreatedAt), ManagedBy: managedBy(e)}
}

// executorDetailJSON is the discovery object (docs/api.md#executors): the executor with its current
// announcement (no tools, no documents and {} before its first, announced_at null), presence and
// last-seen time. connected_at is null while no event stream is open.
type executorDetailJSON struct {
	PublicID          string `json:"public_id"`
	Kind              string `json:"kind"`
	DisplayName       string `json:"display_name"`
	Status            string `json:"status"`
	WorkspacePublicID string `json:"workspace_public_id"`
	ServedTools       any    `json:"served_tools"`
	// DefinitionDigests are the served tools' current definition digests, by name, which a
	// pinned import compares at claim (docs/agent-tools.md#pinned-imports).
	DefinitionDigests map[string]string `json:"definition_digests"`
	ServedDocuments   any               `json:"served_documents"`
	Environment       json.RawMessage   `json:"environment"`
	AnnouncedAt       *string           `json:"announced_at"`
	Presence          string            `json:"presence"`
	LastSeenAt        *string           `json:"last_seen_at"`
	ConnectedAt       *string           `json:"connected_at"`
	CreatedAt         string            `json:"created_at"`
	// ManagedBy is present on a plugin's managed executor only.
	ManagedBy map[string]string `json:"managed_by,omitempty"`
}

func executorDetailWire(v *identity.ExecutorView, an *executors.Announcement) executorDetailJSON {
	d := executorDetailJSON{
		PublicID: v.PublicID, Kind: v.Kind, DisplayName: v.DisplayName, Status: v.Status, WorkspacePublicID: v.WorkspacePublicID,
		ServedTools: []json.RawMessage{}, ServedDocuments: []json.RawMessage{}, Environment: json.RawMessage("{}"),
		Presence: v.Presence, LastSeenAt: formatOptTime(v.LastSeenAt), ConnectedAt: formatOptTime(v.ConnectedAt), CreatedAt: formatTime(v.CreatedAt),
		ManagedBy: managedBy(&v.Executor),
	}
	d.DefinitionDigests = map[string]string{}
	if an != nil {
		d.ServedTools, d.ServedDocuments, d.Environment, d.AnnouncedAt = an.Tools, an.Documents, an.Environment, formatOptTime(an.AnnouncedAt)
		for _, t := range an.Tools {
			d.DefinitionDigests[t.Name] = announce.DefinitionDigest(t)
		}
	}
	return d
}

// announcementsOf reads the announcements of the listed executors when the executor plane is
// served; without it every executor reads as never announced.
func (a *API) announcementsOf(r *http.Request, views []identity.ExecutorView) (map[int64]*executors.Announcement, error) {
	if a.deps.Executors == nil {
		return nil, nil
	}
	ids := make([]int64, len(views))
	for i := range views {
		ids[i] = views[i].ID
	}
	return a.deps.Executors.Announcements(r.Context(), ids)
}

type executorTokenBody struct {
	Executor executorJSON `json:"executor"`
	Token    string       `json:"token"`
}

func (a *API) createExecutor(w http.ResponseWriter, r *http.Request, c *Call) error {
	if !c.Member.IsUser() {
		return identity.ErrNotUser
	}
	var body struct {
		Executor *struct {
			Kind              string  `json:"kind"`
			DisplayName       string  `json:"display_name"`
			WorkspacePublicID *string `json:"workspace_public_id"`
		} `json:"executor"`
	}
	if err := decodeRequired(c, wordValidation, "executor", nil, &body); err != nil {
		return err
	}
	res, err := a.deps.Directory.CreateExecutor(r.Context(), c.Member, &identity.CreateExecutorRequest{
		Kind: body.Executor.Kind, DisplayName: body.Executor.DisplayName, Workspace: body.Executor.WorkspacePublicID,
	})
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusCreated, executorTokenBody{executorWire(&res.Executor.Executor), res.Token})
	return nil
}

func (a *API) listExecutors(w http.ResponseWriter, r *http.Request, c *Call) error {
	q := r.URL.Query()
	es, err := a.deps.Directory.Executors(r.Context(), c.Member, &identity.ExecutorFilter{
		Kind: q.Get("kind"), Status: q.Get("status"), Workspace: q.Get("workspace"),
	})
	if err != nil {
		return err
	}
	ans, err := a.announcementsOf(r, es)
	if err != nil {
		return err
	}
	out := make([]executorDetailJSON, 0, len(es))
	for i := range es {
		out = append(out, executorDetailWire(&es[i], ans[es[i].ID]))
	}
	writeJSON(w, http.StatusOK, struct {
		Executors []executorDetailJSON `json:"executors"`
	}{out})
	return nil
}

func (a *API) getExecutor(w http.ResponseWriter, r *http.Request, c *Call) error {
	v, err := a.deps.Directory.Executor(r.Context(), c.Member, r.PathValue("public_id"))
	if err != nil {
		return err
	}
	ans, err := a.announcementsOf(r, []identity.ExecutorView{*v})
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, struct {
		Executor executorDetailJSON `json:"executor"`
	}{executorDetailWire(v, ans[v.ID])})
	return nil
}

func (a *API) rotateExecutorToken(w http.ResponseWriter, r *http.Request, c *Call) error {
	// The rotation takes no fields: its body is empty or {}, and anything else is refused
	// before the old token stops working.
	if _, err := decodeBody(c, wordParameter, &noFields{}); err != nil {
		return err
	}
	res, err := a.deps.Directory.RotateExecutorToken(r.Context(), c.Member, r.PathValue("public_id"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusCreated, executorTokenBody{executorWire(&res.Executor.Executor), res.Token})
	return nil
}

func (a *API) revokeExecutor(w http.ResponseWriter, r *http.Request, c *Call) error {
	if _, err := decodeBody(c, wordParameter, &noFields{}); err != nil {
		return err
	}
	v, err := a.deps.Directory.RevokeExecutor(r.Context(), c.Member, r.PathValue("public_id"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, struct {
		Executor executorJSON `json:"executor"`
	}{executorWire(&v.Executor)})
	return nil
}
