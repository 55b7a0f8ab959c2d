package client

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"
)

// Run is a run document (docs/api.md#runs). Fields the client does not model stay in Raw.
type Run struct {
	PublicID             string          `json:"public_id"`
	WorkspacePublicID    string          `json:"workspace_public_id"`
	ConversationPublicID *string         `json:"conversation_public_id"`
	Status               string          `json:"status"`
	ApprovalMode         string          `json:"approval_mode"`
	DeliverableTaskKey   string          `json:"deliverable_task_key"`
	Revision             int64           `json:"revision"`
	Attention            []Attention     `json:"attention,omitempty"`
	TaskProgress         map[string]int  `json:"task_progress"`
	Answer               *string         `json:"answer"`
	Stop                 json.RawMessage `json:"stop"`
	CreatedAt            string          `json:"created_at"`
	StartedAt            *string         `json:"started_at"`
	CompletedAt          *string         `json:"completed_at"`
	Tasks                []Task          `json:"tasks,omitempty"`
}

// Attention is one standing reason of a run.
type Attention struct {
	Reason   string   `json:"reason"`
	TaskKeys []string `json:"task_keys"`
	Overflow int      `json:"overflow,omitempty"`
}

// Task is a task read or a trace row (docs/api.md#tasks-and-decisions). structured_content keeps
// null and false: StructuredContent is nil when absent and the JSON text otherwise. Usage is a
// model task's token counts and cost (docs/providers.md, "Usage and cost").
type Task struct {
	Key               string           `json:"key"`
	Kind              string           `json:"kind"`
	Status            string           `json:"status"`
	Mainline          bool             `json:"mainline"`
	Origin            string           `json:"origin"`
	After             []string         `json:"after,omitempty"`
	DeclaringTaskKey  string           `json:"declaring_task_key,omitempty"`
	Model             string           `json:"model,omitempty"`
	Prompt            *string          `json:"prompt,omitempty"`
	Instructions      *string          `json:"instructions,omitempty"`
	Attachments       json.RawMessage  `json:"attachments,omitempty"`
	Finish            string           `json:"finish,omitempty"`
	Calls             []Call           `json:"calls,omitempty"`
	ToolDefinitions   json.RawMessage  `json:"tool_definitions,omitempty"`
	ToolName          string           `json:"tool_name,omitempty"`
	ToolAlias         string           `json:"tool_alias,omitempty"`
	ToolInput         json.RawMessage  `json:"tool_input,omitempty"`
	ToolCallID        string           `json:"tool_call_id,omitempty"`
	EffectProfile     json.RawMessage  `json:"effect_profile,omitempty"`
	Approval          json.RawMessage  `json:"approval,omitempty"`
	IsError           *bool            `json:"is_error,omitempty"`
	Output            *string          `json:"output,omitempty"`
	Content           json.RawMessage  `json:"content,omitempty"`
	StructuredContent *json.RawMessage `json:"structured_content,omitempty"`
	Title             *string          `json:"title,omitempty"`
	Metadata          json.RawMessage  `json:"metadata,omitempty"`
	Error             *TaskError       `json:"error,omitempty"`
	Usage             json.RawMessage  `json:"usage,omitempty"`
	Attempts          *int64           `json:"attempts,omitempty"`
	RequestBytes      *int64           `json:"request_bytes,omitempty"`
	TimeoutMS         *int64           `json:"timeout_ms,omitempty"`
	DeadlineAt        *string          `json:"deadline_at,omitempty"`
	CreatedAt         string           `json:"created_at,omitempty"`
	ReadyAt           *string          `json:"ready_at,omitempty"`
	DispatchedAt      *string          `json:"dispatched_at,omitempty"`
	StartedAt         *string          `json:"started_at,omitempty"`
	CompletedAt       *string          `json:"completed_at,omitempty"`
	ResultDeliveredAt *string          `json:"result_delivered_at,omitempty"`
}

// Call is one call of a model answer.
type Call struct {
	ToolCallID string `json:"tool_call_id"`
	Name       string `json:"name"`
	TaskKey    string `json:"task_key"`
}

// TaskError is a settled task's error.
type TaskError struct {
	Key    string `json:"key"`
	Detail string `json:"detail,omitempty"`
}

// Receipt is what a create or append accepted.
type Receipt struct {
	AcceptedTaskKeys   []string `json:"accepted_task_keys"`
	DeliverableTaskKey string   `json:"deliverable_task_key"`
	Revision           int64    `json:"revision"`
}

// RunCreated answers POST …/runs.
type RunCreated struct {
	Raw      json.RawMessage `json:"-"`
	Run      Run             `json:"run"`
	Receipt  Receipt         `json:"receipt"`
	Replayed bool            `json:"replayed"`
}

// RunResponse answers the run read, start and stop.
type RunResponse struct {
	Raw json.RawMessage `json:"-"`
	Run Run             `json:"run"`
}

// TaskResponse answers the task read, approve, deny and branch cancel.
type TaskResponse struct {
	Raw  json.RawMessage `json:"-"`
	Task Task            `json:"task"`
}

// AppendResponse answers POST …/runs/{run}/tasks.
type AppendResponse struct {
	Raw      json.RawMessage `json:"-"`
	Receipt  Receipt         `json:"receipt"`
	Replayed bool            `json:"replayed"`
}

// RunsResponse is one page of GET …/runs.
type RunsResponse struct {
	Raw        json.RawMessage `json:"-"`
	Runs       []Run           `json:"runs"`
	Pagination struct {
		NextAfter *string `json:"next_after"`
	} `json:"pagination"`
}

// InboxResponse is one page of GET /agent_api/v1/inbox.
type InboxResponse struct {
	Raw        json.RawMessage   `json:"-"`
	Tasks      []json.RawMessage `json:"tasks"`
	Pagination struct {
		NextAfter *string `json:"next_after"`
	} `json:"pagination"`
}

func runPath(ws, run, rest string) string {
	return wsPath(ws, "/runs/"+url.PathEscape(run)+rest)
}

func taskPath(ws, run, key, rest string) string {
	return runPath(ws, run, "/tasks/"+url.PathEscape(key)+rest)
}

// CreateRun posts a run object ({"steps", "approval_mode", …}); idempotencyKey "" sends none.
func (c *Client) CreateRun(ctx context.Context, ws string, run any, idempotencyKey string) (*RunCreated, error) {
	out := &RunCreated{}
	var hdr http.Header
	if idempotencyKey != "" {
		hdr = http.Header{"Idempotency-Key": {idempotencyKey}}
	}
	_, body, err := c.do(ctx, http.MethodPost, wsPath(ws, "/runs"), map[string]any{"run": run}, hdr)
	if err != nil {
		return nil, err
	}
	out.Raw = body
	return out, json.Unmarshal(body, out)
}

// Run reads a run with its trace rows.
func (c *Client) Run(ctx context.Context, ws, run string) (*RunResponse, error) {
	out := &RunResponse{}
	return out, c.call(ctx, http.MethodGet, runPath(ws, run, ""), nil, out, &out.Raw)
}

// WaitRun reads a run, waiting while it is running with no attention: the server holds the
// answer until the run's status changes, a person is needed or seconds (0..30) have passed, then
// answers the run as it is.
func (c *Client) WaitRun(ctx context.Context, ws, run string, seconds int) (*RunResponse, error) {
	out := &RunResponse{}
	return out, c.call(ctx, http.MethodGet, runPath(ws, run, "")+"?wait="+strconv.Itoa(seconds), nil, out, &out.Raw)
}

// Runs lists runs newest first; empty filters are not sent.
func (c *Client) Runs(ctx context.Context, ws, status, after string, limit int) (*RunsResponse, error) {
	q := url.Values{}
	if status != "" {
		q.Set("status", status)
	}
	if after != "" {
		q.Set("after", after)
	}
	if limit > 0 {
		q.Set("limit", strconv.Itoa(limit))
	}
	path := wsPath(ws, "/runs")
	if len(q) > 0 {
		path += "?" + q.Encode()
	}
	out := &RunsResponse{}
	return out, c.call(ctx, http.MethodGet, path, nil, out, &out.Raw)
}

// StartRun starts a pending standalone run.
func (c *Client) StartRun(ctx context.Context, ws, run string) (*RunResponse, error) {
	out := &RunResponse{}
	return out, c.call(ctx, http.MethodPost, runPath(ws, run, "/start"), nil, out, &out.Raw)
}

// StopRun stops a run; force false lets claimed work finish.
func (c *Client) StopRun(ctx context.Context, ws, run string, force bool) (*RunResponse, error) {
	out := &RunResponse{}
	return out, c.call(ctx, http.MethodPost, runPath(ws, run, "/stop"), map[string]bool{"force": force}, out, &out.Raw)
}

// AppendSteps appends steps ({"steps", "expected_revision"?}) to a standalone run.
func (c *Client) AppendSteps(ctx context.Context, ws, run string, body any, idempotencyKey string) (*AppendResponse, error) {
	var hdr http.Header
	if idempotencyKey != "" {
		hdr = http.Header{"Idempotency-Key": {idempotencyKey}}
	}
	_, raw, err := c.do(ctx, http.MethodPost, runPath(ws, run, "/tasks"), body, hdr)
	if err != nil {
		return nil, err
	}
	out := &AppendResponse{Raw: raw}
	return out, json.Unmarshal(raw, out)
}

// Task reads one task with its whole result.
func (c *Client) Task(ctx context.Context, ws, run, key string) (*TaskResponse, error) {
	out := &TaskResponse{}
	return out, c.call(ctx, http.MethodGet, taskPath(ws, run, key, ""), nil, out, &out.Raw)
}

// SealedRequest reads a model task's sealed request, byte for byte as served.
func (c *Client) SealedRequest(ctx context.Context, ws, run, key string) ([]byte, error) {
	_, body, err := c.do(ctx, http.MethodGet, taskPath(ws, run, key, "/request"), nil, nil)
	return body, err
}

// Approve approves a held row.
func (c *Client) Approve(ctx context.Context, ws, run, key string) (*TaskResponse, error) {
	out := &TaskResponse{}
	return out, c.call(ctx, http.MethodPost, taskPath(ws, run, key, "/approve"), nil, out, &out.Raw)
}

// Deny denies a held row; reason "" sends none.
func (c *Client) Deny(ctx context.Context, ws, run, key, reason string) (*TaskResponse, error) {
	var in any
	if reason != "" {
		in = map[string]string{"reason": reason}
	}
	out := &TaskResponse{}
	return out, c.call(ctx, http.MethodPost, taskPath(ws, run, key, "/deny"), in, out, &out.Raw)
}

// Inbox lists the asks and held approvals addressed to the caller.
func (c *Client) Inbox(ctx context.Context, after string, limit int) (*InboxResponse, error) {
	q := url.Values{}
	if after != "" {
		q.Set("after", after)
	}
	if limit > 0 {
		q.Set("limit", strconv.Itoa(limit))
	}
	path := "/agent_api/v1/inbox"
	if len(q) > 0 {
		path += "?" + q.Encode()
	}
	out := &InboxResponse{}
	return out, c.call(ctx, http.MethodGet, path, nil, out, &out.Raw)
}

// Models reads the models catalog page (GET /agent_api/v1/models); the body is returned as
// served.
func (c *Client) Models(ctx context.Context, query string, limit, offset int) (json.RawMessage, error) {
	q := url.Values{}
	if query != "" {
		q.Set("query", query)
	}
	if limit > 0 {
		q.Set("limit", strconv.Itoa(limit))
	}
	if offset > 0 {
		q.Set("offset", strconv.Itoa(offset))
	}
	path := "/agent_api/v1/models"
	if len(q) > 0 {
		path += "?" + q.Encode()
	}
	_, body, err := c.do(ctx, http.MethodGet, path, nil, nil)
	return body, err
}

// Instances reads GET /agent_api/v1/instances, the live instances serving the store with their
// heartbeats (an owner of a workspace; docs/api.md#instances).
func (c *Client) Instances(ctx context.Context) (json.RawMessage, error) {
	_, body, err := c.do(ctx, http.MethodGet, "/agent_api/v1/instances", nil, nil)
	return body, err
}

// Conversation is a conversation (docs/api.md#conversations).
type Conversation struct {
	PublicID               string  `json:"public_id"`
	WorkspacePublicID      string  `json:"workspace_public_id"`
	Title                  *string `json:"title"`
	AnsweringAgentPublicID string  `json:"answering_agent_public_id"`
	Status                 string  `json:"status"`
	LiveTurnPublicID       *string `json:"live_turn_public_id"`
	QueuedTurns            int     `json:"queued_turns"`
	CreatedAt              string  `json:"created_at"`
	ArchivedAt             *string `json:"archived_at"`
}

// Turn is one message posted into a conversation and the work that answers it.
type Turn struct {
	PublicID    string          `json:"public_id"`
	Position    int64           `json:"position"`
	Status      string          `json:"status"`
	Model       string          `json:"model"`
	RunPublicID string          `json:"run_public_id"`
	Input       json.RawMessage `json:"input"`
	Answer      *struct {
		TaskKey string `json:"task_key"`
		Text    string `json:"text"`
	} `json:"answer"`
	Failure *TaskError `json:"failure"`
}

// ConversationResponse answers create, read and archive.
type ConversationResponse struct {
	Raw          json.RawMessage `json:"-"`
	Conversation Conversation    `json:"conversation"`
}

// MessageResponse answers POST …/messages.
type MessageResponse struct {
	Raw      json.RawMessage `json:"-"`
	Turn     Turn            `json:"turn"`
	Run      Run             `json:"run"`
	Replayed bool            `json:"replayed"`
}

// HistoryResponse is one page of a conversation's turns.
type HistoryResponse struct {
	Raw        json.RawMessage `json:"-"`
	Turns      []Turn          `json:"turns"`
	Pagination struct {
		HasOlder           bool   `json:"has_older"`
		NextBeforePosition *int64 `json:"next_before_position"`
	} `json:"pagination"`
}

func conversationPath(ws, conv, rest string) string {
	return wsPath(ws, "/conversations/"+url.PathEscape(conv)+rest)
}

// CreateConversation creates a conversation ({"answering_agent_public_id", "title", …}).
func (c *Client) CreateConversation(ctx context.Context, ws string, conv any) (*ConversationResponse, error) {
	out := &ConversationResponse{}
	return out, c.call(ctx, http.MethodPost, wsPath(ws, "/conversations"), map[string]any{"conversation": conv}, out, &out.Raw)
}

// Conversation reads a conversation.
func (c *Client) Conversation(ctx context.Context, ws, conv string) (*ConversationResponse, error) {
	out := &ConversationResponse{}
	return out, c.call(ctx, http.MethodGet, conversationPath(ws, conv, ""), nil, out, &out.Raw)
}

// PostMessage posts a message ({"text", "tool_names"?, "model"?}); idempotencyKey "" sends none.
func (c *Client) PostMessage(ctx context.Context, ws, conv string, message any, idempotencyKey string) (*MessageResponse, error) {
	var hdr http.Header
	if idempotencyKey != "" {
		hdr = http.Header{"Idempotency-Key": {idempotencyKey}}
	}
	_, raw, err := c.do(ctx, http.MethodPost, conversationPath(ws, conv, "/messages"), map[string]any{"message": message}, hdr)
	if err != nil {
		return nil, err
	}
	out := &MessageResponse{Raw: raw}
	return out, json.Unmarshal(raw, out)
}

// History reads a page of turns; beforePosition 0 reads the newest.
func (c *Client) History(ctx context.Context, ws, conv string, beforePosition int64, limit int) (*HistoryResponse, error) {
	q := url.Values{}
	if beforePosition > 0 {
		q.Set("before_position", strconv.FormatInt(beforePosition, 10))
	}
	if limit > 0 {
		q.Set("limit", strconv.Itoa(limit))
	}
	path := conversationPath(ws, conv, "/history")
	if len(q) > 0 {
		path += "?" + q.Encode()
	}
	out := &HistoryResponse{}
	return out, c.call(ctx, http.MethodGet, path, nil, out, &out.Raw)
}

// ArchiveConversation archives a conversation.
func (c *Client) ArchiveConversation(ctx context.Context, ws, conv string) (*ConversationResponse, error) {
	out := &ConversationResponse{}
	return out, c.call(ctx, http.MethodPost, conversationPath(ws, conv, "/archive"), nil, out, &out.Raw)
}

// UnmarshalJSON reads a task, keeping an explicit structured_content null apart from an absent
// one (encoding/json would set the pointer to nil for both).
func (t *Task) UnmarshalJSON(b []byte) error {
	type plain Task
	var p plain
	if err := json.Unmarshal(b, &p); err != nil {
		return err
	}
	var keys map[string]json.RawMessage
	if err := json.Unmarshal(b, &keys); err != nil {
		return err
	}
	if sc, ok := keys["structured_content"]; ok {
		v := append(json.RawMessage(nil), sc...)
		p.StructuredContent = &v
	}
	*t = Task(p)
	return nil
}
