package client

import (
	"context"
	"encoding/json"
	"net/http"
)

// ResolutionResponse answers the resolution door: the ask await as it stands, and whether
// this answer settled it (false for a second answer, or one after the deadline).
type ResolutionResponse struct {
	Raw     json.RawMessage `json:"-"`
	Task    Task            `json:"task"`
	Applied bool            `json:"applied"`
}

// Resolve answers an ask (docs/api.md#tasks-and-decisions) by the await's key or its call's; result
// is the result envelope, for example {"content": "…"} or {"content": "…", "outcome": "failed"}.
func (c *Client) Resolve(ctx context.Context, ws, run, key string, result any) (*ResolutionResponse, error) {
	out := &ResolutionResponse{}
	return out, c.call(ctx, http.MethodPost, taskPath(ws, run, key, "/resolution"), result, out, &out.Raw)
}

// CancelBranch cancels a delegate_task branch (docs/api.md#tasks-and-decisions) by its call's key
// or any of its rounds; it answers the branch's first round.
func (c *Client) CancelBranch(ctx context.Context, ws, run, key string) (*TaskResponse, error) {
	out := &TaskResponse{}
	return out, c.call(ctx, http.MethodPost, taskPath(ws, run, key, "/cancel"), nil, out, &out.Raw)
}
