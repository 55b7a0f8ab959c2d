package runs

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
	"github.com/nexuskernel/nexus/core/store"
	"github.com/nexuskernel/nexus/core/uploads"
	"github.com/nexuskernel/nexus/sdk/jsonwire"
)

func orEmpty(a []Attachment) []Attachment {
	if a == nil {
		return []Attachment{}
	}
	return a
}

// Profiles freezes an answering agent's profile as it stands now onto a conversation turn
// (docs/api.md#conversations acceptance step 1): its composed and rendered declaration (narrowed by
// the turn's tool_names), skill catalog and environment, instructions, default model, approval mode
// and rules. Agent profiles own it; nil means every agent has the empty profile (no tools, no
// instructions, bypass).
type Profiles interface {
	AcceptProfile(ctx context.Context, q store.Querier, agentID int64, in *ProfileAcceptance) (*AcceptedProfile, error)
}

// ProfileAcceptance is what a turn adds to its agent's profile.
type ProfileAcceptance struct {
	// Selection is the conversation's default Runner, "" for none.
	Selection string
	// ToolNames narrows by callable name; nil keeps everything.
	ToolNames []string
	// Path prefixes refusal paths ("message.").
	Path string
	// Skills are the facts a kernel skill callable's catalog is read against; nil reads none.
	Skills *SkillFacts
}

// AcceptedProfile is a frozen profile.
type AcceptedProfile struct {
	Frozen        FrozenDeclaration
	Instructions  *string
	DefaultModel  string
	ApprovalMode  string
	ApprovalRules []byte
}

// Limits of the conversation doors (docs/api.md#conversations).
const (
	// MaxTitleChars bounds a conversation title: a line in a list, not a document.
	MaxTitleChars = 256
)

// ConversationDoc is a conversation (docs/api.md#conversations).
type ConversationDoc struct {
	PublicID                      string  `json:"public_id"`
	WorkspacePublicID             string  `json:"workspace_public_id"`
	Title                         *string `json:"title"`
	AnsweringAgentPublicID        string  `json:"answering_agent_public_id"`
	CreatedBy                     Member  `json:"created_by"`
	DefaultRunnerExecutorPublicID *string `json:"default_runner_executor_public_id"`
	ParentConversationPublicID    *string `json:"parent_conversation_public_id"`
	Label                         *string `json:"label"`
	Status                        string  `json:"status"`
	LiveTurnPublicID              *string `json:"live_turn_public_id"`
	QueuedTurns                   int     `json:"queued_turns"`
	CreatedAt                     string  `json:"created_at"`
	UpdatedAt                     string  `json:"updated_at"`
	ArchivedAt                    *string `json:"archived_at"`
}

// TurnDoc is a turn (docs/api.md#conversations).
type TurnDoc struct {
	PublicID                   string      `json:"public_id"`
	ConversationPublicID       string      `json:"conversation_public_id"`
	Position                   int64       `json:"position"`
	Author                     Member      `json:"author"`
	SenderConversationPublicID *string     `json:"sender_conversation_public_id"`
	Input                      TurnInput   `json:"input"`
	ToolNames                  []string    `json:"tool_names"`
	Model                      string      `json:"model"`
	Status                     string      `json:"status"`
	RunPublicID                string      `json:"run_public_id"`
	Answer                     *TurnAnswer `json:"answer"`
	Failure                    *TaskError  `json:"failure"`
	CreatedAt                  string      `json:"created_at"`
	StartedAt                  *string     `json:"started_at"`
	CompletedAt                *string     `json:"completed_at"`
}

// TurnInput is a turn's message.
type TurnInput struct {
	Text        string            `json:"text"`
	Attachments []json.RawMessage `json:"attachments"`
}

// TurnAnswer is a completed turn's deliverable output.
type TurnAnswer struct {
	TaskKey string `json:"task_key"`
	Text    string `json:"text"`
}

func badField(path, format string, args ...any) error {
	return refusal.Newf(refusal.Unprocessable, refusal.CodeValidationFailed, format, args...).With("path", path)
}

// CreateConversation is the create door (docs/api.md#conversations).
func (e *Engine) CreateConversation(ctx context.Context, a *Actor, raw json.RawMessage) (*ConversationDoc, error) {
	var obj map[string]json.RawMessage
	if json.Unmarshal(raw, &obj) != nil || obj == nil {
		return nil, badField("conversation", "conversation must be an object.")
	}
	for _, k := range sortedKeys(obj) {
		switch k {
		case "answering_agent_public_id", "title", "default_runner_executor_public_id":
		default:
			return nil, badField("conversation."+k, "conversation.%s is not a conversation field.", k)
		}
	}
	var doc *ConversationDoc
	err := e.write(ctx, func(tx *store.Tx, fx *effects) error {
		agentRef := ""
		if v, ok := obj["answering_agent_public_id"]; ok && !isNull(v) {
			s, ok := str(v)
			if !ok {
				return badField("conversation.answering_agent_public_id", "answering_agent_public_id must be an agent's public id.")
			}
			agentRef = s
		} else if a.Kind == store.KindAgent {
			agentRef = a.PublicID
		} else {
			return badField("conversation.answering_agent_public_id", "A user names the answering agent.")
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
			Status: ConversationActive}
		if v, ok := obj["title"]; ok && !isNull(v) {
			t, ok := str(v)
			if !ok || utf8.RuneCountInString(t) > MaxTitleChars {
				return badField("conversation.title", "title must be a string of at most %d characters.", MaxTitleChars)
			}
			c.Title = &t
		}
		if v, ok := obj["default_runner_executor_public_id"]; ok && !isNull(v) {
			id, ok := str(v)
			if !ok || !store.IsPublicID(id) || !e.eligibleRunner(ctx, tx, a.WorkspaceID, id) {
				return refusal.New(refusal.Unprocessable, CodeRunnerNotEligible, "default_runner_executor_public_id is not an active Runner of this workspace.").
					With("path", "conversation.default_runner_executor_public_id")
			}
			c.DefaultRunnerExecutorPublicID = &id
		}
		now := e.nowMS()
		c.CreatedAt, c.UpdatedAt = now, now
		if err := store.InsertConversation(ctx, tx, c); err != nil {
			return err
		}
		doc, err = e.conversationDoc(ctx, tx, c)
		return err
	})
	return doc, err
}

func (e *Engine) conversationDoc(ctx context.Context, q store.Querier, c *store.Conversation) (*ConversationDoc, error) {
	d := &ConversationDoc{PublicID: c.PublicID, WorkspacePublicID: c.WorkspacePublicID, Title: c.Title,
		AnsweringAgentPublicID: c.AnsweringAgentPublicID, CreatedBy: Member{Kind: c.CreatedByKind, PublicID: c.CreatedByPublicID},
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
		case TurnRunning:
			d.LiveTurnPublicID = &turns[i].PublicID
		case TurnQueued:
			d.QueuedTurns++
		}
	}
	return d, nil
}

// loadConversation finds a conversation of the actor's workspace; anything else is not_found.
func (e *Engine) loadConversation(ctx context.Context, q store.Querier, a *Actor, publicID string) (*store.Conversation, error) {
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
func (e *Engine) ReadConversation(ctx context.Context, a *Actor, id string) (*ConversationDoc, error) {
	q := e.store.Reader()
	c, err := e.loadConversation(ctx, q, a, id)
	if err != nil {
		return nil, err
	}
	return e.conversationDoc(ctx, q, c)
}

// ConversationPage is one page of the conversation listing.
type ConversationPage struct {
	Conversations []*ConversationDoc
	NextAfter     *string
}

// ListConversations lists the workspace's conversations newest first.
func (e *Engine) ListConversations(ctx context.Context, a *Actor, status, after string, limit int) (*ConversationPage, error) {
	if status != "" && status != ConversationActive && status != ConversationArchived {
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
	q := e.store.Reader()
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
		d, err := e.conversationDoc(ctx, q, &cs[i])
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
func (e *Engine) History(ctx context.Context, a *Actor, id string, beforePosition int64, limit int) (*HistoryPage, error) {
	q := e.store.Reader()
	c, err := e.loadConversation(ctx, q, a, id)
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
		Author: Member{Kind: t.AuthorKind, PublicID: deref(t.AuthorPublicID)}, SenderConversationPublicID: t.SenderConversationPublicID,
		Input: TurnInput{Text: t.InputText, Attachments: []json.RawMessage{}}, Model: t.Model, Status: t.Status, RunPublicID: t.RunPublicID,
		CreatedAt: store.FormatMillis(t.CreatedAt), StartedAt: optTime(t.StartedAt), CompletedAt: optTime(t.CompletedAt)}
	_ = json.Unmarshal([]byte(t.InputAttachments), &d.Input.Attachments)
	if d.Input.Attachments == nil {
		d.Input.Attachments = []json.RawMessage{}
	}
	if t.ToolNames != nil {
		_ = json.Unmarshal([]byte(*t.ToolNames), &d.ToolNames)
	}
	if t.AnswerTaskKey != nil {
		d.Answer = &TurnAnswer{TaskKey: *t.AnswerTaskKey, Text: deref(t.AnswerText)}
	}
	if t.FailureKey != nil {
		d.Failure = &TaskError{Key: *t.FailureKey, Detail: deref(t.FailureDetail)}
	}
	return d
}

// Archive archives a conversation (docs/api.md#conversations): 409 conversation_busy with a running
// or queued turn; an archived one answers unchanged.
func (e *Engine) Archive(ctx context.Context, a *Actor, id string) (*ConversationDoc, error) {
	var doc *ConversationDoc
	err := e.write(ctx, func(tx *store.Tx, fx *effects) error {
		c, err := e.loadConversation(ctx, tx, a, id)
		if err != nil {
			return err
		}
		if c, err = store.LockConversation(ctx, tx, c.ID); err != nil {
			return err
		}
		if err := e.conversationStanding(ctx, tx, a, c); err != nil {
			return err
		}
		if c.Status == ConversationActive {
			open, err := store.OpenTurns(ctx, tx, c.ID)
			if err != nil {
				return err
			}
			if len(open) > 0 {
				return conflict(CodeConversationBusy, "The conversation has a running or queued turn.")
			}
			now := e.nowMS()
			if err := store.SetConversation(ctx, tx, c.ID, ConversationArchived, now, &now); err != nil {
				return err
			}
			c.Status, c.UpdatedAt, c.ArchivedAt = ConversationArchived, now, &now
		}
		doc, err = e.conversationDoc(ctx, tx, c)
		return err
	})
	return doc, err
}

// conversationStanding is write standing on a conversation: an owner, its creator, its
// answering agent, or that agent's steward.
func (e *Engine) conversationStanding(ctx context.Context, q store.Querier, a *Actor, c *store.Conversation) error {
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

var messageKeys = map[string]bool{"text": true, "attachments": true, "tool_names": true, "model": true}

// PostMessageRequest is the post-message door's request: the caller, the conversation, the body's
// "message" object (judged here) and its idempotency.
type PostMessageRequest struct {
	Actor          *Actor
	ConversationID string
	Message        json.RawMessage
	Replay         Replay
}

// PostMessage is the post-message door (docs/api.md#conversations): the turn, its run and the run's
// first round are created in one transaction under the conversation's lock.
func (e *Engine) PostMessage(ctx context.Context, req *PostMessageRequest) (*Posted, error) {
	a, convID, message, key, canon := req.Actor, req.ConversationID, req.Message, req.Replay.Key, req.Replay.Fingerprint
	q := e.store.Reader()
	c, err := e.loadConversation(ctx, q, a, convID)
	if err != nil {
		return nil, err
	}
	scope := fmt.Sprintf("message:%d:%s:%s", c.ID, a.Kind, a.PublicID)
	if key != "" {
		if p, found, err := e.replayMessage(ctx, a, c, scope, key, canon); found || err != nil {
			return p, err
		}
	}
	var obj map[string]json.RawMessage
	if json.Unmarshal(message, &obj) != nil || obj == nil {
		return nil, badField("message", "message must be an object.")
	}
	for _, k := range sortedKeys(obj) {
		if !messageKeys[k] {
			return nil, badField("message."+k, "message.%s is not a message field.", k)
		}
	}
	text, ok := str(obj["text"])
	if _, present := obj["text"]; present && !ok {
		return nil, badField("message.text", "text must be a string.")
	}
	var attachments []string
	if v, ok := obj["attachments"]; ok && !isNull(v) {
		if json.Unmarshal(v, &attachments) != nil {
			return nil, refusal.New(refusal.BadRequest, refusal.CodeParameterInvalid, "attachments must be an array of upload ids.").With("path", "message.attachments")
		}
		if len(attachments) > MaxAttachments {
			return nil, badField("message.attachments", "At most %d attachments.", MaxAttachments)
		}
		for i, id := range attachments {
			if !store.IsPublicID(id) {
				return nil, refusal.Newf(refusal.BadRequest, refusal.CodeParameterInvalid, "message.attachments[%d] is not an upload id.", i).With("path", fmt.Sprintf("message.attachments[%d]", i))
			}
		}
	}
	if text == "" && len(attachments) == 0 {
		return nil, badField("message.text", "text may be empty only with attachments.")
	}
	var toolNames []string
	if v, ok := obj["tool_names"]; ok && !isNull(v) {
		if json.Unmarshal(v, &toolNames) != nil {
			return nil, badField("message.tool_names", "tool_names must be an array of names.")
		}
		if toolNames == nil {
			toolNames = []string{}
		}
	}
	modelRef := ""
	if v, ok := obj["model"]; ok && !isNull(v) {
		if modelRef, ok = str(v); !ok {
			return nil, refusal.New(refusal.Unprocessable, CodeUnknownModel, "model must be a provider/model string.").With("path", "message.model")
		}
	}
	var posted *Posted
	err = e.write(ctx, func(tx *store.Tx, fx *effects) error {
		c, err := store.LockConversation(ctx, tx, c.ID)
		if err != nil {
			return err
		}
		atts, err := e.inputAttachments(ctx, tx, a, attachments, "message.attachments")
		if err != nil {
			return err
		}
		prof, err := e.acceptProfile(ctx, tx, c, toolNames)
		if err != nil {
			return err
		}
		ref := modelRef
		if ref == "" {
			ref = prof.DefaultModel
		}
		if ref == "" {
			ref = e.models.Default().Ref
		}
		if _, err := e.models.Check(ref, prof.Frozen.HasTools); err != nil {
			r, _ := refusal.As(err)
			return r.With("path", "message.model")
		}
		if c.Status == ConversationArchived {
			return conflict(CodeConversationArchived, "The conversation is archived.")
		}
		open, err := store.OpenTurns(ctx, tx, c.ID)
		if err != nil {
			return err
		}
		queued := 0
		for i := range open {
			if open[i].Status == TurnQueued {
				queued++
			}
		}
		if queued >= MaxQueuedTurns {
			return conflict(CodeInputQueueFull, "The conversation already has %d queued turns.", MaxQueuedTurns)
		}
		now := e.nowMS()
		mc, err := e.freezeMemory(ctx, tx, c.WorkspacePublicID, c.PublicID, Member{Kind: store.KindAgent, PublicID: c.AnsweringAgentPublicID})
		if err != nil {
			return err
		}
		rules := prof.ApprovalRules
		if len(rules) == 0 {
			rules = []byte("[]")
		}
		mode := prof.ApprovalMode
		if mode == "" {
			mode = ModeBypass
		}
		convID := c.ID
		agentID := c.AnsweringAgentPublicID
		r := &store.Run{PublicID: store.NewPublicID(), WorkspaceID: c.WorkspaceID, WorkspacePublicID: c.WorkspacePublicID,
			ConversationID: &convID, ConversationPublicID: &c.PublicID, CreatedByKind: a.Kind, CreatedByPublicID: a.PublicID,
			AnsweringAgentPublicID: &agentID, Status: RunPending, ApprovalMode: mode, ApprovalRules: string(rules),
			DefaultRunnerExecutorPublicID: c.DefaultRunnerExecutorPublicID, DeliverableTaskKey: "r1", Revision: 1,
			MainlineRoundCounter: 1, MemoryContext: mc, CreatedAt: now, UpdatedAt: now}
		if err := store.InsertRun(ctx, tx, r); err != nil {
			return err
		}
		pos, err := store.NextTurnPosition(ctx, tx, c.ID)
		if err != nil {
			return err
		}
		author := a.PublicID
		t := &store.Turn{PublicID: store.NewPublicID(), ConversationID: c.ID, Position: pos, AuthorKind: a.Kind, AuthorPublicID: &author,
			InputText: text, InputAttachments: *jsonText(orEmpty(atts)), Model: ref, Status: TurnQueued, RunID: r.ID, RunPublicID: r.PublicID, CreatedAt: now}
		if toolNames != nil {
			t.ToolNames = jsonText(toolNames)
		}
		if err := store.InsertTurn(ctx, tx, t); err != nil {
			return err
		}
		if err := e.bindInputs(ctx, tx, uploads.TargetTurnInput, t.ID, c.WorkspaceID, atts, now); err != nil {
			return err
		}
		round := &store.Task{RunID: r.ID, Key: "r1", Kind: KindModel, Status: StatusWaiting, Mainline: true, Origin: OriginAuthor,
			OnFailure: OnFailureHalt, Lifetime: LifetimeConversation, Wake: WakeAuto, Visibility: VisibilityVisible,
			LineageRoot: "r1", RoundNumber: 1, Model: &ref, Prompt: &text, Instructions: prof.Instructions,
			ToolDefinitions: ptr(string(prof.Frozen.ToolDefinitions)), Environment: ptr(string(prof.Frozen.Environment)),
			SkillCatalog: ptr(string(prof.Frozen.SkillCatalog)), CreatedAt: now}
		if len(atts) > 0 {
			round.Attachments = jsonText(atts)
		}
		if err := store.InsertTask(ctx, tx, round); err != nil {
			return err
		}
		if len(open) == 0 {
			if err := e.startTurn(ctx, tx, fx, t, r, now); err != nil {
				return err
			}
		}
		if err := store.SetConversation(ctx, tx, c.ID, c.Status, now, c.ArchivedAt); err != nil {
			return err
		}
		if r, err = store.RunByID(ctx, tx, r.ID); err != nil {
			return err
		}
		doc, err := e.runDoc(ctx, tx, r, false)
		if err != nil {
			return err
		}
		posted = &Posted{Turn: turnDoc(c, t), Run: doc}
		if key != "" {
			res, _ := json.Marshal(map[string]string{"turn": t.PublicID, "run": r.PublicID})
			return store.InsertIdempotency(ctx, tx, scope, key, string(canon), string(res), now, now-IdempotencyTTL.Milliseconds())
		}
		return nil
	})
	if err != nil && key != "" && store.IsUniqueViolation(err) {
		if p, found, err := e.replayMessage(ctx, a, c, scope, key, canon); found || err != nil {
			return p, err
		}
	}
	return posted, err
}

// acceptProfile freezes the answering agent's profile, or the empty profile without the
// profile service.
func (e *Engine) acceptProfile(ctx context.Context, q store.Querier, c *store.Conversation, toolNames []string) (*AcceptedProfile, error) {
	return e.acceptProfileFor(ctx, q, c, c.AnsweringAgentID, c.AnsweringAgentPublicID, toolNames)
}

// acceptProfileFor freezes the profile of the agent that answers a turn of c: its answering
// agent, or the agent a send selected.
func (e *Engine) acceptProfileFor(ctx context.Context, q store.Querier, c *store.Conversation, agentID int64, agentPublicID string, toolNames []string) (*AcceptedProfile, error) {
	// The turn's run will freeze this memory configuration; its skill catalog is read against it.
	principal := Member{Kind: store.KindAgent, PublicID: agentPublicID}
	mc, err := e.freezeMemory(ctx, q, c.WorkspacePublicID, c.PublicID, principal)
	if err != nil {
		return nil, err
	}
	skills := &SkillFacts{MemoryContext: mc, WorkspacePublicID: c.WorkspacePublicID, ConversationPublicID: c.PublicID, Principal: principal}
	in := &ProfileAcceptance{Selection: deref(c.DefaultRunnerExecutorPublicID), ToolNames: toolNames, Path: "message.", Skills: skills}
	if e.profiles != nil {
		return e.profiles.AcceptProfile(ctx, q, agentID, in)
	}
	empty := &AcceptedProfile{Frozen: FrozenDeclaration{ToolDefinitions: []byte("[]"), Environment: []byte("null"), SkillCatalog: []byte("[]")},
		ApprovalMode: ModeBypass}
	if e.decls == nil {
		if len(toolNames) > 0 {
			return nil, refusal.Newf(refusal.Unprocessable, CodeToolNotDeclared, "%q is not one of this turn's tools.", toolNames[0]).
				With("path", "message.tool_names[0]").With("tool_name", toolNames[0])
		}
		return empty, nil
	}
	f, err := e.decls.AcceptStep(ctx, q, &StepDeclaration{WorkspaceID: c.WorkspaceID, Selection: in.Selection, ToolNames: toolNames,
		NarrowPath: "message.", Skills: skills})
	if err != nil {
		return nil, err
	}
	empty.Frozen = *f
	return empty, nil
}

// startTurn starts a queued turn's run.
func (e *Engine) startTurn(ctx context.Context, tx *store.Tx, fx *effects, t *store.Turn, r *store.Run, now int64) error {
	t.Status, t.StartedAt = TurnRunning, &now
	if err := store.SetTurn(ctx, tx, t); err != nil {
		return err
	}
	return e.startRun(ctx, tx, fx, r, now)
}

func (e *Engine) replayMessage(ctx context.Context, a *Actor, c *store.Conversation, scope, key string, canon []byte) (*Posted, bool, error) {
	now := e.nowMS()
	rec, err := store.LookupIdempotency(ctx, e.store.Reader(), scope, key, now-IdempotencyTTL.Milliseconds())
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
	q := e.store.Reader()
	r, err := store.RunByPublicID(ctx, q, a.WorkspaceID, res["run"])
	if err != nil {
		return nil, true, err
	}
	t, err := store.TurnOfRun(ctx, q, r.ID)
	if err != nil {
		return nil, true, err
	}
	doc, err := e.runDoc(ctx, q, r, false)
	if err != nil {
		return nil, true, err
	}
	return &Posted{Turn: turnDoc(c, t), Run: doc, Replayed: true}, true, nil
}

// followTurn keeps a conversation-hosted run's turn in step with it (docs/api.md#conversations)
// and, when the turn leaves running, starts the conversation's oldest queued turn. It runs in the
// transaction that changed the run.
func (e *Engine) followTurn(ctx context.Context, tx *store.Tx, fx *effects, run *store.Run, now int64) error {
	if run.ConversationID == nil {
		return nil
	}
	t, err := store.TurnOfRun(ctx, tx, run.ID)
	if err != nil {
		return err
	}
	if t.Status != TurnRunning && t.Status != TurnQueued {
		return nil
	}
	switch run.Status {
	case RunCompleted:
		d := run.DeliverableTaskKey
		t.Status, t.AnswerTaskKey, t.AnswerText, t.CompletedAt = TurnCompleted, &d, ptr(deref(run.Answer)), &now
	case RunNeedsAttention:
		t.Status, t.CompletedAt = TurnFailed, &now
		te, err := e.firstAttentionError(ctx, tx, run)
		if err != nil {
			return err
		}
		t.FailureKey, t.FailureDetail = &te.Key, nullable(te.Detail)
	case RunCanceled:
		t.Status, t.CompletedAt = TurnCanceled, &now
	default:
		return nil
	}
	if err := store.SetTurn(ctx, tx, t); err != nil {
		return err
	}
	if err := e.noteReply(ctx, tx, fx, t); err != nil {
		return err
	}
	if err := e.requeueSteers(ctx, tx, fx, run, now); err != nil {
		return err
	}
	return e.startNextTurn(ctx, tx, fx, *run.ConversationID, now)
}

// firstAttentionError is the error of the first task listed under the run's first attention
// reason.
func (e *Engine) firstAttentionError(ctx context.Context, q store.Querier, run *store.Run) (TaskError, error) {
	tasks, err := store.TraceTasks(ctx, q, run.ID)
	if err != nil {
		return TaskError{}, err
	}
	byKey := map[string]*store.Task{}
	for i := range tasks {
		byKey[tasks[i].Key] = &tasks[i]
	}
	for _, att := range attention(run, tasks, byKey) {
		for _, k := range att.TaskKeys {
			if t := byKey[k]; t != nil && t.ErrorKey != nil {
				return TaskError{Key: *t.ErrorKey, Detail: deref(t.ErrorDetail)}, nil
			}
		}
	}
	return TaskError{Key: KeyPredecessorFailed}, nil
}
