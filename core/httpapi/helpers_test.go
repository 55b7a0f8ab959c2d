package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nexuskernel/nexus/core/identity"
	"github.com/nexuskernel/nexus/core/store"
)

// recordedEffects is a RevocationEffects that records what a revocation asked of it, then
// passes it on to then (the push hub's, closing streams).
type recordedEffects struct {
	mu      sync.Mutex
	settled []int64
	revoked []int64
	fail    error
	then    identity.RevocationEffects
}

func (r *recordedEffects) SettleRevoked(ctx context.Context, tx *store.Tx, id int64, at time.Time) error {
	r.mu.Lock()
	if r.fail != nil {
		r.mu.Unlock()
		return r.fail
	}
	r.settled = append(r.settled, id)
	r.mu.Unlock()
	if r.then != nil {
		return r.then.SettleRevoked(ctx, tx, id, at)
	}
	return nil
}

func (r *recordedEffects) Revoked(id int64) {
	r.mu.Lock()
	r.revoked = append(r.revoked, id)
	r.mu.Unlock()
	if r.then != nil {
		r.then.Revoked(id)
	}
}

// call sends method path with token and body (a string is sent as is, anything else as JSON;
// nil sends nothing) and returns the status and the decoded JSON body (nil when empty).
func (f *fixture) call(t *testing.T, method, path, token string, body any) (int, map[string]any) {
	t.Helper()
	var r io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		r = strings.NewReader(b)
	default:
		raw, err := json.Marshal(b)
		if err != nil {
			t.Fatal(err)
		}
		r = bytes.NewReader(raw)
	}
	resp := f.do(t, method, path, token, r, nil)
	raw, _ := io.ReadAll(resp.Body)
	if len(raw) == 0 {
		return resp.StatusCode, nil
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatalf("%s %s: status %d, body %s is not a JSON object", method, path, resp.StatusCode, raw)
	}
	return resp.StatusCode, m
}

// must is call that fails the test unless the status is want.
func (f *fixture) must(t *testing.T, want int, method, path, token string, body any) map[string]any {
	t.Helper()
	status, m := f.call(t, method, path, token, body)
	if status != want {
		t.Fatalf("%s %s: status %d, want %d; body %v", method, path, status, want, m)
	}
	return m
}

// refused checks a refusal's status, word and, when path is not empty, its path.
func (f *fixture) refused(t *testing.T, status int, code, path, method, url, token string, body any) map[string]any {
	t.Helper()
	var r io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		r = strings.NewReader(b)
	default:
		raw, _ := json.Marshal(b)
		r = bytes.NewReader(raw)
	}
	e := wantError(t, f.do(t, method, url, token, r, nil), status, code)
	if path != "" && e["path"] != path {
		t.Fatalf("%s %s: path = %v, want %s", method, url, e["path"], path)
	}
	return e
}

// obj digs a nested object out of a decoded body.
func obj(t *testing.T, m map[string]any, key string) map[string]any {
	t.Helper()
	v, ok := m[key].(map[string]any)
	if !ok {
		t.Fatalf("body has no object %q: %v", key, m)
	}
	return v
}

// list digs a list of objects out of a decoded body.
func list(t *testing.T, m map[string]any, key string) []map[string]any {
	t.Helper()
	raw, ok := m[key].([]any)
	if !ok {
		t.Fatalf("body has no list %q: %v", key, m)
	}
	out := make([]map[string]any, len(raw))
	for i, v := range raw {
		out[i], ok = v.(map[string]any)
		if !ok {
			t.Fatalf("%s[%d] is not an object: %v", key, i, v)
		}
	}
	return out
}

// field collects one string field of each item.
func field(items []map[string]any, key string) []string {
	out := make([]string, len(items))
	for i, it := range items {
		out[i], _ = it[key].(string)
	}
	return out
}

// newWorkspace creates a workspace owned by the token's user and returns its public id.
func (f *fixture) newWorkspace(t *testing.T, token, handle string) string {
	t.Helper()
	m := f.must(t, 201, "POST", "/agent_api/v1/workspaces", token, map[string]any{"workspace": map[string]any{"handle": handle, "name": "WS " + handle}})
	return obj(t, m, "workspace")["public_id"].(string)
}

// newUser invites a person into ws and returns their public id and token.
func (f *fixture) newUser(t *testing.T, token, ws, handle, role string) (string, string) {
	t.Helper()
	m := f.must(t, 201, "POST", "/agent_api/v1/workspaces/"+ws+"/users", token,
		map[string]any{"user": map[string]any{"handle": handle, "display_name": "User " + handle, "role": role}})
	return obj(t, m, "user")["public_id"].(string), m["token"].(string)
}

// newAgent creates an agent in ws and returns its public id and token.
func (f *fixture) newAgent(t *testing.T, token, ws, handle string) (string, string) {
	t.Helper()
	m := f.must(t, 201, "POST", "/agent_api/v1/workspaces/"+ws+"/agents", token,
		map[string]any{"agent": map[string]any{"handle": handle, "display_name": "Agent " + handle}})
	return obj(t, m, "agent")["public_id"].(string), m["token"].(string)
}

// newExecutor creates an executor in ws and returns its public id and token.
func (f *fixture) newExecutor(t *testing.T, token, ws, kind, name string) (string, string) {
	t.Helper()
	m := f.must(t, 201, "POST", "/agent_api/v1/executors", token,
		map[string]any{"executor": map[string]any{"kind": kind, "display_name": name, "workspace_public_id": ws}})
	return obj(t, m, "executor")["public_id"].(string), m["token"].(string)
}

// wantTime checks that v is an API timestamp (RFC 3339, UTC, milliseconds).
func wantTime(t *testing.T, what string, v any) {
	t.Helper()
	s, ok := v.(string)
	if !ok {
		t.Fatalf("%s = %v, want a timestamp", what, v)
	}
	if _, err := time.Parse(store.TimeLayout, s); err != nil || len(s) != len("2025-03-01T09:00:00.000Z") {
		t.Fatalf("%s = %q, want the form 2025-03-01T09:00:00.000Z", what, s)
	}
}
