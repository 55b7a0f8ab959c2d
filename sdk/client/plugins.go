package client

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"time"
)

// PluginStatus is one plugin as GET /agent_api/v1/plugins shows it (docs/api.md#plugins); the
// fields an operator reads first, the whole entry in Raw.
type PluginStatus struct {
	Raw              json.RawMessage `json:"-"`
	Name             string          `json:"name"`
	Kind             string          `json:"kind"`
	Enabled          bool            `json:"enabled"`
	State            string          `json:"state"`
	ExecutorPublicID *string         `json:"executor_public_id"`
	Command          string          `json:"command"`
	SHA256           string          `json:"sha256"`
	PID              *int            `json:"pid"`
	Generation       int             `json:"generation"`
	Restarts         int             `json:"restarts"`
	InFlight         int             `json:"in_flight"`
	// PollFound counts the rows the inbox poll claimed that a wake-up should have announced.
	PollFound int      `json:"poll_found"`
	Tools     []string `json:"tools"`
	// DefinitionDigests are the served tools' current definition digests, which a pinned
	// import compares when the plugin claims its call.
	DefinitionDigests map[string]string `json:"definition_digests"`
	Refusal           *PluginRefusal    `json:"refusal"`
	LastError         *string           `json:"last_error"`
	// Announcement is the announcement the plugin's executor serves: its revision (0 when the
	// plugin keeps none), when it was written, and the last re-announcement refused
	// (docs/plugins.md#protocol-11).
	Announcement struct {
		Revision    uint64         `json:"revision"`
		AnnouncedAt *time.Time     `json:"announced_at"`
		Refusal     *PluginRefusal `json:"refusal"`
	} `json:"announcement"`
}

// PluginRefusal is why a plugin, or one of its re-announcements, was refused: the word, the
// offending tool or document name and path when an announcement was refused, and a message.
type PluginRefusal struct {
	Code    string `json:"code"`
	Name    string `json:"name,omitempty"`
	Path    string `json:"path,omitempty"`
	Message string `json:"message"`
}

// UnmarshalJSON keeps the entry's bytes in Raw.
func (p *PluginStatus) UnmarshalJSON(b []byte) error {
	type plain PluginStatus
	var v plain
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	*p = PluginStatus(v)
	p.Raw = append(json.RawMessage(nil), b...)
	return nil
}

// PluginsResponse is GET /agent_api/v1/plugins.
type PluginsResponse struct {
	Raw     json.RawMessage `json:"-"`
	Plugins []PluginStatus  `json:"plugins"`
}

// PluginResponse is one plugin's status (GET one, restart).
type PluginResponse struct {
	Raw    json.RawMessage `json:"-"`
	Plugin PluginStatus    `json:"plugin"`
}

// ReloadResponse is POST /agent_api/v1/plugins/reload: the catalog diff and every status after.
type ReloadResponse struct {
	Raw    json.RawMessage `json:"-"`
	Reload struct {
		Added     []string `json:"added"`
		Removed   []string `json:"removed"`
		Changed   []string `json:"changed"`
		Unchanged []string `json:"unchanged"`
		// NotApplied names the file's changed settings outside its plugin blocks, which apply
		// at the next restart.
		NotApplied []string `json:"not_applied"`
	} `json:"reload"`
	Plugins []PluginStatus `json:"plugins"`
}

// Plugins lists the catalog's plugins with their status (a workspace owner's call).
func (c *Client) Plugins(ctx context.Context) (*PluginsResponse, error) {
	out := &PluginsResponse{}
	return out, c.call(ctx, http.MethodGet, "/agent_api/v1/plugins", nil, out, &out.Raw)
}

// Plugin reads one plugin's status.
func (c *Client) Plugin(ctx context.Context, name string) (*PluginResponse, error) {
	out := &PluginResponse{}
	return out, c.call(ctx, http.MethodGet, "/agent_api/v1/plugins/"+url.PathEscape(name), nil, out, &out.Raw)
}

// ReloadPlugins makes the server read its configuration again and apply the plugin catalog.
func (c *Client) ReloadPlugins(ctx context.Context) (*ReloadResponse, error) {
	out := &ReloadResponse{}
	return out, c.call(ctx, http.MethodPost, "/agent_api/v1/plugins/reload", nil, out, &out.Raw)
}

// RestartPlugin restarts one plugin now, resetting its backoff and circuit breaker.
func (c *Client) RestartPlugin(ctx context.Context, name string) (*PluginResponse, error) {
	out := &PluginResponse{}
	return out, c.call(ctx, http.MethodPost, "/agent_api/v1/plugins/"+url.PathEscape(name)+"/restart", nil, out, &out.Raw)
}

// OverridesResponse is a workspace's tool provider override map (docs/api.md#the-memory-override).
type OverridesResponse struct {
	Raw                   json.RawMessage   `json:"-"`
	ToolProviderOverrides map[string]string `json:"tool_provider_overrides"`
	LockVersion           int64             `json:"lock_version"`
}

// ToolProviderOverrides reads a workspace's override map.
func (c *Client) ToolProviderOverrides(ctx context.Context, ws string) (*OverridesResponse, error) {
	out := &OverridesResponse{}
	return out, c.call(ctx, http.MethodGet, "/agent_api/v1/workspaces/"+url.PathEscape(ws)+"/tool_provider_overrides", nil, out, &out.Raw)
}

// PutToolProviderOverrides replaces a workspace's override map whole at the expected lock
// version; an empty map clears it.
func (c *Client) PutToolProviderOverrides(ctx context.Context, ws string, overrides map[string]string, expectedLockVersion int64) (*OverridesResponse, error) {
	if overrides == nil {
		overrides = map[string]string{}
	}
	out := &OverridesResponse{}
	body := map[string]any{"tool_provider_overrides": overrides, "expected_lock_version": expectedLockVersion}
	return out, c.call(ctx, http.MethodPut, "/agent_api/v1/workspaces/"+url.PathEscape(ws)+"/tool_provider_overrides", body, out, &out.Raw)
}
