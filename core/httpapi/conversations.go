package httpapi

import (
	"net/http"
	"strconv"

	"github.com/nexuskernel/nexus/core/conversations"
	"github.com/nexuskernel/nexus/core/refusal"
)

// The conversation routes (docs/api.md#conversations): thin, core/conversations decides.
func (a *API) conversationRoutes() {
	if a.deps.Runs == nil {
		return
	}
	a.conversations = conversations.NewDoors(a.deps.Runs, a.deps.RunWatch)
	const base = "/agent_api/v1/workspaces/{ws}/conversations"
	a.handle("POST "+base, routeOpts{}, a.createConversation)
	a.handle("GET "+base, routeOpts{}, a.listConversations)
	a.handle("GET "+base+"/{conversation}", routeOpts{}, a.readConversation)
	a.handle("GET "+base+"/{conversation}/history", routeOpts{}, a.history)
	a.handle("POST "+base+"/{conversation}/messages", routeOpts{}, a.postMessage)
	a.handle("POST "+base+"/{conversation}/archive", routeOpts{}, a.archive)
}

func (a *API) createConversation(w http.ResponseWriter, r *http.Request, c *Call) error {
	act, err := a.actor(r, c)
	if err != nil {
		return err
	}
	var body struct {
		Conversation conversations.NewConversation `json:"conversation"`
	}
	if err := decodeRequired(c, wordValidation, "conversation", nil, &body); err != nil {
		return err
	}
	doc, err := a.conversations.CreateConversation(r.Context(), act, &body.Conversation)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusCreated, map[string]any{"conversation": doc})
	return nil
}

func (a *API) listConversations(w http.ResponseWriter, r *http.Request, c *Call) error {
	act, err := a.actor(r, c)
	if err != nil {
		return err
	}
	limit, err := pageLimit(r, conversations.DefaultPage, conversations.MaxPage)
	if err != nil {
		return err
	}
	q := r.URL.Query()
	page, err := a.conversations.ListConversations(r.Context(), act, q.Get("status"), q.Get("after"), limit)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, map[string]any{"conversations": page.Conversations, "pagination": map[string]any{"next_after": page.NextAfter}})
	return nil
}

func (a *API) readConversation(w http.ResponseWriter, r *http.Request, c *Call) error {
	act, err := a.actor(r, c)
	if err != nil {
		return err
	}
	doc, err := a.conversations.ReadConversation(r.Context(), act, r.PathValue("conversation"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, map[string]any{"conversation": doc})
	return nil
}

func (a *API) history(w http.ResponseWriter, r *http.Request, c *Call) error {
	act, err := a.actor(r, c)
	if err != nil {
		return err
	}
	limit, err := pageLimit(r, conversations.DefaultPage, conversations.MaxPage)
	if err != nil {
		return err
	}
	var before int64
	if s := r.URL.Query().Get("before_position"); s != "" {
		before, err = strconv.ParseInt(s, 10, 64)
		if err != nil || before < 1 {
			return refusal.New(refusal.BadRequest, refusal.CodeParameterInvalid, "before_position must be a positive integer.").With("path", "before_position")
		}
	}
	page, err := a.conversations.History(r.Context(), act, r.PathValue("conversation"), before, limit)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, map[string]any{"turns": page.Turns,
		"pagination": map[string]any{"has_older": page.HasOlder, "next_before_position": page.NextBeforePosition}})
	return nil
}

func (a *API) postMessage(w http.ResponseWriter, r *http.Request, c *Call) error {
	act, err := a.actor(r, c)
	if err != nil {
		return err
	}
	var body struct {
		Message conversations.Message `json:"message"`
	}
	if err := decodeRequired(c, wordValidation, "message", nil, &body); err != nil {
		return err
	}
	key, err := idempotencyKey(r)
	if err != nil {
		return err
	}
	posted, err := a.conversations.PostMessage(r.Context(), &conversations.PostMessageRequest{Actor: act, ConversationID: r.PathValue("conversation"),
		Message: body.Message, Replay: replayOf(c, key)})
	if err != nil {
		return err
	}
	status := http.StatusCreated
	if posted.Replayed {
		status = http.StatusOK
	}
	writeJSON(w, status, map[string]any{"turn": posted.Turn, "run": posted.Run, "replayed": posted.Replayed})
	return nil
}

func (a *API) archive(w http.ResponseWriter, r *http.Request, c *Call) error {
	act, err := a.actor(r, c)
	if err != nil {
		return err
	}
	if _, err := decodeBody(c, wordParameter, &noFields{}); err != nil {
		return err
	}
	doc, err := a.conversations.Archive(r.Context(), act, r.PathValue("conversation"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, map[string]any{"conversation": doc})
	return nil
}
