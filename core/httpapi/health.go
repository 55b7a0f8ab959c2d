package httpapi

import (
	"context"
	"net/http"
	"time"
)

// readyTimeout bounds the readiness checks so that a hung database answers 503 instead of
// hanging the probe.
const readyTimeout = 2 * time.Second

func (a *API) healthz(w http.ResponseWriter, _ *http.Request, _ *Call) error {
	writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
	return nil
}

// readyz answers 200 ready or 503 not_ready with the reasons. Not ready is an answer, not a
// server fault (plugins starting at every start and reload, a store that does not answer yet):
// the request is logged at debug.
func (a *API) readyz(w http.ResponseWriter, r *http.Request, c *Call) error {
	ctx, cancel := context.WithTimeout(r.Context(), readyTimeout)
	defer cancel()
	if reasons := a.deps.Ready(ctx); len(reasons) > 0 {
		c.NoFault = true
		writeJSON(w, http.StatusServiceUnavailable, struct {
			Status  string   `json:"status"`
			Reasons []string `json:"reasons"`
		}{"not_ready", reasons})
		return nil
	}
	writeJSON(w, http.StatusOK, map[string]string{"status": "ready"})
	return nil
}
