package httpapi

import (
	"encoding/json"
	"net/http"

	"github.com/nexuskernel/nexus/core/envelope"
	"github.com/nexuskernel/nexus/core/executors"
	"github.com/nexuskernel/nexus/core/refusal"
	"github.com/nexuskernel/nexus/sdk/announce"
)

// The executor plane's own doors (docs/api.md#the-executor-plane): identity, the announcement, the
// inbox, claim, claim read, extend and commit. The work doors need Deps.Executors; without it
// only the identity door is served.
func (a *API) executorPlaneRoutes() {
	a.handle("GET /agent_api/v1/executor", routeOpts{}, a.executorIdentity)
	if a.deps.Executors == nil {
		return
	}
	a.handle("PUT /agent_api/v1/executor/announcement", routeOpts{}, a.putAnnouncement)
	a.handle("GET /agent_api/v1/executor/announcement", routeOpts{}, a.getAnnouncement)
	a.handle("GET /agent_api/v1/executor/inbox", routeOpts{}, a.executorInbox)
	a.handle("POST /agent_api/v1/executor/inbox/{run_public_id}/{task_key}/claim", routeOpts{}, a.claimRow)
	a.handle("GET /agent_api/v1/executor/inbox/{run_public_id}/{task_key}/claim", routeOpts{}, a.readClaim)
	a.handle("POST /agent_api/v1/executor/inbox/{run_public_id}/{task_key}/extend", routeOpts{}, a.extendClaim)
	// The commit body holds a whole result with its escaping and metadata (docs/api.md#conventions).
	a.handle("POST /agent_api/v1/executor/inbox/{run_public_id}/{task_key}/commit", routeOpts{bodyLimit: envelope.MaxBodyBytes}, a.commitRow)
}

func (a *API) executorIdentity(w http.ResponseWriter, _ *http.Request, c *Call) error {
	writeJSON(w, http.StatusOK, struct {
		Executor   executorJSON `json:"executor"`
		MeasuredAt string       `json:"measured_at"`
	}{executorWire(c.Executor), a.deps.Now().UTC().Format(timeLayout)})
	return nil
}

// announcementJSON is the announcement object of the announcement door
// (docs/api.md#the-executor-plane).
type announcementJSON struct {
	Tools       any             `json:"tools"`
	Environment json.RawMessage `json:"environment"`
	Documents   any             `json:"documents"`
	AnnouncedAt *string         `json:"announced_at"`
}

func announcementWire(an *executors.Announcement) announcementJSON {
	return announcementJSON{Tools: an.Tools, Environment: an.Environment, Documents: an.Documents, AnnouncedAt: formatOptTime(an.AnnouncedAt)}
}

func (a *API) writeAnnouncement(w http.ResponseWriter, c *Call, an *executors.Announcement) {
	writeJSON(w, http.StatusOK, struct {
		Executor     executorJSON     `json:"executor"`
		Announcement announcementJSON `json:"announcement"`
	}{executorWire(c.Executor), announcementWire(an)})
}

// announcementRequest is the announcement's request type at the door: its entries' own keys are
// the announcement validator's (sdk/announce), which refuses them by name too.
type announcementRequest struct {
	Tools       json.RawMessage `json:"tools"`
	Environment json.RawMessage `json:"environment"`
	Documents   json.RawMessage `json:"documents"`
}

// wordAnnouncement is the announcement door's field word (docs/api.md, "Request bodies: exact fields").
var wordAnnouncement = fieldWord{kind: refusal.Unprocessable, code: announce.CodeInvalidAnnouncement}

func (a *API) putAnnouncement(w http.ResponseWriter, r *http.Request, c *Call) error {
	if _, err := decodeBody(c, wordAnnouncement, &announcementRequest{}); err != nil {
		return err
	}
	an, err := a.deps.Executors.Announce(r.Context(), c.Executor, c.Body)
	if err != nil {
		return err
	}
	a.writeAnnouncement(w, c, an)
	return nil
}

func (a *API) getAnnouncement(w http.ResponseWriter, r *http.Request, c *Call) error {
	an, err := a.deps.Executors.AnnouncementOf(r.Context(), c.Executor.ID)
	if err != nil {
		return err
	}
	a.writeAnnouncement(w, c, an)
	return nil
}

func (a *API) executorInbox(w http.ResponseWriter, r *http.Request, c *Call) error {
	limit, err := pageLimit(r, executors.DefaultInboxPage, executors.MaxInboxPage)
	if err != nil {
		return err
	}
	page, err := a.deps.Executors.Inbox(r.Context(), c.Executor, r.URL.Query().Get("after"), limit)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, struct {
		Tasks      []*executors.Row `json:"tasks"`
		Pagination pagination       `json:"pagination"`
	}{page.Tasks, pagination{NextAfter: page.NextAfter}})
	return nil
}

// pagination is a listing's next-page cursor, null on the last page.
type pagination struct {
	NextAfter *string `json:"next_after"`
}

// retryLater sets Retry-After on a rate_limited refusal before the one error writer answers it.
func retryLater(w http.ResponseWriter, err error) error {
	if v, ok := executors.RetryAfterOf(err); ok {
		w.Header().Set("Retry-After", v)
	}
	return err
}

func (a *API) claimRow(w http.ResponseWriter, r *http.Request, c *Call) error {
	// The claim takes no fields: its body is empty or {}.
	if _, err := decodeBody(c, wordParameter, &noFields{}); err != nil {
		return err
	}
	ans, err := a.deps.Executors.Claim(r.Context(), c.Executor, r.PathValue("run_public_id"), r.PathValue("task_key"))
	if err != nil {
		return retryLater(w, err)
	}
	writeJSON(w, http.StatusOK, ans)
	return nil
}

// ClaimTokenHeader carries the token of a claim read (docs/api.md#the-executor-plane).
const ClaimTokenHeader = "Claim-Token"

func (a *API) readClaim(w http.ResponseWriter, r *http.Request, c *Call) error {
	st, err := a.deps.Executors.ClaimRead(r.Context(), c.Executor, r.PathValue("run_public_id"), r.PathValue("task_key"), r.Header.Get(ClaimTokenHeader))
	if err != nil {
		return retryLater(w, err)
	}
	writeJSON(w, http.StatusOK, st)
	return nil
}

func (a *API) extendClaim(w http.ResponseWriter, r *http.Request, c *Call) error {
	ans, err := a.deps.Executors.Extend(r.Context(), c.Executor, r.PathValue("run_public_id"), r.PathValue("task_key"), decoder(c, wordParameter))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, ans)
	return nil
}

func (a *API) commitRow(w http.ResponseWriter, r *http.Request, c *Call) error {
	ans, err := a.deps.Executors.Commit(r.Context(), c.Executor, r.PathValue("run_public_id"), r.PathValue("task_key"), c.Body, decoder(c, wordParameter))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, ans)
	return nil
}
