package conversations

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/nexuskernel/nexus/core/refusal"
	"github.com/nexuskernel/nexus/core/runs"
	"github.com/nexuskernel/nexus/core/steps"
	"github.com/nexuskernel/nexus/core/store"
	"github.com/nexuskernel/nexus/sdk/jsonwire"
)

// Doors serves the member doors above the engine: the conversation doors
// (docs/api.md#conversations: create, read, list, history, archive and post message) and the run
// doors (docs/api.md#runs, rundoors.go, create.go, append.go, resolve.go). Its writes run in the
// engine's transaction (runs.Tx), so that a posted turn or a created run goes through the
// engine's lifecycle and wake-ups.
type Doors struct {
	e     *runs.Engine
	watch *RunWatch
}

// NewDoors serves the conversation doors over the engine; w wakes waiting run reads, and nil
// answers every run read at once.
func NewDoors(e *runs.Engine, w *RunWatch) *Doors { return &Doors{e: e, watch: w} }

// Limits of the conversation doors (docs/api.md#conversations).
const (
	// MaxTitleChars bounds a conversation title: a line in a list, not a document.
	MaxTitleChars = 256
	// MaxQueuedTurns bounds a conversation's input queue (the 17th is refused).
	MaxQueuedTurns = 16
	// IdempotencyKeyMaxBytes bounds the Idempotency-Key a door replays by (docs/api.md#conventions):
	// a UUID fits.
	IdempotencyKeyMaxBytes = 36
)

// ConversationDoc is a conversation (docs/api.md#conversations).
type ConversationDoc struct {
	PublicID                      string      `json:"public_id"`
	WorkspacePublicID             string      `json:"workspace_public_id"`
	Title                         *string     `json:"title"`
	AnsweringAgentPublicID        string      `json:"answering_agent_public_id"`
	CreatedBy                     runs.Member `json:"created_by"`
	DefaultRunnerExecutorPublicID *string     `json:"default_runner_executor_public_id"`
	ParentConversationPublicID    *string     `json:"parent_conversation_public_id"`
	Label                         *string     `json:"label"`
	Status                        string      `json:"status"`
	LiveTurnPublicID              *string     `json:"live_turn_public_id"`
	QueuedTurns                   int         `json:"queued_turns"`
	CreatedAt                     string      `json:"created_at"`
	UpdatedAt                     string      `json:"updated_at"`
	ArchivedAt                    *string     `json:"archived_at"`
}

// TurnDoc is a turn (docs/api.md#conversations).
type TurnDoc struct {
	PublicID                   string          `json:"public_id"`
	ConversationPublicID       string          `json:"conversation_public_id"`
	Position                   int64           `json:"position"`
	Author                     runs.Member     `json:"author"`
	SenderConversationPublicID *string         `json:"sender_conversation_public_id"`
	Input                      TurnInput       `json:"input"`
	ToolNames                  []string        `json:"tool_names"`
	Model                      string          `json:"model"`
	Status                     string          `json:"status"`
	RunPublicID                string          `json:"run_public_id"`
	Answer                     *TurnAnswer     `json:"answer"`
	Failure                    *runs.TaskError `json:"failure"`
	CreatedAt                  string          `json:"created_at"`
	StartedAt                  *string         `json:"started_at"`
	CompletedAt                *string         `json:"completed_at"`
}

// TurnInput is a turn's message.
type TurnInput struct {
	Text        string            `json:"text"`
	Attachments []runs.Attachment `json:"attachments"`
}

// TurnAnswer is a completed turn's deliverable output.
type TurnAnswer struct {
	TaskKey string `json:"task_key"`
	Text    string `json:"text"`
}

func badField(path, format string, args ...any) error {
	return refusal.Newf(refusal.Unprocessable, refusal.CodeValidationFailed, format, args...).With("path", path)
}

// CreateConversation is the create door (docs/api.md#conversations). The HTTP door decodes a
// body's "conversation" into in; an in-process caller builds it with Go values.
func (d *Doors) CreateConversation(ctx context.Context, a *runs.Actor, in *NewConversation) (*ConversationDoc, error) {
	if err := in.check(); err != nil {
		return nil, err
	}
	var doc *ConversationDoc
	err := d.e.Write(ctx, func(x *runs.Tx) error {
		tx := x.Tx
		agentRef, err := in.agentRef(a)
		if err != nil {
			return err
		}
		agent, err := store.AgentInWorkspace(ctx, tx, a.WorkspaceID, agentRef)
		if !store.IsPublicID(agentRef) || errors.Is(err, store.ErrNotFound) || (err == nil && agent.RemovedAt.Valid) {
			return badField("conversation.answering_agent_public_id", "No agent %s in this workspace.", agentRef)
		}
		if err != nil {
			return err
		}
		c := &store.Conversation{PublicID: store.NewPublicID(), WorkspaceID: a.WorkspaceID, WorkspacePublicID: a.WorkspacePublicID,
			AnsweringAgentID: agent.ID, AnsweringAgentPublicID: agent.PublicID, CreatedByKind: a.Kind, CreatedByPublicID: a.PublicID,
			Status: runs.ConversationActive, Title: in.Title}
		if !in.titleOK(func(t string) bool {
			return utf8.RuneCountInString(t) <= MaxTitleChars && strings.IndexFunc(t, jsonwire.IsBidiControl) < 0
		}) {
			return badField("conversation.title", "title must be a string of at most %d characters without bidirectional controls.", MaxTitleChars)
		}
		id, ok := in.runner()
		if ok && id != "" {
			ok = x.EligibleRunner(ctx, a.WorkspaceID, id)
		}
		if !ok {
			return steps.RunnerNotEligible("conversation.default_runner_executor_public_id")
		}
		if id != "" {
			c.DefaultRunnerExecutorPublicID = &id
		}
		now := d.e.Now().UnixMilli()
		c.CreatedAt, c.UpdatedAt = now, now
		if err := store.InsertConversation(ctx, tx, c); err != nil {
			return err
		}
		doc, err = conversationDoc(ctx, tx, c)
		return err
	})
	return doc, err
}

func conversationDoc(ctx context.Context, q store.Querier, c *store.Conversation) (*ConversationDoc, error) {
	d := &ConversationDoc{PublicID: c.PublicID, WorkspacePublicID: c.WorkspacePublicID, Title: c.Title,
		AnsweringAgentPublicID: c.AnsweringAgentPublicID, CreatedBy: runs.Member{Kind: c.CreatedByKind, PublicID: c.CreatedByPublicID},
		DefaultRunnerExecutorPublicID: c.DefaultRunnerExecutorPublicID, Label: c.Label, Status: c.Status,
		CreatedAt: store.FormatMillis(c.CreatedAt), UpdatedAt: store.FormatMillis(c.UpdatedAt), ArchivedAt: optTime(c.ArchivedAt)}
	if c.ParentConversationID != nil {
		if p, err := store.ConversationByID(ctx, q, *c.ParentConversationID); err == nil {
			d.ParentConversationPublicID = &p.PublicID
		}
	}
	turns, err := store.OpenTurns(ctx, q, c.ID)
	if err != nil {
		return nil, err
	}
	for i := range turns {
		switch turns[i].Status {
		case runs.TurnRunning:
			d.LiveTurnPublicID = &turns[i].PublicID
		case runs.TurnQueued:
			d.QueuedTurns++
		}
	}
	return d, nil
}

// loadConversation finds a conversation of the actor's workspace; anything else is not_found.
func loadConversation(ctx context.Context, q store.Querier, a *runs.Actor, publicID string) (*store.Conversation, error) {
	nf := refusal.Newf(refusal.NotFound, refusal.CodeNotFound, "No conversation %s in this workspace.", publicID)
	if !store.IsPublicID(publicID) {
		return nil, nf
	}
	c, err := store.ConversationByPublicID(ctx, q, publicID)
	if errors.Is(err, store.ErrNotFound) || (err == nil && c.WorkspaceID != a.WorkspaceID) {
		return nil, nf
	}
	return c, err
}

// ReadConversation is the conversation read.
func (d *Doors) ReadConversation(ctx context.Context, a *runs.Actor, id string) (*ConversationDoc, error) {
	q := d.e.Reader()
	c, err := loadConversation(ctx, q, a, id)
	if err != nil {
		return nil, err
	}
	return conversationDoc(ctx, q, c)
}

// ConversationPage is one page of the conversation listing.
type ConversationPage struct {
	Conversations []*ConversationDoc
	NextAfter     *string
}

// ListConversations lists the workspace's conversations newest first.
func (d *Doors) ListConversations(ctx context.Context, a *runs.Actor, status, after string, limit int) (*ConversationPage, error) {
	if status != "" && status != runs.ConversationActive && status != runs.ConversationArchived {
		return nil, refusal.New(refusal.BadRequest, refusal.CodeParameterInvalid, "status must be active or archived.").With("path", "status")
	}
	var before int64
	if after != "" {
		b, err := base64.RawURLEncoding.DecodeString(after)
		if err != nil || !strings.HasPrefix(string(b), "conv:") {
			return nil, badCursor("after")
		}
		if before, err = strconv.ParseInt(strings.TrimPrefix(string(b), "conv:"), 10, 64); err != nil || before <= 0 {
			return nil, badCursor("after")
		}
	}
	q := d.e.Reader()
	cs, err := store.ConversationsOfWorkspace(ctx, q, a.WorkspaceID, status, before, limit+1)
	if err != nil {
		return nil, err
	}
	page := &ConversationPage{Conversations: []*ConversationDoc{}}
	for i := range cs {
		if i == limit {
			c := base64.RawURLEncoding.EncodeToString([]byte("conv:" + strconv.FormatInt(cs[i-1].ID, 10)))
			page.NextAfter = &c
			break
		}
		d, err := conversationDoc(ctx, q, &cs[i])
		if err != nil {
			return nil, err
		}
		page.Conversations = append(page.Conversations, d)
	}
	return page, nil
}

// HistoryPage is one page of a conversation's history.
type HistoryPage struct {
	Turns              []*TurnDoc
	HasOlder           bool
	NextBeforePosition *int64
}

// History lists turns in ascending position: the newest limit below beforePosition (0: none).
func (d *Doors) History(ctx context.Context, a *runs.Actor, id string, beforePosition int64, limit int) (*HistoryPage, error) {
	q := d.e.Reader()
	c, err := loadConversation(ctx, q, a, id)
	if err != nil {
		return nil, err
	}
	turns, err := store.TurnsOfConversation(ctx, q, c.ID, beforePosition, limit+1)
	if err != nil {
		return nil, err
	}
	page := &HistoryPage{Turns: []*TurnDoc{}}
	if len(turns) > limit {
		turns = turns[1:]
		page.HasOlder = true
		p := turns[0].Position
		page.NextBeforePosition = &p
	}
	for i := range turns {
		page.Turns = append(page.Turns, turnDoc(c, &turns[i]))
	}
	return page, nil
}

func turnDoc(c *store.Conversation, t *store.Turn) *TurnDoc {
	d := &TurnDoc{PublicID: t.PublicID, ConversationPublicID: c.PublicID, Position: t.Position,
		Author: runs.Member{Kind: t.AuthorKind, PublicID: deref(t.AuthorPublicID)}, SenderConversationPublicID: t.SenderConversationPublicID,
		Input: TurnInput{Text: t.InputText, Attachments: t.InputAttachments}, ToolNames: t.ToolNames, Model: t.Model, Status: t.Status,
		RunPublicID: t.RunPublicID, CreatedAt: store.FormatMillis(t.CreatedAt), StartedAt: optTime(t.StartedAt), CompletedAt: optTime(t.CompletedAt)}
	if d.Input.Attachments == nil {
		d.Input.Attachments = []runs.Attachment{}
	}
	if t.AnswerTaskKey != nil {
		d.Answer = &TurnAnswer{TaskKey: *t.AnswerTaskKey, Text: deref(t.AnswerText)}
	}
	if t.FailureKey != nil {
		d.Failure = &runs.TaskError{Key: *t.FailureKey, Detail: deref(t.FailureDetail)}
	}
	return d
}

// Archive archives a conversation (docs/api.md#conversations): 409 conversation_busy with a running
// or queued turn; an archived one answers unchanged.
func (d *Doors) Archive(ctx context.Context, a *runs.Actor, id string) (*ConversationDoc, error) {
	var doc *ConversationDoc
	err := d.e.Write(ctx, func(x *runs.Tx) error {
		tx := x.Tx
		c, err := loadConversation(ctx, tx, a, id)
		if err != nil {
			return err
		}
		if c, err = store.LockConversation(ctx, tx, c.ID); err != nil {
			return err
		}
		if err := conversationStanding(ctx, tx, a, c); err != nil {
			return err
		}
		if c.Status == runs.ConversationActive {
			open, err := store.OpenTurns(ctx, tx, c.ID)
			if err != nil {
				return err
			}
			if len(open) > 0 {
				return conflict(CodeConversationBusy, "The conversation has a running or queued turn.")
			}
			now := d.e.Now().UnixMilli()
			if err := store.SetConversation(ctx, tx, c.ID, runs.ConversationArchived, now, &now); err != nil {
				return err
			}
			c.Status, c.UpdatedAt, c.ArchivedAt = runs.ConversationArchived, now, &now
		}
		doc, err = conversationDoc(ctx, tx, c)
		return err
	})
	return doc, err
}

// conversationStanding is write standing on a conversation: an owner, its creator, its
// answering agent, or that agent's steward.
func conversationStanding(ctx context.Context, q store.Querier, a *runs.Actor, c *store.Conversation) error {
	if a.Role == store.RoleOwner || (a.Kind == c.CreatedByKind && a.PublicID == c.CreatedByPublicID) ||
		(a.Kind == store.KindAgent && a.PublicID == c.AnsweringAgentPublicID) {
		return nil
	}
	if a.Kind == store.KindUser {
		steward, err := store.AgentStewardPublicID(ctx, q, c.AnsweringAgentPublicID)
		if err == nil && steward == a.PublicID {
			return nil
		}
	}
	return refusal.New(refusal.Forbidden, refusal.CodeNotAuthorized, "Write standing on this conversation is required.")
}

// Posted answers the post-message door.
type Posted struct {
	Turn     *TurnDoc
	Run      *RunDoc
	Replayed bool
}

// PostMessageRequest is the post-message door's request: the caller, the conversation, the
// message (judged here) and its idempotency. The HTTP door decodes a body's "message" into it; an
// in-process caller builds it with Go values.
type PostMessageRequest struct {
	Actor          *runs.Actor
	ConversationID string
	Message        Message
	Replay         Replay
}

// PostMessage is the post-message door (docs/api.md#conversations): the turn, its run and the run's
// first round are created in one transaction under the conversation's lock.
func (d *Doors) PostMessage(ctx context.Context, req *PostMessageRequest) (*Posted, error) {
	a, convID, m, key, canon := req.Actor, req.ConversationID, &req.Message, req.Replay.Key, req.Replay.Fingerprint
	q := d.e.Reader()
	c, err := loadConversation(ctx, q, a, convID)
	if err != nil {
		return nil, err
	}
	scope := fmt.Sprintf("message:%d:%s:%s", c.ID, a.Kind, a.PublicID)
	if key != "" {
		if p, found, err := d.replayMessage(ctx, a, c, scope, key, canon); found || err != nil {
			return p, err
		}
	}
	if err := m.check(); err != nil {
		return nil, err
	}
	text, attachments, toolNames, modelRef := m.Text, m.Attachments, m.ToolNames, m.Model
	var posted *Posted
	err = d.e.Write(ctx, func(x *runs.Tx) error {
		tx := x.Tx
		c, err := store.LockConversation(ctx, tx, c.ID)
		if err != nil {
			return err
		}
		atts, err := x.InputAttachments(ctx, a, attachments, "message.attachments")
		if err != nil {
			return err
		}
		prof, err := x.AcceptProfile(ctx, c, toolNames)
		if err != nil {
			return err
		}
		ref := modelRef
		if ref == "" {
			ref = prof.DefaultModel
		}
		if ref == "" {
			ref = x.DefaultModel()
		}
		if err := x.CheckModel(ref, prof.Frozen.HasTools); err != nil {
			r, _ := refusal.As(err)
			return r.With("path", "message.model")
		}
		if c.Status == runs.ConversationArchived {
			return conflict(CodeConversationArchived, "The conversation is archived.")
		}
		open, err := store.OpenTurns(ctx, tx, c.ID)
		if err != nil {
			return err
		}
		queued := 0
		for i := range open {
			if open[i].Status == runs.TurnQueued {
				queued++
			}
		}
		if queued >= MaxQueuedTurns {
			return conflict(CodeInputQueueFull, "The conversation already has %d queued turns.", MaxQueuedTurns)
		}
		now := x.NowMS()
		t, err := postTurn(ctx, x, c, &TurnPost{PublicID: store.NewPublicID(), AuthorKind: a.Kind, AuthorPublicID: a.PublicID,
			Text: text, Model: ref, AgentID: c.AnsweringAgentID, AgentPublicID: c.AnsweringAgentPublicID, Profile: prof,
			Attachments: atts, ToolNames: toolNames}, now)
		if err != nil {
			return err
		}
		r, err := store.RunByID(ctx, tx, t.RunID)
		if err != nil {
			return err
		}
		doc, err := runDoc(ctx, tx, r, false)
		if err != nil {
			return err
		}
		posted = &Posted{Turn: turnDoc(c, t), Run: doc}
		if key != "" {
			res, _ := json.Marshal(map[string]string{"turn": t.PublicID, "run": r.PublicID})
			return store.InsertIdempotency(ctx, tx, scope, key, string(canon), string(res), now, now-runs.IdempotencyTTL.Milliseconds())
		}
		return nil
	})
	if err != nil && key != "" && store.IsUniqueViolation(err) {
		if p, found, err := d.replayMessage(ctx, a, c, scope, key, canon); found || err != nil {
			return p, err
		}
	}
	return posted, err
}

func (d *Doors) replayMessage(ctx context.Context, a *runs.Actor, c *store.Conversation, scope, key string, canon []byte) (*Posted, bool, error) {
	now := d.e.Now().UnixMilli()
	rec, err := store.LookupIdempotency(ctx, d.e.Reader(), scope, key, now-runs.IdempotencyTTL.Milliseconds())
	if errors.Is(err, store.ErrNotFound) {
		return nil, false, nil
	}
	if err != nil {
		return nil, true, err
	}
	if same, _ := jsonwire.Equal([]byte(rec.Body), canon); !same {
		return nil, true, conflict(CodeIdempotencyEnvelopeMismatch, "The Idempotency-Key %s was used with a different body.", key)
	}
	var res map[string]string
	if err := json.Unmarshal([]byte(rec.Result), &res); err != nil {
		return nil, true, err
	}
	q := d.e.Reader()
	r, err := store.RunByPublicID(ctx, q, a.WorkspaceID, res["run"])
	if err != nil {
		return nil, true, err
	}
	t, err := store.TurnOfRun(ctx, q, r.ID)
	if err != nil {
		return nil, true, err
	}
	doc, err := runDoc(ctx, q, r, false)
	if err != nil {
		return nil, true, err
	}
	return &Posted{Turn: turnDoc(c, t), Run: doc, Replayed: true}, true, nil
}

func conflict(code, format string, args ...any) *refusal.Error {
	return refusal.New(refusal.Conflict, code, fmt.Sprintf(format, args...))
}

func badCursor(path string) error {
	return refusal.Newf(refusal.BadRequest, refusal.CodeParameterInvalid, "%s is not a cursor this listing issued.", path).With("path", path)
}

func optTime(ms *int64) *string {
	if ms == nil {
		return nil
	}
	s := store.FormatMillis(*ms)
	return &s
}
