package client

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/nexuskernel/nexus/sdk/announce"
)

// The executor plane's work calls (docs/api.md#the-executor-plane), made with an executor token:
// announce what the executor serves, read its inbox, claim a row, read a claim, extend it, commit
// the result. Together with StageCapture, Capture and Events they are everything a runner needs.

// AnnouncementResponse answers PUT and GET /agent_api/v1/executor/announcement.
type AnnouncementResponse struct {
	Raw          json.RawMessage `json:"-"`
	Executor     Executor        `json:"executor"`
	Announcement struct {
		Tools       []announce.Tool     `json:"tools"`
		Environment json.RawMessage     `json:"environment"`
		Documents   []announce.Document `json:"documents"`
		AnnouncedAt *time.Time          `json:"announced_at"`
	} `json:"announcement"`
}

// Announce replaces the executor's whole announcement. A refusal is *Error with the first
// failure's code (reserved_namespace, invalid_announcement, validation_failed), path and name,
// and every failure in Extra["errors"]; nothing of a refused announcement is stored.
func (c *Client) Announce(ctx context.Context, a announce.Announcement) (*AnnouncementResponse, error) {
	body := map[string]any{"tools": a.Tools}
	if a.Tools == nil {
		body["tools"] = []announce.Tool{}
	}
	if a.Environment != nil {
		body["environment"] = a.Environment
	}
	if a.Documents != nil {
		body["documents"] = a.Documents
	}
	out := &AnnouncementResponse{}
	return out, c.call(ctx, http.MethodPut, "/agent_api/v1/executor/announcement", body, out, &out.Raw)
}

// AnnounceRaw sends body as the announcement, verbatim: for callers that build their own JSON.
func (c *Client) AnnounceRaw(ctx context.Context, body json.RawMessage) (*AnnouncementResponse, error) {
	out := &AnnouncementResponse{}
	return out, c.call(ctx, http.MethodPut, "/agent_api/v1/executor/announcement", body, out, &out.Raw)
}

// Announcement reads the executor's current announcement.
func (c *Client) Announcement(ctx context.Context) (*AnnouncementResponse, error) {
	out := &AnnouncementResponse{}
	return out, c.call(ctx, http.MethodGet, "/agent_api/v1/executor/announcement", nil, out, &out.Raw)
}

// WorkRow is a tool row as the executor plane serves it: in the inbox, and as the task of claim,
// extend and commit answers (docs/api.md#the-executor-plane). Clients skip kinds other than
// "tool_call".
type WorkRow struct {
	Kind                 string          `json:"kind"`
	Status               string          `json:"status"`
	RunPublicID          string          `json:"run_public_id"`
	WorkspacePublicID    string          `json:"workspace_public_id"`
	ConversationPublicID *string         `json:"conversation_public_id"`
	TaskKey              string          `json:"task_key"`
	ToolName             string          `json:"tool_name"`
	ToolAlias            string          `json:"tool_alias,omitempty"`
	ToolInput            json.RawMessage `json:"tool_input"`
	ToolCallID           string          `json:"tool_call_id,omitempty"`
	EffectProfile        json.RawMessage `json:"effect_profile"`
	Scope                json.RawMessage `json:"scope,omitempty"`
	AddressedTo          json.RawMessage `json:"addressed_to"`
	Target               json.RawMessage `json:"target,omitempty"`
	DispatchedAt         *time.Time      `json:"dispatched_at"`
	DeadlineAt           *time.Time      `json:"deadline_at"`
	TimeoutMS            int64           `json:"timeout_ms"`
	Claimed              bool            `json:"claimed"`
	ClaimGeneration      int64           `json:"claim_generation"`
	Error                *TaskError      `json:"error,omitempty"`
}

// WorkInboxResponse is one page of GET /agent_api/v1/executor/inbox.
type WorkInboxResponse struct {
	Raw        json.RawMessage `json:"-"`
	Tasks      []WorkRow       `json:"tasks"`
	Pagination struct {
		NextAfter *string `json:"next_after"`
	} `json:"pagination"`
}

// WorkInbox reads one page of the executor's inbox: the dispatched rows it may take now.
// after is the previous page's next_after ("" for the first page); limit 0 means the default.
func (c *Client) WorkInbox(ctx context.Context, after string, limit int) (*WorkInboxResponse, error) {
	q := url.Values{}
	if after != "" {
		q.Set("after", after)
	}
	if limit > 0 {
		q.Set("limit", strconv.Itoa(limit))
	}
	path := "/agent_api/v1/executor/inbox"
	if len(q) > 0 {
		path += "?" + q.Encode()
	}
	out := &WorkInboxResponse{}
	return out, c.call(ctx, http.MethodGet, path, nil, out, &out.Raw)
}

// Claim is a held claim. The token is shown once, to the claimant; keep it for extend and
// commit.
type Claim struct {
	ClaimToken string    `json:"claim_token"`
	Generation int64     `json:"generation"`
	DeadlineAt time.Time `json:"deadline_at"`
}

// ClaimResponse answers claim and extend.
type ClaimResponse struct {
	Raw   json.RawMessage `json:"-"`
	Task  WorkRow         `json:"task"`
	Claim Claim           `json:"claim"`
}

func workPath(runPublicID, taskKey, verb string) string {
	return "/agent_api/v1/executor/inbox/" + url.PathEscape(runPublicID) + "/" + url.PathEscape(taskKey) + "/" + verb
}

// ClaimWork claims a row. 409 already_claimed when another claimant won; 429 rate_limited
// (with RetryAfter) over the claim rate.
func (c *Client) ClaimWork(ctx context.Context, runPublicID, taskKey string) (*ClaimResponse, error) {
	out := &ClaimResponse{}
	return out, c.call(ctx, http.MethodPost, workPath(runPublicID, taskKey, "claim"), nil, out, &out.Raw)
}

// ClaimStatusResponse answers the claim read.
type ClaimStatusResponse struct {
	Raw   json.RawMessage `json:"-"`
	Claim struct {
		Active     bool       `json:"active"`
		Generation int64      `json:"generation"`
		DeadlineAt *time.Time `json:"deadline_at"`
	} `json:"claim"`
}

// ClaimStatus tells whether a claim still stands; it renews nothing.
func (c *Client) ClaimStatus(ctx context.Context, runPublicID, taskKey, claimToken string) (*ClaimStatusResponse, error) {
	out := &ClaimStatusResponse{}
	_, body, err := c.do(ctx, http.MethodGet, workPath(runPublicID, taskKey, "claim"), nil, http.Header{"Claim-Token": {claimToken}})
	if err != nil {
		return nil, err
	}
	out.Raw = body
	return out, json.Unmarshal(body, out)
}

// ExtendClaim moves the claim's deadline to now + timeout (at most an hour and at most the
// tool's announced timeout_ms).
func (c *Client) ExtendClaim(ctx context.Context, runPublicID, taskKey, claimToken string, timeout time.Duration) (*ClaimResponse, error) {
	out := &ClaimResponse{}
	body := map[string]any{"claim_token": claimToken, "timeout_ms": timeout.Milliseconds()}
	return out, c.call(ctx, http.MethodPost, workPath(runPublicID, taskKey, "extend"), body, out, &out.Raw)
}

// ContentBlock is one block of a result's content: a text block or a resource_link to a
// capture (docs/api.md#the-result-envelope).
type ContentBlock struct {
	Type        string `json:"type"`
	Text        string `json:"text,omitempty"`
	URI         string `json:"uri,omitempty"`
	Name        string `json:"name,omitempty"`
	MimeType    string `json:"mimeType,omitempty"`
	Size        *int64 `json:"size,omitempty"`
	Title       string `json:"title,omitempty"`
	Description string `json:"description,omitempty"`
}

// MarshalJSON keeps a text block's text even when empty.
func (b ContentBlock) MarshalJSON() ([]byte, error) {
	type plain ContentBlock
	if b.Type == "text" {
		return json.Marshal(struct {
			Type string `json:"type"`
			Text string `json:"text"`
		}{b.Type, b.Text})
	}
	return json.Marshal(plain(b))
}

// TextBlock is a text block.
func TextBlock(text string) ContentBlock { return ContentBlock{Type: "text", Text: text} }

// LinkBlock is a resource_link to a capture the committing executor staged.
func LinkBlock(capture *Upload, name string) ContentBlock {
	return ContentBlock{Type: "resource_link", URI: capture.URI(), Name: name}
}

// Result is a commit's result envelope (docs/api.md#the-result-envelope). Content is a string or a
// list of blocks; nil sends none. StructuredContent is sent verbatim when set
// (json.RawMessage("null") and ("false") included). Outcome "" means completed.
type Result struct {
	Content           any             `json:"content,omitempty"`
	StructuredContent json.RawMessage `json:"structured_content,omitempty"`
	IsError           bool            `json:"is_error,omitempty"`
	Outcome           string          `json:"outcome,omitempty"`
	Title             string          `json:"title,omitempty"`
	Metadata          json.RawMessage `json:"metadata,omitempty"`
}

// CommitResponse answers a commit: the row as it now stands and whether this commit settled it
// (false for a repeat and when the deadline won).
type CommitResponse struct {
	Raw     json.RawMessage `json:"-"`
	Task    WorkRow         `json:"task"`
	Applied bool            `json:"applied"`
}

// Commit answers a claimed row once. A grammar refusal (422 with the envelope's word) leaves the
// park standing for a corrected commit; 422 result_unstorable closes it as failed. Retrying a
// transport failure with the same token is safe.
func (c *Client) Commit(ctx context.Context, runPublicID, taskKey, claimToken string, r *Result) (*CommitResponse, error) {
	body := struct {
		ClaimToken string `json:"claim_token"`
		*Result
	}{claimToken, r}
	if r == nil {
		body.Result = &Result{}
	}
	out := &CommitResponse{}
	return out, c.call(ctx, http.MethodPost, workPath(runPublicID, taskKey, "commit"), body, out, &out.Raw)
}

// CommitRaw sends body as the commit, verbatim (it must carry claim_token itself).
func (c *Client) CommitRaw(ctx context.Context, runPublicID, taskKey string, body json.RawMessage) (*CommitResponse, error) {
	out := &CommitResponse{}
	return out, c.call(ctx, http.MethodPost, workPath(runPublicID, taskKey, "commit"), body, out, &out.Raw)
}
