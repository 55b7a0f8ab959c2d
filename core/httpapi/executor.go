package httpapi

import (
	"bytes"
	"encoding/json"
	"math"
	"net/http"
	"regexp"
	"strconv"

	"github.com/nexuskernel/nexus/core/envelope"
	"github.com/nexuskernel/nexus/core/executors"
	"github.com/nexuskernel/nexus/core/refusal"
	"github.com/nexuskernel/nexus/core/store"
	"github.com/nexuskernel/nexus/sdk/announce"
	"github.com/nexuskernel/nexus/sdk/jsonwire"
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
	}{executorWire(c.Executor), a.deps.Now().UTC().Format(store.TimeLayout)})
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
	// The door's keys first, then the body parsed once into the typed announcement by
	// sdk/announce, the parser the plugin host shares.
	if _, err := bodyMembers(c, wordAnnouncement, &announcementRequest{}); err != nil {
		return err
	}
	parsed, ref := announce.ParseAnnouncement(c.Body)
	if ref != nil {
		return ref
	}
	an, err := a.deps.Executors.Announce(r.Context(), &executors.AnnounceRequest{Executor: c.Executor, Announcement: parsed})
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
	req := &executors.ExtendRequest{Executor: c.Executor, RunID: r.PathValue("run_public_id"), TaskKey: r.PathValue("task_key")}
	req.ClaimToken, req.TimeoutMS, req.Invalid = decodeExtend(c)
	ans, err := a.deps.Executors.Extend(r.Context(), req)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, ans)
	return nil
}

func (a *API) commitRow(w http.ResponseWriter, r *http.Request, c *Call) error {
	req := &executors.CommitRequest{Executor: c.Executor, RunID: r.PathValue("run_public_id"), TaskKey: r.PathValue("task_key")}
	req.ClaimToken, req.Result, req.Invalid = decodeCommit(c)
	ans, err := a.deps.Executors.Commit(r.Context(), req)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, ans)
	return nil
}

// The extend and commit doors look their row up before they read the body
// (docs/api.md#the-executor-plane): the body is decoded here, once, before the service is called,
// and the first refusal of its own rules is handed to the service as the request's Invalid, which
// the service answers at the body's place in its checks. The order of those checks is the
// service's alone.

// extendKeys are the extend door's keys.
type extendKeys struct {
	ClaimToken json.RawMessage `json:"claim_token"`
	TimeoutMS  json.RawMessage `json:"timeout_ms"`
}

// decodeExtend decodes the extend body: its shape and keys, then claim_token, then timeout_ms.
func decodeExtend(c *Call) (token string, timeoutMS int64, invalid error) {
	members, err := bodyMembers(c, wordParameter, &extendKeys{})
	if err != nil {
		return "", 0, err
	}
	if token, err = claimToken(members); err != nil {
		return "", 0, err
	}
	raw, ok := lastMember(members, "timeout_ms")
	if !ok {
		return "", 0, refusal.New(refusal.BadRequest, refusal.CodeParameterMissing, "timeout_ms is required.").With("path", "timeout_ms")
	}
	lit := string(bytes.TrimSpace(raw))
	if !integerLiteral.MatchString(lit) || lit == "0" || lit[0] == '-' {
		return "", 0, refusal.New(refusal.Unprocessable, executors.CodeInvalidTimeoutMS, "timeout_ms is an integer of at least 1.").With("path", "timeout_ms")
	}
	n, err := strconv.ParseInt(lit, 10, 64)
	if err != nil {
		n = math.MaxInt64 // a positive integer beyond int64 is far beyond every bound
	}
	return token, n, nil
}

// integerLiteral is a JSON number that is an integer: no fraction, no exponent.
var integerLiteral = regexp.MustCompile(`^-?(0|[1-9][0-9]*)$`)

// commitKeys are the commit door's keys: the claim token beside the result's own.
type commitKeys struct {
	ClaimToken json.RawMessage `json:"claim_token"`
	envelope.Keys
}

// decodeCommit decodes the commit body: its shape and keys, claim_token, and the result, whose
// own refusals the envelope answers later, at their place.
func decodeCommit(c *Call) (token string, result *envelope.Submission, invalid error) {
	members, err := bodyMembers(c, wordParameter, &commitKeys{})
	if err != nil {
		return "", nil, err
	}
	if token, err = claimToken(members); err != nil {
		return "", nil, err
	}
	return token, envelope.Decode(members), nil
}

// claimToken reads a body's claim_token: a string, required (null is absent).
func claimToken(members jsonwire.Members) (string, error) {
	token := ""
	if raw, ok := lastMember(members, "claim_token"); ok && !isJSONNull(raw) {
		s, isString := jsonwire.DecodeString(raw)
		if !isString {
			return "", refusal.New(refusal.BadRequest, refusal.CodeParameterInvalid, "claim_token is a string.").With("path", "claim_token")
		}
		token = s
	}
	if token == "" {
		return "", refusal.New(refusal.BadRequest, refusal.CodeParameterMissing, "claim_token is required.").With("path", "claim_token")
	}
	return token, nil
}

func isJSONNull(raw json.RawMessage) bool { return bytes.Equal(bytes.TrimSpace(raw), []byte("null")) }
