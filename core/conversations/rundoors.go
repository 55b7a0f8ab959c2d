package conversations

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"strconv"
	"strings"

	"github.com/nexuskernel/nexus/core/refusal"
	"github.com/nexuskernel/nexus/core/runs"
	"github.com/nexuskernel/nexus/core/store"
)

// ReadRun is the run read (docs/api.md#runs).
func (d *Doors) ReadRun(ctx context.Context, a *runs.Actor, runID string) (*RunDoc, error) {
	q := d.e.Reader()
	r, err := loadRun(ctx, q, a, runID)
	if err != nil {
		return nil, err
	}
	return runDoc(ctx, q, r, true)
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

// ListRuns lists the workspace's runs newest first; after is the opaque cursor.
func (d *Doors) ListRuns(ctx context.Context, a *runs.Actor, status, conversation, after string, limit int) (*RunPage, error) {
	switch status {
	case "", runs.RunPending, runs.RunRunning, runs.RunNeedsAttention, runs.RunCanceling, runs.RunCompleted, runs.RunCanceled:
	default:
		return nil, refusal.Newf(refusal.BadRequest, refusal.CodeParameterInvalid, "status must be one of %s, %s, %s, %s, %s or %s.",
			runs.RunPending, runs.RunRunning, runs.RunNeedsAttention, runs.RunCanceling, runs.RunCompleted, runs.RunCanceled).With("path", "status")
	}
	page := &RunPage{Runs: []*RunDoc{}}
	if conversation != "" && !store.IsPublicID(strings.ToLower(conversation)) {
		// No conversation has such an id: the filter matches no run.
		return page, nil
	}
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
	q := d.e.Reader()
	rs, err := store.RunsOfWorkspace(ctx, q, a.WorkspaceID, store.RunFilter{Status: status, ConversationPublicID: strings.ToLower(conversation),
		BeforeID: before, Limit: limit + 1})
	if err != nil {
		return nil, err
	}
	for i := range rs {
		if i == limit {
			c := base64.RawURLEncoding.EncodeToString([]byte("run:" + strconv.FormatInt(rs[i-1].ID, 10)))
			page.NextAfter = &c
			break
		}
		doc, err := runDoc(ctx, q, &rs[i], false)
		if err != nil {
			return nil, err
		}
		page.Runs = append(page.Runs, doc)
	}
	return page, nil
}

// ReadTask is the task read (docs/api.md#tasks-and-decisions).
func (d *Doors) ReadTask(ctx context.Context, a *runs.Actor, runID, key string) (*TaskDoc, error) {
	q := d.e.Reader()
	r, err := loadRun(ctx, q, a, runID)
	if err != nil {
		return nil, err
	}
	return taskDoc(ctx, q, r, key)
}

func taskDoc(ctx context.Context, q store.Querier, r *store.Run, key string) (*TaskDoc, error) {
	t, err := store.TaskByKey(ctx, q, r.ID, key)
	if errors.Is(err, store.ErrNotFound) {
		return nil, taskNotFound(key)
	}
	if err != nil {
		return nil, err
	}
	byKey := map[string]*store.TaskTrace{}
	if t.Status == runs.StatusWaiting {
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
func (d *Doors) ReadRequest(ctx context.Context, a *runs.Actor, runID, key string) ([]byte, error) {
	q := d.e.Reader()
	r, err := loadRun(ctx, q, a, runID)
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
	if t.Kind != runs.KindModel || t.SealedRequestID == nil {
		return nil, refusal.Newf(refusal.NotFound, CodeRequestNotSealed, "Task %s has no sealed request.", key)
	}
	p, err := store.SealedRequest(ctx, q, *t.SealedRequestID)
	if err != nil {
		return nil, err
	}
	return p.Bytes(), nil
}

// StartRun starts a pending standalone run (docs/api.md#runs).
func (d *Doors) StartRun(ctx context.Context, a *runs.Actor, runID string) (*RunDoc, error) {
	var doc *RunDoc
	err := d.e.Write(ctx, func(x *runs.Tx) error {
		tx := x.Tx
		r, err := lockForWrite(ctx, x, a, runID)
		if err != nil {
			return err
		}
		if r.ConversationID != nil {
			return conflict(CodeConversationHosted, "A conversation-hosted run is started by its conversation's queue.")
		}
		if r.Status != runs.RunPending {
			return conflict(CodeNotStartable, "Only a pending run starts; this one is %s.", r.Status)
		}
		if err := x.StartRun(ctx, r, x.NowMS()); err != nil {
			return err
		}
		doc, err = runDoc(ctx, tx, r, true)
		return err
	})
	return doc, err
}

// StopRun is the stop verb (docs/api.md#runs). force defaults to true.
func (d *Doors) StopRun(ctx context.Context, a *runs.Actor, runID string, force bool) (*RunDoc, error) {
	var doc *RunDoc
	err := d.e.Write(ctx, func(x *runs.Tx) error {
		tx := x.Tx
		r, err := lockForWrite(ctx, x, a, runID)
		if err != nil {
			return err
		}
		if r.Status == runs.RunCompleted || r.Status == runs.RunCanceled {
			return conflict(runs.CodeAlreadyTerminal, "The run is already %s.", r.Status)
		}
		by := runs.Member{Kind: a.Kind, PublicID: a.PublicID}
		if err := stopRun(ctx, x, r, by, force); err != nil {
			return err
		}
		if r, err = store.RunByID(ctx, tx, r.ID); err != nil {
			return err
		}
		doc, err = runDoc(ctx, tx, r, true)
		return err
	})
	return doc, err
}

// Decide is approve (deny false) or deny (deny true) of a held row
// (docs/api.md#tasks-and-decisions).
func (d *Doors) Decide(ctx context.Context, a *runs.Actor, runID, key string, deny bool, reason string) (*TaskDoc, error) {
	var doc *TaskDoc
	var expired bool
	err := d.e.Write(ctx, func(x *runs.Tx) error {
		tx := x.Tx
		r, t, err := lockRowForWrite(ctx, x, a, runID, key)
		if err != nil {
			return err
		}
		if r.Status != runs.RunRunning && r.Status != runs.RunNeedsAttention {
			return conflict(CodeNotAdjudicable, "The run is %s; only a running run's rows are decided.", r.Status)
		}
		if t.Status != runs.StatusNeedsApproval {
			return conflict(CodeNotAwaitingApproval, "Task %s is not awaiting approval.", key)
		}
		if expired, err = x.Decide(ctx, r, t, a, deny, reason); err != nil || expired {
			return err
		}
		doc, err = taskDoc(ctx, tx, r, key)
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
func (d *Doors) Inbox(ctx context.Context, kind, publicID string, after string, limit int) (*InboxPage, error) {
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
	addressed := runs.AddressedMember{Role: "member", Member: runs.Member{Kind: kind, PublicID: publicID}}
	rows, err := store.InboxForMember(ctx, d.e.Reader(), kind, publicID, addressed, afterID, limit+1)
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
		if t.Kind == runs.KindAwait {
			row.Kind, row.CallKey, row.Prompt, row.Multi = InboxAsk, deref(t.ParentKey), deref(t.Prompt), deref(t.Multi)
			row.Options = t.Options
		} else {
			doc := fullDoc(&t, nil)
			row.Kind, row.ToolName, row.ToolAlias = InboxApproval, t.ToolName, t.ToolAlias
			row.EffectProfile, row.AddressedTo = raw(t.EffectProfile), doc.AddressedTo
			if doc.ToolInput != nil {
				row.ToolInput = *doc.ToolInput
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

// CancelBranch is branch cancel (docs/api.md#tasks-and-decisions), in its check order: 404
// not_found, 403 not_authorized, then the engine's 409 not_a_branch and 409 already_terminal
// (runs.Tx.CancelBranch). It answers the branch's first round.
func (d *Doors) CancelBranch(ctx context.Context, a *runs.Actor, runID, key string) (*TaskDoc, error) {
	var doc *TaskDoc
	err := d.e.Write(ctx, func(x *runs.Tx) error {
		r, err := loadRun(ctx, x.Tx, a, runID)
		if err != nil {
			return err
		}
		if r, err = x.LockRun(ctx, r.ID); err != nil {
			return err
		}
		t, err := store.TaskByKey(ctx, x.Tx, r.ID, key)
		if errors.Is(err, store.ErrNotFound) {
			return taskNotFound(key)
		}
		if err != nil {
			return err
		}
		if err := writeStanding(ctx, x.Tx, a, r); err != nil {
			return err
		}
		root, err := x.CancelBranch(ctx, r, &t.TaskTrace)
		if err != nil {
			return err
		}
		doc, err = taskDoc(ctx, x.Tx, r, root)
		return err
	})
	return doc, err
}
