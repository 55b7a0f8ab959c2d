package httpapi

import (
	"context"
	"errors"
	"net/http"

	"github.com/nexuskernel/nexus/core/executors"
	"github.com/nexuskernel/nexus/core/identity"
	"github.com/nexuskernel/nexus/core/refusal"
	"github.com/nexuskernel/nexus/plugins"
)

// PluginAdmin is what the plugin routes drive: the server's plugin host, with reload reading the
// configuration file again.
type PluginAdmin interface {
	Status() []plugins.Status
	StatusOf(name string) (plugins.Status, error)
	Restart(ctx context.Context, name string) error
	// Reload parses the configuration and applies its catalog; an invalid configuration changes
	// nothing and answers a *refusal.Error (422 validation_failed).
	Reload(ctx context.Context) (plugins.ReloadReport, error)
}

// The plugin routes (docs/plugins.md#states-status-reload-and-restart, docs/api.md#plugins) and a
// workspace's override map (docs/api.md#the-memory-override).
func (a *API) pluginRoutes() {
	if a.deps.Executors != nil {
		a.handle("GET /agent_api/v1/workspaces/{ws}/tool_provider_overrides", routeOpts{}, a.getOverrides)
		a.handle("PUT /agent_api/v1/workspaces/{ws}/tool_provider_overrides", routeOpts{}, a.putOverrides)
	}
	if a.deps.Plugins == nil {
		return
	}
	a.handle("GET /agent_api/v1/plugins", routeOpts{}, a.listPlugins)
	a.handle("GET /agent_api/v1/plugins/{name}", routeOpts{}, a.getPlugin)
	a.handle("POST /agent_api/v1/plugins/reload", routeOpts{}, a.reloadPlugins)
	a.handle("POST /agent_api/v1/plugins/{name}/restart", routeOpts{}, a.restartPlugin)
}

// deploymentOwner is the plugin routes' standing: the plugins serve the whole deployment, so
// the caller is a user who owns a workspace (an agent is not_user, a user owning none
// not_authorized).
func (a *API) deploymentOwner(r *http.Request, c *Call) error {
	if !c.Member.IsUser() {
		return identity.ErrNotUser
	}
	ws, err := a.deps.Directory.Workspaces(r.Context(), c.Member)
	if err != nil {
		return err
	}
	for _, w := range ws {
		if w.Role == identity.RoleOwner {
			return nil
		}
	}
	return identity.ErrNotAuthorized
}

func (a *API) listPlugins(w http.ResponseWriter, r *http.Request, c *Call) error {
	if err := a.deploymentOwner(r, c); err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, struct {
		Plugins []plugins.Status `json:"plugins"`
	}{a.deps.Plugins.Status()})
	return nil
}

func pluginNotFound(name string) error {
	return refusal.Newf(refusal.NotFound, refusal.CodeNotFound, "No plugin %q in the catalog.", name)
}

func (a *API) getPlugin(w http.ResponseWriter, r *http.Request, c *Call) error {
	if err := a.deploymentOwner(r, c); err != nil {
		return err
	}
	st, err := a.deps.Plugins.StatusOf(r.PathValue("name"))
	if errors.Is(err, plugins.ErrUnknownPlugin) {
		return pluginNotFound(r.PathValue("name"))
	}
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, struct {
		Plugin plugins.Status `json:"plugin"`
	}{st})
	return nil
}

func (a *API) reloadPlugins(w http.ResponseWriter, r *http.Request, c *Call) error {
	if err := a.deploymentOwner(r, c); err != nil {
		return err
	}
	if _, err := decodeBody(c, wordParameter, &noFields{}); err != nil {
		return err
	}
	rep, err := a.deps.Plugins.Reload(r.Context())
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, struct {
		Reload  plugins.ReloadReport `json:"reload"`
		Plugins []plugins.Status     `json:"plugins"`
	}{rep, a.deps.Plugins.Status()})
	return nil
}

func (a *API) restartPlugin(w http.ResponseWriter, r *http.Request, c *Call) error {
	if err := a.deploymentOwner(r, c); err != nil {
		return err
	}
	if _, err := decodeBody(c, wordParameter, &noFields{}); err != nil {
		return err
	}
	name := r.PathValue("name")
	err := a.deps.Plugins.Restart(r.Context(), name)
	if errors.Is(err, plugins.ErrUnknownPlugin) {
		return pluginNotFound(name)
	}
	if err != nil {
		return err
	}
	st, err := a.deps.Plugins.StatusOf(name)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, struct {
		Plugin plugins.Status `json:"plugin"`
	}{st})
	return nil
}

func (a *API) getOverrides(w http.ResponseWriter, r *http.Request, c *Call) error {
	acc, err := a.deps.Directory.Access(r.Context(), c.Member, r.PathValue("ws"), identity.NeedOwner)
	if err != nil {
		return err
	}
	doc, err := a.deps.Executors.ToolProviderOverrides(r.Context(), acc.Workspace.ID)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, doc)
	return nil
}

func (a *API) putOverrides(w http.ResponseWriter, r *http.Request, c *Call) error {
	acc, err := a.deps.Directory.Access(r.Context(), c.Member, r.PathValue("ws"), identity.NeedOwner)
	if err != nil {
		return err
	}
	// The map's entries are the override rule's to judge; the body's shape and keys the door's.
	req := executors.PutOverridesRequest{WorkspaceID: acc.Workspace.ID}
	if present, err := decodeBody(c, wordValidation, &req); err != nil {
		return err
	} else if !present {
		return errNotObject
	}
	doc, err := a.deps.Executors.PutToolProviderOverrides(r.Context(), &req)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, doc)
	return nil
}
