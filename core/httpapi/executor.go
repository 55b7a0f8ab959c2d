package httpapi

import (
	"net/http"
)

// The executor plane's own door (executor.md §1.3); the rest of the plane joins it here.
func (a *API) executorPlaneRoutes() {
	a.handle("GET /agent_api/v1/executor", routeOpts{}, a.executorIdentity)
}

func (a *API) executorIdentity(w http.ResponseWriter, _ *http.Request, c *Call) error {
	writeJSON(w, http.StatusOK, struct {
		Executor   executorJSON `json:"executor"`
		MeasuredAt string       `json:"measured_at"`
	}{executorWire(c.Executor), a.deps.Now().UTC().Format(timeLayout)})
	return nil
}
