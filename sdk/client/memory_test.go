package client

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestMemoryRequests pins what each memory call sends: the route, the query and the body, with
// both expected fields always present (null for a create).
func TestMemoryRequests(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	desc := "How we write release notes."
	v := MemoryVersion{PublicID: "p1", LockVersion: 3}
	cases := []struct {
		name string
		call func(c *Client) error
		want recorded
	}{
		{"list", func(c *Client) error { _, err := c.MemoryList(ctx, "acme", ""); return err },
			recorded{Method: "GET", Path: "/agent_api/v1/workspaces/acme/memory"}},
		{"list a prefix", func(c *Client) error { _, err := c.MemoryList(ctx, "acme", "user/a b&c"); return err },
			recorded{Method: "GET", Path: "/agent_api/v1/workspaces/acme/memory", Query: "prefix=user%2Fa+b%26c"}},
		{"show", func(c *Client) error { _, err := c.MemoryShow(ctx, "acme", "workspace/notes.md"); return err },
			recorded{Method: "POST", Path: "/agent_api/v1/workspaces/acme/memory/show", Body: map[string]any{"memory": map[string]any{"path": "workspace/notes.md"}}}},
		{"create", func(c *Client) error {
			_, err := c.MemoryWrite(ctx, "acme", &MemoryWriteRequest{Path: "workspace/notes.md", Content: "x"})
			return err
		}, recorded{Method: "POST", Path: "/agent_api/v1/workspaces/acme/memory/write", Body: map[string]any{"memory": map[string]any{
			"path": "workspace/notes.md", "content": "x", "expected_public_id": nil, "expected_lock_version": nil}}}},
		{"replace a skill", func(c *Client) error {
			_, err := c.MemoryWrite(ctx, "acme", &MemoryWriteRequest{Path: "workspace/skills/release-notes", Content: "", Description: &desc, Expected: &v})
			return err
		}, recorded{Method: "POST", Path: "/agent_api/v1/workspaces/acme/memory/write", Body: map[string]any{"memory": map[string]any{
			"path": "workspace/skills/release-notes", "content": "", "description": desc, "expected_public_id": "p1", "expected_lock_version": float64(3)}}}},
		{"edit", func(c *Client) error {
			_, err := c.MemoryEdit(ctx, "acme", &MemoryEditRequest{Path: "user/a", OldText: "x", NewText: "", Expected: v})
			return err
		}, recorded{Method: "POST", Path: "/agent_api/v1/workspaces/acme/memory/edit", Body: map[string]any{"memory": map[string]any{
			"path": "user/a", "old_text": "x", "new_text": "", "expected_public_id": "p1", "expected_lock_version": float64(3)}}}},
		{"grep", func(c *Client) error {
			_, err := c.MemoryGrep(ctx, "acme", &MemoryGrepRequest{Pattern: "a+", Prefix: "user/", IgnoreCase: true, Limit: 7})
			return err
		}, recorded{Method: "POST", Path: "/agent_api/v1/workspaces/acme/memory/grep", Body: map[string]any{"memory": map[string]any{
			"pattern": "a+", "prefix": "user/", "ignore_case": true, "limit": float64(7)}}}},
		{"grep with defaults", func(c *Client) error {
			_, err := c.MemoryGrep(ctx, "acme", &MemoryGrepRequest{Pattern: "a"})
			return err
		},
			recorded{Method: "POST", Path: "/agent_api/v1/workspaces/acme/memory/grep", Body: map[string]any{"memory": map[string]any{"pattern": "a"}}}},
		{"delete", func(c *Client) error {
			return c.MemoryDelete(ctx, "acme", &MemoryDeleteRequest{Path: "user/a", Expected: v})
		}, recorded{Method: "POST", Path: "/agent_api/v1/workspaces/acme/memory/delete", Body: map[string]any{"memory": map[string]any{
			"path": "user/a", "expected_public_id": "p1", "expected_lock_version": float64(3)}}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c, seen := fakeServer(t, 200, `{}`)
			if err := tc.call(c); err != nil {
				t.Fatal(err)
			}
			tc.want.Auth = "Bearer nxm_tok"
			if diff := cmp.Diff([]recorded{tc.want}, *seen); diff != "" {
				t.Fatalf("request (-want +got):\n%s", diff)
			}
		})
	}
}

// TestMemoryWriteCreated: a 201 answers Created, a 200 does not; the body is kept.
func TestMemoryWriteCreated(t *testing.T) {
	t.Parallel()
	body := `{"memory":{"path":"workspace/a","public_id":"p1","lock_version":1,"bytesize":1,"description":null,"written_at":"2030-01-15T09:00:00.123Z"}}`
	for status, created := range map[int]bool{201: true, 200: false} {
		c, _ := fakeServer(t, status, body)
		res, err := c.MemoryWrite(context.Background(), "acme", &MemoryWriteRequest{Path: "workspace/a", Content: "x"})
		if err != nil {
			t.Fatal(err)
		}
		if res.Created != created || string(res.Raw) != body || res.Memory.PublicID != "p1" || res.Memory.Description != nil {
			t.Fatalf("status %d: %+v", status, res)
		}
	}
}
