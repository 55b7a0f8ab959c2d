package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"time"

	"github.com/nexuskernel/nexus/core/conversations"
	"github.com/nexuskernel/nexus/core/envelope"
	"github.com/nexuskernel/nexus/core/identity"
	"github.com/nexuskernel/nexus/core/model"
	"github.com/nexuskernel/nexus/core/refusal"
	"github.com/nexuskernel/nexus/core/runs"
	"github.com/nexuskernel/nexus/core/steps"
	"github.com/nexuskernel/nexus/core/store"
	"github.com/nexuskernel/nexus/sdk/jsonwire"
)

// The run routes (docs/api.md#runs, docs/api.md#the-inbox): thin, the engine decides.
func (a *API) runRoutes() {
	if a.deps.Runs == nil {
		return
	}
	const base = "/agent_api/v1/workspaces/{ws}/runs"
	a.handle("POST "+base, routeOpts{}, a.createRun)
	a.handle("GET "+base, routeOpts{}, a.listRuns)
	a.handle("GET "+base+"/{run}", routeOpts{}, a.readRun)
	a.handle("POST "+base+"/{run}/start", routeOpts{}, a.startRun)
	a.handle("POST "+base+"/{run}/stop", routeOpts{}, a.stopRun)
	a.handle("POST "+base+"/{run}/tasks", routeOpts{}, a.appendSteps)
	a.handle("GET "+base+"/{run}/tasks/{task_key}", routeOpts{}, a.readTask)
	a.handle("GET "+base+"/{run}/tasks/{task_key}/request", routeOpts{}, a.readRequest)
	a.handle("POST "+base+"/{run}/tasks/{task_key}/resolution", routeOpts{bodyLimit: ResolutionBodyLimit}, a.resolve)
	a.handle("POST "+base+"/{run}/tasks/{task_key}/approve", routeOpts{}, a.approve)
	a.handle("POST "+base+"/{run}/tasks/{task_key}/deny", routeOpts{}, a.deny)
	a.handle("POST "+base+"/{run}/tasks/{task_key}/cancel", routeOpts{}, a.cancelBranch)
	a.handle("GET /agent_api/v1/inbox", routeOpts{}, a.inbox)
}

// ResolutionBodyLimit is the resolution door's body bound: 2 MiB, so a 1 MiB result fits with
// its escaping and metadata (docs/api.md#conventions).
const ResolutionBodyLimit = 2 << 20

// modelsRoutes serves the models catalog to any member (docs/operations.md#the-models-catalog).
func (a *API) modelsRoutes() {
	if a.deps.Models == nil {
		return
	}
	a.handle("GET /agent_api/v1/models", routeOpts{}, a.models)
}

func (a *API) models(w http.ResponseWriter, r *http.Request, c *Call) error {
	q, err := model.ParseListParams(r.URL.Query())
	if err != nil {
		return err
	}
	body, err := a.deps.Models.List(q).MarshalJSON()
	if err != nil {
		return err
	}
	writeJSONBytes(w, http.StatusOK, append(body, '\n'))
	return nil
}

// actor resolves the workspace and the caller's standing in it.
func (a *API) actor(r *http.Request, c *Call) (*runs.Actor, error) {
	acc, err := a.deps.Directory.Access(r.Context(), c.Member, r.PathValue("ws"), identity.NeedMember)
	if err != nil {
		return nil, err
	}
	return actorOf(acc), nil
}

func actorOf(acc *identity.Access) *runs.Actor {
	return &runs.Actor{Kind: acc.Caller.Kind, ID: acc.Caller.ID, PublicID: acc.Caller.PublicID, Role: acc.Workspace.Role,
		WorkspaceID: acc.Workspace.ID, WorkspacePublicID: acc.Workspace.PublicID}
}

// creatingActor is actor for a create, whose write stands on the standing it checks itself: the
// door reads nothing, the run's statement checks the standing as a guard, naming the workspace by
// the route's reference, and the create reads it (Reread) where it needs it, its transaction
// afresh. A reference that cannot name a workspace is refused as Access refuses it.
func (a *API) creatingActor(r *http.Request, c *Call) (*runs.Actor, error) {
	ref := r.PathValue("ws")
	publicID, handle, ok := identity.WorkspaceRef(ref)
	if !ok {
		return a.actor(r, c)
	}
	caller := c.Member
	act := &runs.Actor{Kind: caller.Kind, ID: caller.ID, PublicID: caller.PublicID, WorkspacePublicID: publicID, WorkspaceHandle: handle}
	act.Reread = func(ctx context.Context, q store.Querier) (*runs.Actor, error) {
		acc, err := a.deps.Directory.AccessIn(ctx, q, caller, ref, identity.NeedMember)
		if err != nil {
			return nil, err
		}
		return actorOf(acc), nil
	}
	return act, nil
}

// idempotencyKey reads Idempotency-Key: 1..36 bytes of printable ASCII (docs/api.md#conventions).
func idempotencyKey(r *http.Request) (string, error) {
	vs, ok := r.Header["Idempotency-Key"]
	if !ok {
		return "", nil
	}
	k := ""
	if len(vs) > 0 {
		k = vs[0]
	}
	bad := len(k) == 0 || len(k) > conversations.IdempotencyKeyMaxBytes
	for i := 0; i < len(k) && !bad; i++ {
		bad = k[i] < 0x20 || k[i] > 0x7e
	}
	if bad {
		return "", refusal.Newf(refusal.BadRequest, refusal.CodeParameterInvalid,
			"Idempotency-Key must be 1 to %d bytes of printable ASCII.", conversations.IdempotencyKeyMaxBytes).With("path", "Idempotency-Key")
	}
	return k, nil
}

// replayOf is a request's idempotency: the key, and the body's canonical JSON (its bytes as sent
// when they are not JSON) that a replay must match; no fingerprint without a key.
func replayOf(c *Call, key string) conversations.Replay {
	if key == "" {
		return conversations.Replay{}
	}
	canon, err := jsonwire.CanonicalValue(c.Body)
	if err != nil {
		canon = c.Body
	}
	return conversations.Replay{Key: key, Fingerprint: canon}
}

// appendKeys are the append door's keys; its steps are decoded by the grammar (steps.DecodeList)
// once the body's own rules have passed.
type appendKeys struct {
	Steps            json.RawMessage `json:"steps"`
	ExpectedRevision json.RawMessage `json:"expected_revision"`
}

// decodeAppend decodes the append body: absent, its shape and keys, steps absent, then
// expected_revision, then steps that are no array. The append answers the refusal after its
// replay (docs/api.md#runs).
func decodeAppend(c *Call) (list []steps.Step, expected *int64, invalid error) {
	errSteps := refusal.New(refusal.BadRequest, refusal.CodeParameterMissing, "The body must carry steps.").With("path", "steps")
	var body appendKeys
	present, err := decodeBody(c, wordParameter, &body)
	switch {
	case err != nil:
		return nil, nil, err
	case !present, body.Steps == nil, isJSONNull(body.Steps):
		return nil, nil, errSteps
	}
	if body.ExpectedRevision != nil && !isJSONNull(body.ExpectedRevision) {
		var f float64
		if json.Unmarshal(body.ExpectedRevision, &f) != nil || f != float64(int64(f)) {
			return nil, nil, refusal.New(refusal.BadRequest, refusal.CodeParameterInvalid, "expected_revision must be an integer.").With("path", "expected_revision")
		}
		v := int64(f)
		expected = &v
	}
	list, err = steps.DecodeList(body.Steps)
	return list, expected, err
}

func pageLimit(r *http.Request, def, max int) (int, error) {
	s := r.URL.Query().Get("limit")
	if s == "" {
		return def, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 || n > max {
		return 0, refusal.Newf(refusal.BadRequest, refusal.CodeParameterInvalid, "limit must be an integer from 1 to %d.", max).With("path", "limit")
	}
	return n, nil
}

func (a *API) createRun(w http.ResponseWriter, r *http.Request, c *Call) error {
	act, err := a.creatingActor(r, c)
	if err != nil {
		return err
	}
	return a.createRunAs(w, r, c, act)
}

func (a *API) createRunAs(w http.ResponseWriter, r *http.Request, c *Call, act *runs.Actor) error {
	var body struct {
		Run steps.Run `json:"run"`
	}
	if err := decodeRequired(c, wordValidation, "run", nil, &body); err != nil {
		return err
	}
	key, err := idempotencyKey(r)
	if err != nil {
		return err
	}
	created, err := a.conversations.CreateRun(r.Context(), &conversations.CreateRunRequest{Actor: act, Run: body.Run, Replay: replayOf(c, key)})
	if err != nil {
		return err
	}
	status := http.StatusCreated
	if created.Replayed {
		status = http.StatusOK
	}
	writeJSON(w, status, map[string]any{"run": created.Run, "receipt": created.Receipt, "replayed": created.Replayed})
	return nil
}

func (a *API) listRuns(w http.ResponseWriter, r *http.Request, c *Call) error {
	act, err := a.actor(r, c)
	if err != nil {
		return err
	}
	limit, err := pageLimit(r, conversations.DefaultPage, conversations.MaxPage)
	if err != nil {
		return err
	}
	q := r.URL.Query()
	page, err := a.conversations.ListRuns(r.Context(), act, q.Get("status"), q.Get("conversation_public_id"), q.Get("after"), limit)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, map[string]any{"runs": page.Runs, "pagination": map[string]any{"next_after": page.NextAfter}})
	return nil
}

func (a *API) readRun(w http.ResponseWriter, r *http.Request, c *Call) error {
	act, err := a.actor(r, c)
	if err != nil {
		return err
	}
	wait, err := runWait(r)
	if err != nil {
		return err
	}
	doc, err := a.conversations.ReadRunWaiting(r.Context(), act, r.PathValue("run"), wait)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, map[string]any{"run": doc})
	return nil
}

// runWait reads the run read's wait parameter (docs/api.md#waiting-for-a-run): whole
// seconds from 0 to conversations.MaxRunWait; absent is 0, an answer at once.
func runWait(r *http.Request) (time.Duration, error) {
	s, ok := r.URL.Query()["wait"]
	if !ok {
		return 0, nil
	}
	maxS := int(conversations.MaxRunWait / time.Second)
	n, err := strconv.Atoi(s[0])
	if err != nil || len(s) != 1 || n < 0 || n > maxS || strconv.Itoa(n) != s[0] {
		return 0, refusal.Newf(refusal.BadRequest, refusal.CodeParameterInvalid, "wait must be an integer from 0 to %d (seconds).", maxS).With("path", "wait")
	}
	return time.Duration(n) * time.Second, nil
}

func (a *API) startRun(w http.ResponseWriter, r *http.Request, c *Call) error {
	act, err := a.actor(r, c)
	if err != nil {
		return err
	}
	if _, err := decodeBody(c, wordParameter, &noFields{}); err != nil {
		return err
	}
	doc, err := a.conversations.StartRun(r.Context(), act, r.PathValue("run"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, map[string]any{"run": doc})
	return nil
}

func (a *API) stopRun(w http.ResponseWriter, r *http.Request, c *Call) error {
	act, err := a.actor(r, c)
	if err != nil {
		return err
	}
	var body struct {
		Force json.RawMessage `json:"force"`
	}
	if _, err := decodeBody(c, wordParameter, &body); err != nil {
		return err
	}
	force := true
	if body.Force != nil && !bytes.Equal(body.Force, []byte("null")) {
		if json.Unmarshal(body.Force, &force) != nil {
			return refusal.New(refusal.BadRequest, refusal.CodeParameterInvalid, "force must be true or false.").With("path", "force")
		}
	}
	doc, err := a.conversations.StopRun(r.Context(), act, r.PathValue("run"), force)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, map[string]any{"run": doc})
	return nil
}

func (a *API) appendSteps(w http.ResponseWriter, r *http.Request, c *Call) error {
	act, err := a.actor(r, c)
	if err != nil {
		return err
	}
	key, err := idempotencyKey(r)
	if err != nil {
		return err
	}
	req := &conversations.AppendRequest{Actor: act, RunID: r.PathValue("run"), Replay: replayOf(c, key)}
	req.Steps, req.ExpectedRevision, req.Invalid = decodeAppend(c)
	res, err := a.conversations.Append(r.Context(), req)
	if err != nil {
		return err
	}
	status := http.StatusCreated
	if res.Replayed {
		status = http.StatusOK
	}
	writeJSON(w, status, map[string]any{"receipt": res.Receipt, "replayed": res.Replayed})
	return nil
}

func (a *API) readTask(w http.ResponseWriter, r *http.Request, c *Call) error {
	act, err := a.actor(r, c)
	if err != nil {
		return err
	}
	doc, err := a.conversations.ReadTask(r.Context(), act, r.PathValue("run"), r.PathValue("task_key"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, map[string]any{"task": doc})
	return nil
}

// readRequest serves the sealed bytes exactly as sealed, with a trailing line feed only.
func (a *API) readRequest(w http.ResponseWriter, r *http.Request, c *Call) error {
	act, err := a.actor(r, c)
	if err != nil {
		return err
	}
	b, err := a.conversations.ReadRequest(r.Context(), act, r.PathValue("run"), r.PathValue("task_key"))
	if err != nil {
		return err
	}
	writeJSONBytes(w, http.StatusOK, b)
	return nil
}

func (a *API) resolve(w http.ResponseWriter, r *http.Request, c *Call) error {
	act, err := a.actor(r, c)
	if err != nil {
		return err
	}
	req := &conversations.ResolveRequest{Actor: act, RunID: r.PathValue("run"), TaskKey: r.PathValue("task_key")}
	// The resolution looks its row up before it reads the body: its refusal rides in Invalid.
	if members, err := bodyMembers(c, wordParameter, &envelope.Keys{}); err != nil {
		req.Invalid = err
	} else {
		req.Result = envelope.Decode(members)
	}
	res, err := a.conversations.Resolve(r.Context(), req)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, map[string]any{"task": res.Task, "applied": res.Applied})
	return nil
}

func (a *API) approve(w http.ResponseWriter, r *http.Request, c *Call) error {
	act, err := a.actor(r, c)
	if err != nil {
		return err
	}
	if _, err := decodeBody(c, wordParameter, &noFields{}); err != nil {
		return err
	}
	doc, err := a.conversations.Decide(r.Context(), act, r.PathValue("run"), r.PathValue("task_key"), false, "")
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, map[string]any{"task": doc})
	return nil
}

func (a *API) deny(w http.ResponseWriter, r *http.Request, c *Call) error {
	act, err := a.actor(r, c)
	if err != nil {
		return err
	}
	var body struct {
		Reason json.RawMessage `json:"reason"`
	}
	if _, err := decodeBody(c, wordParameter, &body); err != nil {
		return err
	}
	reason := ""
	if body.Reason != nil && !bytes.Equal(body.Reason, []byte("null")) {
		if json.Unmarshal(body.Reason, &reason) != nil {
			return refusal.New(refusal.BadRequest, refusal.CodeParameterInvalid, "reason must be a string.").With("path", "reason")
		}
	}
	doc, err := a.conversations.Decide(r.Context(), act, r.PathValue("run"), r.PathValue("task_key"), true, reason)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, map[string]any{"task": doc})
	return nil
}

func (a *API) cancelBranch(w http.ResponseWriter, r *http.Request, c *Call) error {
	act, err := a.actor(r, c)
	if err != nil {
		return err
	}
	if _, err := decodeBody(c, wordParameter, &noFields{}); err != nil {
		return err
	}
	doc, err := a.conversations.CancelBranch(r.Context(), act, r.PathValue("run"), r.PathValue("task_key"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, map[string]any{"task": doc})
	return nil
}

func (a *API) inbox(w http.ResponseWriter, r *http.Request, c *Call) error {
	limit, err := pageLimit(r, conversations.DefaultInboxPage, conversations.MaxInboxPage)
	if err != nil {
		return err
	}
	page, err := a.conversations.Inbox(r.Context(), c.Member.Kind, c.Member.PublicID, r.URL.Query().Get("after"), limit)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, map[string]any{"tasks": page.Tasks, "pagination": map[string]any{"next_after": page.NextAfter}})
	return nil
}
