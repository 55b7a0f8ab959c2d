package client

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// recorded is one request the fake server saw.
type recorded struct {
	Method, Path, Query, Auth string
	Body                      any
}

// fakeServer answers every request with status and body and records it.
func fakeServer(t *testing.T, status int, body string) (*Client, *[]recorded) {
	t.Helper()
	var seen []recorded
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		raw, _ := io.ReadAll(r.Body)
		rec := recorded{Method: r.Method, Path: r.URL.EscapedPath(), Query: r.URL.RawQuery, Auth: r.Header.Get("Authorization")}
		if len(raw) > 0 {
			if err := json.Unmarshal(raw, &rec.Body); err != nil {
				t.Errorf("request body %q is not JSON", raw)
			}
		}
		seen = append(seen, rec)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_, _ = io.WriteString(w, body)
	}))
	t.Cleanup(srv.Close)
	return New(srv.URL, "nxm_tok"), &seen
}

func TestRequests(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	exp := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	cases := []struct {
		name string
		call func(c *Client) error
		want recorded
	}{
		{"me", func(c *Client) error { _, err := c.Me(ctx); return err }, recorded{Method: "GET", Path: "/agent_api/v1/me"}},
		{"workspaces", func(c *Client) error { _, err := c.Workspaces(ctx); return err }, recorded{Method: "GET", Path: "/agent_api/v1/workspaces"}},
		{"create workspace", func(c *Client) error {
			_, err := c.CreateWorkspace(ctx, &CreateWorkspaceRequest{Handle: "acme", Name: "Acme"})
			return err
		}, recorded{Method: "POST", Path: "/agent_api/v1/workspaces", Body: map[string]any{"workspace": map[string]any{"handle": "acme", "name": "Acme"}}}},
		{"workspace", func(c *Client) error { _, err := c.Workspace(ctx, "a/b"); return err }, recorded{Method: "GET", Path: "/agent_api/v1/workspaces/a%2Fb"}},
		{"create agent", func(c *Client) error {
			_, err := c.CreateAgent(ctx, "acme", &CreateAgentRequest{Handle: "bot", DisplayName: "Bot"})
			return err
		}, recorded{Method: "POST", Path: "/agent_api/v1/workspaces/acme/agents", Body: map[string]any{"agent": map[string]any{"handle": "bot", "display_name": "Bot"}}}},
		{"agents", func(c *Client) error { _, err := c.Agents(ctx, "acme"); return err }, recorded{Method: "GET", Path: "/agent_api/v1/workspaces/acme/agents"}},
		{"create user", func(c *Client) error {
			_, err := c.CreateUser(ctx, "acme", &CreateUserRequest{Handle: "al", DisplayName: "Al", Role: "owner"})
			return err
		}, recorded{Method: "POST", Path: "/agent_api/v1/workspaces/acme/users", Body: map[string]any{"user": map[string]any{"handle": "al", "display_name": "Al", "role": "owner"}}}},
		{"members", func(c *Client) error { _, err := c.Members(ctx, "acme"); return err }, recorded{Method: "GET", Path: "/agent_api/v1/workspaces/acme/members"}},
		{"add member", func(c *Client) error {
			_, err := c.AddMember(ctx, "acme", &AddMemberRequest{UserPublicID: "u1", Role: "member"})
			return err
		}, recorded{Method: "POST", Path: "/agent_api/v1/workspaces/acme/members", Body: map[string]any{"member": map[string]any{"user_public_id": "u1", "role": "member"}}}},
		{"remove member", func(c *Client) error { return c.RemoveMember(ctx, "acme", "u1") }, recorded{Method: "DELETE", Path: "/agent_api/v1/workspaces/acme/members/u1"}},
		{"create token", func(c *Client) error {
			_, err := c.CreateToken(ctx, &CreateTokenRequest{Label: "ci", ExpiresAt: &exp})
			return err
		}, recorded{Method: "POST", Path: "/agent_api/v1/tokens", Body: map[string]any{"token": map[string]any{"label": "ci", "expires_at": "2026-01-02T03:04:05Z"}}}},
		{"create token, no body", func(c *Client) error { _, err := c.CreateToken(ctx, nil); return err }, recorded{Method: "POST", Path: "/agent_api/v1/tokens"}},
		{"tokens", func(c *Client) error { _, err := c.Tokens(ctx); return err }, recorded{Method: "GET", Path: "/agent_api/v1/tokens"}},
		{"revoke token", func(c *Client) error { return c.RevokeToken(ctx, "t1") }, recorded{Method: "DELETE", Path: "/agent_api/v1/tokens/t1"}},
		{"revoke current", func(c *Client) error { return c.RevokeCurrentToken(ctx) }, recorded{Method: "DELETE", Path: "/agent_api/v1/tokens/current"}},
		{"create executor", func(c *Client) error {
			_, err := c.CreateExecutor(ctx, &CreateExecutorRequest{Kind: "runner", DisplayName: "laptop"})
			return err
		}, recorded{Method: "POST", Path: "/agent_api/v1/executors", Body: map[string]any{"executor": map[string]any{"kind": "runner", "display_name": "laptop"}}}},
		{"executors", func(c *Client) error {
			_, err := c.Executors(ctx, &ListExecutorsRequest{Kind: "runner", Status: "revoked", Workspace: "acme"})
			return err
		}, recorded{Method: "GET", Path: "/agent_api/v1/executors", Query: "kind=runner&status=revoked&workspace=acme"}},
		{"executors, unfiltered", func(c *Client) error { _, err := c.Executors(ctx, nil); return err }, recorded{Method: "GET", Path: "/agent_api/v1/executors"}},
		{"executor", func(c *Client) error { _, err := c.Executor(ctx, "e1"); return err }, recorded{Method: "GET", Path: "/agent_api/v1/executors/e1"}},
		{"rotate", func(c *Client) error { _, err := c.RotateExecutorToken(ctx, "e1"); return err }, recorded{Method: "POST", Path: "/agent_api/v1/executors/e1/token"}},
		{"revoke executor", func(c *Client) error { _, err := c.RevokeExecutor(ctx, "e1"); return err }, recorded{Method: "DELETE", Path: "/agent_api/v1/executors/e1"}},
		{"executor identity", func(c *Client) error { _, err := c.ExecutorIdentity(ctx); return err }, recorded{Method: "GET", Path: "/agent_api/v1/executor"}},
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

func TestResponsesKeepTheirBytes(t *testing.T) {
	t.Parallel()
	body := `{"executor":{"public_id":"e1","kind":"runner","status":"active","display_name":"laptop","workspace_public_id":"w1",` +
		`"created_at":"2025-03-01T09:00:00.000Z","presence":"online","last_seen_at":"2025-03-01T09:29:58.000Z","connected_at":null},` +
		`"measured_at":"2025-03-01T09:30:00.000Z"}`
	c, _ := fakeServer(t, 200, body)
	res, err := c.ExecutorIdentity(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if string(res.Raw) != body {
		t.Fatalf("Raw = %s", res.Raw)
	}
	want := time.Date(2025, 3, 1, 9, 30, 0, 0, time.UTC)
	if !res.MeasuredAt.Equal(want) || res.Executor.DisplayName != "laptop" || res.Executor.LastSeenAt == nil || res.Executor.ConnectedAt != nil {
		t.Fatalf("decoded = %+v", res)
	}
}

func TestRefusalsAreErrors(t *testing.T) {
	t.Parallel()
	c, _ := fakeServer(t, 409, `{"error":{"code":"last_owner","message":"A workspace keeps an owner.","path":"member"}}`)
	err := c.RemoveMember(context.Background(), "acme", "u1")
	var ce *Error
	if !errors.As(err, &ce) {
		t.Fatalf("err = %v, want *Error", err)
	}
	if ce.Status != 409 || ce.Code != "last_owner" || ce.Message != "A workspace keeps an owner." || string(ce.Extra["path"]) != `"member"` {
		t.Fatalf("error = %+v", ce)
	}
}
