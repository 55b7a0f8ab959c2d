package runs

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"strconv"
	"strings"

	"github.com/nexuskernel/nexus/core/refusal"
	"github.com/nexuskernel/nexus/core/store"
)

// ReadRun is the run read (docs/api.md#runs).
func (e *Engine) ReadRun(ctx context.Context, a *Actor, runID string) (*RunDoc, error) {
	q := e.store.Reader()
	r, err := e.loadRun(ctx, q, a, runID)
	if err != nil {
		return nil, err
	}
	return e.runDoc(ctx, q, r, true)
}

// RunPage is one page of the run listing.
type RunPage struct {
	Runs      []*RunDoc
	NextAfter *string
}

// Page bounds of the listings (docs/api.md#limits): 1..100, default 20.
const (
	MaxPage     = 100
	DefaultPage = 20
)

func badCursor(path string) error {
	return refusal.Newf(refusal.BadRequest, refusal.CodeParameterInvalid, "%s is not a cursor this listing issued.", path).With("path", path)
}

// ListRuns lists the workspace's runs newest first; after is the opaque cursor.
func (e *Engine) ListRuns(ctx context.Context, a *Actor, status, conversation, after string, limit int) (*RunPage, error) {
	var before int64
	if after != "" {
		b, err := base64.RawURLEncoding.DecodeString(after)
		if err != nil || !strings.HasPrefix(string(b), "run:") {
			return nil, badCursor("after")
		}
		if before, err = strconv.ParseInt(strings.TrimPrefix(string(b), "run:"), 10, 64); err != nil || before <= 0 {
			return nil, badCursor("after")
		}
	}
	q := e.store.Reader()
	rs, err := store.RunsOfWorkspace(ctx, q, a.WorkspaceID, store.RunFilter{Status: status, ConversationPublicID: conversation, BeforeID: before, Limit: limit + 1})
	if err != nil {
		return nil, err
	}
	page := &RunPage{Runs: []*RunDoc{}}
	for i := range rs {
		if i == limit {
			c := base64.RawURLEncoding.EncodeToString([]byte("run:" + strconv.FormatInt(rs[i-1].ID, 10)))
			page.NextAfter = &c
			break
		}
		d, err := e.runDoc(ctx, q, &rs[i], false)
		if err != nil {
			return nil, err
		}
		page.Runs = append(page.Runs, d)
	}
	return page, nil
}

// ReadTask is the task read (docs/api.md#tasks-and-decisions).
func (e *Engine) ReadTask(ctx context.Context, a *Actor, runID, key string) (*TaskDoc, error) {
	q := e.store.Reader()
	r, err := e.loadRun(ctx, q, a, runID)
	if err != nil {
		return nil, err
	}
	return e.taskDoc(ctx, q, r, key)
}

func (e *Engine) taskDoc(ctx context.Context, q store.Querier, r *store.Run, key string) (*TaskDoc, error) {
	t, err := store.TaskByKey(ctx, q, r.ID, key)
	if errors.Is(err, store.ErrNotFound) {
		return nil, taskNotFound(key)
	}
	if err != nil {
		return nil, err
	}
	byKey := map[string]*store.Task{}
	if t.Status == StatusWaiting {
		trace, err := store.TraceTasks(ctx, q, r.ID)
		if err != nil {
			return nil, err
		}
		for i := range trace {
			byKey[trace[i].Key] = &trace[i]
		}
	}
	return fullDoc(t, byKey), nil
}

// ReadRequest is the sealed request read: the bytes handed to the provider, reassembled.
func (e *Engine) ReadRequest(ctx context.Context, a *Actor, runID, key string) ([]byte, error) {
	q := e.store.Reader()
	r, err := e.loadRun(ctx, q, a, runID)
	if err != nil {
		return nil, err
	}
	t, err := store.TaskByKey(ctx, q, r.ID, key)
	if errors.Is(err, store.ErrNotFound) {
		return nil, taskNotFound(key)
	}
	if err != nil {
		return nil, err
	}
	if t.Kind != KindModel || t.SealedRequestID == nil {
		return nil, refusal.Newf(refusal.NotFound, CodeRequestNotSealed, "Task %s has no sealed request.", key)
	}
	p, err := store.SealedRequest(ctx, q, *t.SealedRequestID)
	if err != nil {
		return nil, err
	}
	return p.Bytes(), nil
}

// StartRun starts a pending standalone run (docs/api.md#runs).
func (e *Engine) StartRun(ctx context.Context, a *Actor, runID string) (*RunDoc, error) {
	var doc *RunDoc
	err := e.write(ctx, func(tx *store.Tx, fx *effects) error {
		r, err := e.loadRun(ctx, tx, a, runID)
		if err != nil {
			return err
		}
		if r, err = store.LockRun(ctx, tx, r.ID); err != nil {
			return err
		}
		if err := e.writeStanding(ctx, tx, a, r); err != nil {
			return err
		}
		if r.ConversationID != nil {
			return conflict(CodeConversationHosted, "A conversation-hosted run is started by its conversation's queue.")
		}
		if r.Status != RunPending {
			return conflict(CodeNotStartable, "Only a pending run starts; this one is %s.", r.Status)
		}
		if err := e.startRun(ctx, tx, fx, r, e.nowMS()); err != nil {
			return err
		}
		doc, err = e.runDoc(ctx, tx, r, true)
		return err
	})
	return doc, err
}

// StopRun is the stop verb (docs/api.md#runs). force defaults to true.
func (e *Engine) StopRun(ctx context.Context, a *Actor, runID string, force bool) (*RunDoc, error) {
	var doc *RunDoc
	err := e.write(ctx, func(tx *store.Tx, fx *effects) error {
		r, err := e.loadRun(ctx, tx, a, runID)
		if err != nil {
			return err
		}
		if r, err = store.LockRun(ctx, tx, r.ID); err != nil {
			return err
		}
		if err := e.writeStanding(ctx, tx, a, r); err != nil {
			return err
		}
		if r.Status == RunCompleted || r.Status == RunCanceled {
			return conflict(CodeAlreadyTerminal, "The run is already %s.", r.Status)
		}
		by := Member{Kind: a.Kind, PublicID: a.PublicID}
		if err := e.stopRunTx(ctx, tx, fx, r, by, force, e.nowMS()); err != nil {
			return err
		}
		// Stopping the originating run cancels the unfinished work derived from its spawn briefs and
		// sends (docs/agent-tools.md#delegation-and-conversations); their undelivered replies were
		// suppressed with the run's rows.
		if err := e.cancelRequestsOf(ctx, tx, fx, r, by); err != nil {
			return err
		}
		if r, err = store.RunByID(ctx, tx, r.ID); err != nil {
			return err
		}
		doc, err = e.runDoc(ctx, tx, r, true)
		return err
	})
	return doc, err
}

// Decide is approve (deny false) or deny (deny true) of a held row
// (docs/api.md#tasks-and-decisions).
func (e *Engine) Decide(ctx context.Context, a *Actor, runID, key string, deny bool, reason string) (*TaskDoc, error) {
	var doc *TaskDoc
	var expired bool
	err := e.write(ctx, func(tx *store.Tx, fx *effects) error {
		r, err := e.loadRun(ctx, tx, a, runID)
		if err != nil {
			return err
		}
		if r, err = store.LockRun(ctx, tx, r.ID); err != nil {
			return err
		}
		t, err := store.TaskByKey(ctx, tx, r.ID, key)
		if errors.Is(err, store.ErrNotFound) {
			return taskNotFound(key)
		}
		if err != nil {
			return err
		}
		if err := e.writeStanding(ctx, tx, a, r); err != nil {
			return err
		}
		if r.Status != RunRunning && r.Status != RunNeedsAttention {
			return conflict(CodeNotAdjudicable, "The run is %s; only a running run's rows are decided.", r.Status)
		}
		if t.Status != StatusNeedsApproval {
			return conflict(CodeNotAwaitingApproval, "Task %s is not awaiting approval.", key)
		}
		now := e.nowMS()
		if t.DeadlineAt != nil && now >= *t.DeadlineAt {
			expired = true
			return e.expire(ctx, tx, fx, r, t, now)
		}
		origin := ApprovalOriginHuman
		if a.Kind == "agent" {
			origin = ApprovalOriginAgent
		}
		by := a.member()
		if _, err := store.SetTask(ctx, tx, t.ID, nil, store.Assign{Col: "approval", Val: jsonText(approvalOf(origin, &by, now))}); err != nil {
			return err
		}
		if deny {
			if err := e.settleRow(ctx, tx, r, t, StatusFailed, TaskError{Key: KeyApprovalDenied, Detail: CutUTF8(reason, MaxReasonBytes)}, now); err != nil {
				return err
			}
		} else if err := e.dispatch(ctx, tx, fx, r, t, now); err != nil {
			return err
		}
		if err := e.advance(ctx, tx, fx, r); err != nil {
			return err
		}
		doc, err = e.taskDoc(ctx, tx, r, key)
		return err
	})
	if err == nil && expired {
		return nil, conflict(CodeNotAwaitingApproval, "Task %s expired while awaiting approval.", key)
	}
	return doc, err
}

// InboxRow is one row of the member inbox (docs/api.md#the-inbox): an approval or an ask, each in
// its own shape (MarshalJSON).
type InboxRow struct {
	Kind                 string
	RunPublicID          string
	WorkspacePublicID    string
	ConversationPublicID *string
	TaskKey              string
	// An approval's fields.
	ToolName      *string
	ToolAlias     *string
	ToolInput     json.RawMessage
	EffectProfile json.RawMessage
	AddressedTo   json.RawMessage
	// An ask's fields.
	CallKey string
	Prompt  string
	Options []string
	Multi   bool

	CreatedAt  string
	DeadlineAt *string
}

// Inbox row kinds.
const (
	InboxApproval = "approval"
	InboxAsk      = "ask"
)

type inboxApprovalWire struct {
	Kind                 string          `json:"kind"`
	RunPublicID          string          `json:"run_public_id"`
	WorkspacePublicID    string          `json:"workspace_public_id"`
	ConversationPublicID *string         `json:"conversation_public_id"`
	TaskKey              string          `json:"task_key"`
	ToolName             *string         `json:"tool_name"`
	ToolAlias            *string         `json:"tool_alias"`
	ToolInput            json.RawMessage `json:"tool_input"`
	EffectProfile        json.RawMessage `json:"effect_profile"`
	AddressedTo          json.RawMessage `json:"addressed_to,omitempty"`
	CreatedAt            string          `json:"created_at"`
	DeadlineAt           *string         `json:"deadline_at"`
}

type inboxAskWire struct {
	Kind                 string   `json:"kind"`
	RunPublicID          string   `json:"run_public_id"`
	WorkspacePublicID    string   `json:"workspace_public_id"`
	ConversationPublicID *string  `json:"conversation_public_id"`
	TaskKey              string   `json:"task_key"`
	CallKey              string   `json:"call_key"`
	Prompt               string   `json:"prompt"`
	Options              []string `json:"options"`
	Multi                bool     `json:"multi"`
	CreatedAt            string   `json:"created_at"`
	DeadlineAt           *string  `json:"deadline_at"`
}

// MarshalJSON writes the row in its kind's shape.
func (r InboxRow) MarshalJSON() ([]byte, error) {
	if r.Kind == InboxAsk {
		return json.Marshal(inboxAskWire{Kind: r.Kind, RunPublicID: r.RunPublicID, WorkspacePublicID: r.WorkspacePublicID,
			ConversationPublicID: r.ConversationPublicID, TaskKey: r.TaskKey, CallKey: r.CallKey, Prompt: r.Prompt,
			Options: r.Options, Multi: r.Multi, CreatedAt: r.CreatedAt, DeadlineAt: r.DeadlineAt})
	}
	return json.Marshal(inboxApprovalWire{Kind: r.Kind, RunPublicID: r.RunPublicID, WorkspacePublicID: r.WorkspacePublicID,
		ConversationPublicID: r.ConversationPublicID, TaskKey: r.TaskKey, ToolName: r.ToolName, ToolAlias: r.ToolAlias,
		ToolInput: r.ToolInput, EffectProfile: r.EffectProfile, AddressedTo: r.AddressedTo, CreatedAt: r.CreatedAt,
		DeadlineAt: r.DeadlineAt})
}

// InboxPage is one page of the member inbox.
type InboxPage struct {
	Tasks     []InboxRow `json:"tasks"`
	NextAfter *string    `json:"-"`
}

// Inbox lists what waits on the member, oldest first (docs/api.md#the-inbox): the held approvals of
// the runs that act for it (the user who created them, else the steward of their answering
// agent) and the asks addressed to it; for an agent, every held approval and open ask of the
// runs it answers or created.
func (e *Engine) Inbox(ctx context.Context, kind, publicID string, after string, limit int) (*InboxPage, error) {
	var afterID int64
	if after != "" {
		b, err := base64.RawURLEncoding.DecodeString(after)
		if err != nil || !strings.HasPrefix(string(b), "inbox:") {
			return nil, badCursor("after")
		}
		if afterID, err = strconv.ParseInt(strings.TrimPrefix(string(b), "inbox:"), 10, 64); err != nil || afterID <= 0 {
			return nil, badCursor("after")
		}
	}
	addressed := *jsonText(AddressedMember{Role: "member", Member: Member{Kind: kind, PublicID: publicID}})
	rows, err := store.InboxForMember(ctx, e.store.Reader(), kind, publicID, addressed, afterID, limit+1)
	if err != nil {
		return nil, err
	}
	page := &InboxPage{Tasks: []InboxRow{}}
	for i, h := range rows {
		if i == limit {
			c := base64.RawURLEncoding.EncodeToString([]byte("inbox:" + strconv.FormatInt(rows[i-1].Task.ID, 10)))
			page.NextAfter = &c
			break
		}
		t := h.Task
		row := InboxRow{RunPublicID: h.RunPublicID, WorkspacePublicID: h.WorkspacePublicID, ConversationPublicID: h.ConversationPublicID,
			TaskKey: t.Key, CreatedAt: store.FormatMillis(t.CreatedAt), DeadlineAt: optTime(t.DeadlineAt)}
		if t.Kind == KindAwait {
			row.Kind, row.CallKey, row.Prompt, row.Multi = InboxAsk, deref(t.ParentKey), deref(t.Prompt), deref(t.Multi)
			if t.Options != nil {
				_ = json.Unmarshal([]byte(*t.Options), &row.Options)
			}
		} else {
			d := fullDoc(&t, nil)
			row.Kind, row.ToolName, row.ToolAlias = InboxApproval, t.ToolName, t.ToolAlias
			row.EffectProfile, row.AddressedTo = raw(t.EffectProfile), d.AddressedTo
			if d.ToolInput != nil {
				row.ToolInput = *d.ToolInput
			}
		}
		page.Tasks = append(page.Tasks, row)
	}
	return page, nil
}

// Inbox page bounds (docs/api.md#limits): 1..200, default 50.
const (
	MaxInboxPage     = 200
	DefaultInboxPage = 50
)

// stopRunTx stops a run the caller has locked (docs/api.md#runs): every open row is canceled
// (run_canceled), except, without force, rows a claimant holds; the run becomes canceled, or
// canceling while claimed rows remain, and its turn follows.
func (e *Engine) stopRunTx(ctx context.Context, tx *store.Tx, fx *effects, r *store.Run, by Member, force bool, now int64) error {
	if err := store.SetRun(ctx, tx, r.ID, store.Assign{Col: "stop_requested_at", Val: now},
		store.Assign{Col: "stop_by_kind", Val: by.Kind}, store.Assign{Col: "stop_by_public_id", Val: by.PublicID},
		store.Assign{Col: "stop_force", Val: force}); err != nil {
		return err
	}
	tasks, err := store.TraceTasks(ctx, tx, r.ID)
	if err != nil {
		return err
	}
	claimedLeft := false
	for i := range tasks {
		t := &tasks[i]
		if Terminal(t.Status) {
			continue
		}
		claimed := t.ClaimedAt != nil && (t.Status == StatusRunning || t.Status == StatusDispatched)
		if claimed && !force && r.Status != RunPending {
			claimedLeft = true
			continue
		}
		if err := e.signalCanceled(ctx, tx, fx, r, t, CancelRunCanceled); err != nil {
			return err
		}
		fx.abandon = append(fx.abandon, t.ID)
		detail, err := e.canceledDetail(ctx, tx, t)
		if err != nil {
			return err
		}
		if err := e.settleRow(ctx, tx, r, t, StatusCanceled, TaskError{Key: KeyRunCanceled, Detail: detail}, now); err != nil {
			return err
		}
	}
	status := RunCanceled
	if claimedLeft {
		status = RunCanceling
	}
	if err := e.setRunStatus(ctx, tx, r, status, now); err != nil {
		return err
	}
	return e.runChanged(ctx, tx, fx, r, now)
}
