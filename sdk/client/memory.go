package client

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"time"
)

// MemoryDocument is a memory document as the member doors show it: kernel memory's, or the
// workspace's memory plugin's when its override names one (PublicID is then the plugin's id of
// the document, "" for a plugin before protocol 1.3).
type MemoryDocument struct {
	// Path is the logical path, <root>/<name>: workspace/… or user/….
	Path     string `json:"path"`
	PublicID string `json:"public_id"`
	// LockVersion is 1 on create and advances with each replace or edit; send it back as
	// ExpectedLockVersion to change the document.
	LockVersion int64 `json:"lock_version"`
	Bytesize    int64 `json:"bytesize"`
	// Description is set on skill documents (under skills/) only.
	Description *string   `json:"description"`
	WrittenAt   time.Time `json:"written_at"`
	// Content is served by MemoryShow only.
	Content *string `json:"content,omitempty"`
}

// MemoryListResponse is GET /agent_api/v1/workspaces/{ws}/memory.
type MemoryListResponse struct {
	// Raw is the response body as served.
	Raw    json.RawMessage  `json:"-"`
	Memory []MemoryDocument `json:"memory"`
}

// MemoryResponse carries one document.
type MemoryResponse struct {
	// Raw is the response body as served.
	Raw    json.RawMessage `json:"-"`
	Memory MemoryDocument  `json:"memory"`
	// Created is true when a write created the document (201) rather than replaced it.
	Created bool `json:"-"`
}

// MemoryVersion names the document a conditional change expects: the public id and lock
// version last read. A nil *MemoryVersion on a write expects no document (a create).
type MemoryVersion struct {
	PublicID    string
	LockVersion int64
}

// expected is the wire form of a condition: both fields always sent, null for a create.
type expected struct {
	PublicID    *string `json:"expected_public_id"`
	LockVersion *int64  `json:"expected_lock_version"`
}

func expectedOf(v *MemoryVersion) expected {
	if v == nil {
		return expected{}
	}
	id, lv := v.PublicID, v.LockVersion
	return expected{PublicID: &id, LockVersion: &lv}
}

// MemoryWriteRequest creates or wholly replaces a document.
type MemoryWriteRequest struct {
	Path    string
	Content string
	// Description is required for a skill (a path under skills/) and refused elsewhere.
	Description *string
	// Expected is nil to create, or the version being replaced.
	Expected *MemoryVersion
}

// MemoryEditRequest replaces the one occurrence of OldText in the expected document.
type MemoryEditRequest struct {
	Path     string
	OldText  string
	NewText  string
	Expected MemoryVersion
}

// MemoryDeleteRequest deletes the expected document.
type MemoryDeleteRequest struct {
	Path     string
	Expected MemoryVersion
}

// MemoryGrepRequest searches documents line by line with an RE2 pattern.
type MemoryGrepRequest struct {
	Pattern string `json:"pattern"`
	// Prefix narrows the search: a root (workspace/) or a longer name prefix; empty searches
	// both roots.
	Prefix     string `json:"prefix,omitempty"`
	IgnoreCase bool   `json:"ignore_case,omitempty"`
	// Limit is 1 to 500; zero lets the server use its default of 100.
	Limit int `json:"limit,omitempty"`
}

// MemoryMatch is one matching line.
type MemoryMatch struct {
	Path       string `json:"path"`
	LineNumber int    `json:"line_number"`
	Text       string `json:"text"`
}

// MemoryGrepResponse is a grep's matches; Truncated says more exist beyond the limit.
type MemoryGrepResponse struct {
	// Raw is the response body as served.
	Raw       json.RawMessage `json:"-"`
	Matches   []MemoryMatch   `json:"matches"`
	Truncated bool            `json:"truncated"`
}

// MemoryList lists the documents of a workspace's workspace/ root and of the caller's user/
// root under prefix ("" lists both).
func (c *Client) MemoryList(ctx context.Context, ws, prefix string) (*MemoryListResponse, error) {
	out := &MemoryListResponse{}
	path := wsPath(ws, "/memory")
	if prefix != "" {
		path += "?prefix=" + url.QueryEscape(prefix)
	}
	return out, c.call(ctx, http.MethodGet, path, nil, out, &out.Raw)
}

// MemoryShow reads one document with its content.
func (c *Client) MemoryShow(ctx context.Context, ws, path string) (*MemoryResponse, error) {
	out := &MemoryResponse{}
	body := map[string]any{"memory": map[string]any{"path": path}}
	return out, c.call(ctx, http.MethodPost, wsPath(ws, "/memory/show"), body, out, &out.Raw)
}

// MemoryWrite creates or replaces a document.
func (c *Client) MemoryWrite(ctx context.Context, ws string, req *MemoryWriteRequest) (*MemoryResponse, error) {
	in := struct {
		Path        string  `json:"path"`
		Content     string  `json:"content"`
		Description *string `json:"description,omitempty"`
		expected
	}{req.Path, req.Content, req.Description, expectedOf(req.Expected)}
	out := &MemoryResponse{}
	resp, body, err := c.do(ctx, http.MethodPost, wsPath(ws, "/memory/write"), map[string]any{"memory": in}, nil)
	if err != nil {
		return out, err
	}
	out.Raw, out.Created = body, resp.StatusCode == http.StatusCreated
	return out, json.Unmarshal(body, out)
}

// MemoryEdit replaces one passage of a document.
func (c *Client) MemoryEdit(ctx context.Context, ws string, req *MemoryEditRequest) (*MemoryResponse, error) {
	in := struct {
		Path    string `json:"path"`
		OldText string `json:"old_text"`
		NewText string `json:"new_text"`
		expected
	}{req.Path, req.OldText, req.NewText, expectedOf(&req.Expected)}
	out := &MemoryResponse{}
	return out, c.call(ctx, http.MethodPost, wsPath(ws, "/memory/edit"), map[string]any{"memory": in}, out, &out.Raw)
}

// MemoryGrep searches documents.
func (c *Client) MemoryGrep(ctx context.Context, ws string, req *MemoryGrepRequest) (*MemoryGrepResponse, error) {
	out := &MemoryGrepResponse{}
	return out, c.call(ctx, http.MethodPost, wsPath(ws, "/memory/grep"), map[string]any{"memory": req}, out, &out.Raw)
}

// MemoryDelete deletes a document.
func (c *Client) MemoryDelete(ctx context.Context, ws string, req *MemoryDeleteRequest) error {
	in := struct {
		Path string `json:"path"`
		expected
	}{req.Path, expectedOf(&req.Expected)}
	return c.call(ctx, http.MethodPost, wsPath(ws, "/memory/delete"), map[string]any{"memory": in}, nil, nil)
}
