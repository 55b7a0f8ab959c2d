package httpapi

import (
	"net/http"

	"github.com/nexuskernel/nexus/core/conversations"
)

// instanceRoutes serves the live instances of the deployment (docs/api.md#instances).
func (a *API) instanceRoutes() {
	if a.deps.Runs == nil {
		return
	}
	a.handle("GET /agent_api/v1/instances", routeOpts{}, a.listInstances)
}

// listInstances answers the instances whose heartbeat is current. They serve the whole
// deployment, so the caller owns a workspace, as for the plugin routes.
func (a *API) listInstances(w http.ResponseWriter, r *http.Request, c *Call) error {
	if err := a.deploymentOwner(r, c); err != nil {
		return err
	}
	out, err := a.conversations.Instances(r.Context(), &conversations.InstancesRequest{})
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}
