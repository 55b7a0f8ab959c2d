package executors

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"strconv"
	"strings"

	"github.com/nexuskernel/nexus/core/identity"
	"github.com/nexuskernel/nexus/core/refusal"
	"github.com/nexuskernel/nexus/core/runs"
	"github.com/nexuskernel/nexus/core/store"
)

// Row is a tool row as the executor plane serves it (docs/api.md#the-executor-plane): in the inbox,
// and as the task of claim, extend and commit answers, with the current status and, once settled,
// its error. The claim token never appears in it.
type Row struct {
	Kind                 string          `json:"kind"`
	Status               string          `json:"status"`
	RunPublicID          string          `json:"run_public_id"`
	WorkspacePublicID    string          `json:"workspace_public_id"`
	ConversationPublicID *string         `json:"conversation_public_id"`
	TaskKey              string          `json:"task_key"`
	ToolName             string          `json:"tool_name"`
	ToolAlias            *string         `json:"tool_alias,omitempty"`
	ToolInput            json.RawMessage `json:"tool_input"`
	ToolCallID           *string         `json:"tool_call_id,omitempty"`
	EffectProfile        json.RawMessage `json:"effect_profile"`
	Scope                json.RawMessage `json:"scope,omitempty"`
	AddressedTo          json.RawMessage `json:"addressed_to"`
	Target               json.RawMessage `json:"target,omitempty"`
	DispatchedAt         *string         `json:"dispatched_at"`
	DeadlineAt           *string         `json:"deadline_at"`
	TimeoutMS            int64           `json:"timeout_ms"`
	Claimed              bool            `json:"claimed"`
	ClaimGeneration      int64           `json:"claim_generation"`
	Error                *runs.TaskError `json:"error,omitempty"`
}

// KindToolCall (words.go) is the kind of every row an executor receives.

// rowOf builds the served row from a task and its run's public facts.
func rowOf(t *store.Task, runPublicID, workspacePublicID string, conversationPublicID *string) *Row {
	r := &Row{
		Kind: KindToolCall, Status: t.Status, RunPublicID: runPublicID, WorkspacePublicID: workspacePublicID,
		ConversationPublicID: conversationPublicID, TaskKey: t.Key, ToolName: deref(t.ToolName), ToolAlias: t.ToolAlias,
		ToolInput: rawOr(t.ToolInput, "null"), ToolCallID: t.ToolCallID, EffectProfile: rawOr(t.EffectProfile, "null"),
		Target: raw(t.Target), DispatchedAt: optTime(t.DispatchedAt), DeadlineAt: optTime(t.DeadlineAt),
		TimeoutMS: deref(t.TimeoutMS), Claimed: t.ClaimedAt != nil, ClaimGeneration: t.ClaimGeneration,
	}
	if t.Scope != nil {
		r.Scope = json.RawMessage(*t.Scope)
	}
	to := map[string]string{"role": deref(t.AddressedRole)}
	if t.AddressedExecutorPublicID != nil {
		to["executor_public_id"] = *t.AddressedExecutorPublicID
	}
	r.AddressedTo, _ = json.Marshal(to)
	if t.ErrorKey != nil && runs.Terminal(t.Status) {
		r.Error = &runs.TaskError{Key: *t.ErrorKey, Detail: deref(t.ErrorDetail)}
	}
	return r
}

// InboxPage is one page of an executor's inbox.
type InboxPage struct {
	Tasks []*Row
	// NextAfter is the cursor of the next page; nil on the last.
	NextAfter *string
}

// cursorPrefix marks the inbox's cursors, so that another listing's cursor is refused.
const cursorPrefix = "xinbox:"

func encodeCursor(c store.InboxCursor) string {
	return encodeCursorBytes([]byte(cursorPrefix + strconv.FormatInt(c.DispatchedAt, 10) + ":" + c.RunPublicID + ":" + c.TaskKey))
}

func decodeCursor(s string) (*store.InboxCursor, bool) {
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil || !strings.HasPrefix(string(b), cursorPrefix) {
		return nil, false
	}
	parts := strings.Split(strings.TrimPrefix(string(b), cursorPrefix), ":")
	if len(parts) != 3 {
		return nil, false
	}
	at, err := strconv.ParseInt(parts[0], 10, 64)
	if err != nil || at < 0 || !store.IsPublicID(parts[1]) || !validKey(parts[2]) {
		return nil, false
	}
	return &store.InboxCursor{DispatchedAt: at, RunPublicID: parts[1], TaskKey: parts[2]}, true
}

// Inbox lists the work the executor may take now (docs/api.md#the-executor-plane): dispatched tool
// rows addressed to it, claimed or not, and, for a tool provider, the dispatched pool rows of names
// it currently announces that are unclaimed or claimed by it. Reading it changes nothing. after is
// the previous page's cursor ("" for the first page); limit is 1..MaxInboxPage.
func (s *Service) Inbox(ctx context.Context, ex *identity.Executor, after string, limit int) (*InboxPage, error) {
	f := store.InboxFilter{WorkspaceID: ex.WorkspaceID, ExecutorPublicID: ex.PublicID, Limit: limit + 1}
	if after != "" {
		c, ok := decodeCursor(after)
		if !ok {
			return nil, refusal.New(refusal.BadRequest, CodeParameterInvalid, "after is not a cursor this inbox issued.").With("path", "after")
		}
		f.After = c
	}
	if ex.Kind == RoleToolProvider {
		f.PoolMemberID, f.ClaimedBy = ex.ID, store.ExecutorClaimant(ex.PublicID)
	}
	rows, err := store.ExecutorInbox(ctx, s.store.Reader(), f)
	if err != nil {
		return nil, err
	}
	page := &InboxPage{Tasks: []*Row{}}
	for i := range rows {
		if i == limit {
			last := rows[i-1]
			c := encodeCursor(store.InboxCursor{DispatchedAt: deref(last.DispatchedAt), RunPublicID: last.RunPublicID, TaskKey: last.Key})
			page.NextAfter = &c
			break
		}
		r := &rows[i]
		page.Tasks = append(page.Tasks, rowOf(&r.Task, r.RunPublicID, r.WorkspacePublicID, r.ConversationPublicID))
	}
	return page, nil
}

func encodeCursorBytes(b []byte) string { return base64.RawURLEncoding.EncodeToString(b) }
