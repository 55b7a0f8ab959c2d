package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/nexuskernel/nexus/core/executors"
	"github.com/nexuskernel/nexus/core/identity"
	"github.com/nexuskernel/nexus/core/memory"
	"github.com/nexuskernel/nexus/core/profiles"
	"github.com/nexuskernel/nexus/core/registry"
	"github.com/nexuskernel/nexus/core/store"
	"github.com/nexuskernel/nexus/core/store/storetest"
	"github.com/nexuskernel/nexus/core/uploads"
)

// fixture is an API over a fresh bootstrapped store of one dialect.
type fixture struct {
	api   *API
	store *store.Store
	auth  *identity.Authenticator
	dir   *identity.Directory
	// profiles is the profile service over the live kernel registry.
	profiles *profiles.Service
	admin    string // the bootstrap user's token
	agent    string // an agent's token

	uploads *uploads.Service
	push    *executors.Hub

	mu      sync.Mutex
	now     time.Time
	effects recordedEffects
}

// testPingInterval replaces the stream's 15-second ping so that a test sees pings quickly.
const testPingInterval = 200 * time.Millisecond

func newFixture(t *testing.T, s *store.Store) *fixture {
	t.Helper()
	ctx := context.Background()
	res, err := identity.Bootstrap(ctx, s, t.TempDir(), "", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	agentTok := insertAgent(t, s)
	f := &fixture{store: s, admin: res.Token, agent: agentTok, now: time.Now()}
	clock := func() time.Time {
		f.mu.Lock()
		defer f.mu.Unlock()
		return f.now
	}
	f.auth = identity.NewAuthenticator(s, clock)
	stop, err := f.auth.Listen(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	f.push = executors.NewHub(s, executors.HubOptions{Now: clock, PingInterval: testPingInterval})
	if err := f.push.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(f.push.Close)
	f.effects.then = executors.NewRevocation(f.push, nil, nil)
	f.uploads, err = uploads.New(s, uploads.Options{DetectContentType: http.DetectContentType, Now: clock})
	if err != nil {
		t.Fatal(err)
	}
	f.dir = identity.NewDirectory(s, f.auth, identity.DirectoryOptions{Now: clock, Revocation: &f.effects})
	doors := memory.NewDoors(memory.New(s), memory.NewResolver(s, nil), memory.DoorsOptions{Now: clock})
	f.profiles = newProfiles(t, s, registry.New(), clock)
	api, err := New(Deps{Auth: f.auth, Directory: f.dir, CatalogBody: registry.New().CatalogBody(), Now: clock, Profiles: f.profiles, Memory: doors,
		Uploads: f.uploads, Push: f.push})
	if err != nil {
		t.Fatal(err)
	}
	f.api = api
	return f
}

// advance moves the fixture's clock.
func (f *fixture) advance(d time.Duration) {
	f.mu.Lock()
	f.now = f.now.Add(d)
	f.mu.Unlock()
}

// insertAgent stores an agent in the default workspace with a token, as the identity routes will.
func insertAgent(t *testing.T, s *store.Store) string {
	t.Helper()
	ctx := context.Background()
	secret, hash := identity.MintToken(identity.MemberPlane)
	err := s.Write(ctx, func(tx *store.Tx) error {
		var wsID, userID int64
		if err := tx.Get(ctx, &wsID, `SELECT id FROM workspaces WHERE handle = 'default'`); err != nil {
			return err
		}
		if err := tx.Get(ctx, &userID, `SELECT id FROM users WHERE handle = 'admin'`); err != nil {
			return err
		}
		var agentID int64
		if err := tx.Get(ctx, &agentID, `INSERT INTO agents (public_id, workspace_id, handle, display_name, steward_user_id, created_at) VALUES (?, ?, 'bot', 'Bot', ?, 0) RETURNING id`,
			store.NewPublicID(), wsID, userID); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `INSERT INTO tokens (public_id, secret_hash, agent_id, created_at) VALUES (?, ?, ?, 0)`, store.NewPublicID(), hash, agentID)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return secret
}

func (f *fixture) do(t *testing.T, method, path, token string, body io.Reader, hdr map[string]string) *http.Response {
	t.Helper()
	req := httptest.NewRequest(method, path, body)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	rec := httptest.NewRecorder()
	f.api.ServeHTTP(rec, req)
	return rec.Result()
}

type errorEnvelope struct {
	Error map[string]any `json:"error"`
}

// wantError checks a refusal's status, code and JSON envelope.
func wantError(t *testing.T, resp *http.Response, status int, code string) map[string]any {
	t.Helper()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != status {
		t.Fatalf("status = %d, want %d; body %s", resp.StatusCode, status, b)
	}
	if ct := resp.Header.Get("Content-Type"); ct != "application/json; charset=utf-8" {
		t.Errorf("Content-Type = %q", ct)
	}
	var eb errorEnvelope
	if err := json.Unmarshal(b, &eb); err != nil {
		t.Fatalf("body %s: %v", b, err)
	}
	if eb.Error["code"] != code {
		t.Fatalf("code = %v, want %s; body %s", eb.Error["code"], code, b)
	}
	if m, _ := eb.Error["message"].(string); m == "" {
		t.Errorf("refusal without a message: %s", b)
	}
	if resp.Header.Get("X-Request-Id") == "" {
		t.Error("no X-Request-Id")
	}
	return eb.Error
}

func TestUnknownRouteIsNotFoundBeforeAuth(t *testing.T) {
	t.Parallel()
	f := newFixture(t, storetest.Open(t, store.SQLite))
	for _, path := range []string{"/agent_api/v1/nope", "/", "/agent_api/v1/executor/nope", "/agent_api/v1/tools/x"} {
		wantError(t, f.do(t, "GET", path, "", nil, nil), 404, "not_found")
	}
}

func TestWrongMethod(t *testing.T) {
	t.Parallel()
	f := newFixture(t, storetest.Open(t, store.SQLite))
	resp := f.do(t, "POST", "/agent_api/v1/tools", "", nil, nil)
	wantError(t, resp, 405, "method_not_allowed")
	if allow := resp.Header.Get("Allow"); !strings.Contains(allow, "GET") {
		t.Errorf("Allow = %q, want GET listed", allow)
	}
	wantError(t, f.do(t, "DELETE", "/healthz", "", nil, nil), 405, "method_not_allowed")
}

func TestPlanesAreSealed(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		f := newFixture(t, s)
		exec, _ := identity.MintToken(identity.ExecutorPlane)
		unknown, _ := identity.MintToken(identity.MemberPlane)
		for name, tok := range map[string]string{"none": "", "executor": exec, "unknown": unknown, "malformed": "nxm_short"} {
			resp := f.do(t, "GET", "/agent_api/v1/tools", tok, nil, nil)
			wantError(t, resp, 401, "unauthorized")
			if resp.Header.Get("WWW-Authenticate") != "Bearer" {
				t.Errorf("%s token: WWW-Authenticate = %q, want Bearer", name, resp.Header.Get("WWW-Authenticate"))
			}
		}
		// A non-Bearer scheme is no token at all.
		wantError(t, f.do(t, "GET", "/agent_api/v1/tools", "", nil, map[string]string{"Authorization": "Basic " + f.admin}), 401, "unauthorized")
	})
}

func TestPlaneOf(t *testing.T) {
	t.Parallel()
	cases := map[string]plane{
		"/agent_api/v1/executor":              planeExecutor,
		"/agent_api/v1/executor/inbox":        planeExecutor,
		"/agent_api/v1/executors":             planeMember,
		"/agent_api/v1/executors/{public_id}": planeMember,
		"/agent_api/v1/executorx":             planeMember,
		"/agent_api/v1/tools":                 planeMember,
		"/healthz":                            planeNone,
	}
	for path, want := range cases {
		if got := planeOf(path); got != want {
			t.Errorf("planeOf(%q) = %v, want %v", path, got, want)
		}
	}
}

func TestBodyBound(t *testing.T) {
	t.Parallel()
	f := newFixture(t, storetest.Open(t, store.SQLite))
	var saw []byte
	f.api.handle("POST /agent_api/v1/echo", routeOpts{bodyLimit: 16}, func(w http.ResponseWriter, r *http.Request, c *Call) error {
		saw = c.Body
		w.WriteHeader(http.StatusNoContent)
		return nil
	})
	// Over the bound: 413 before authentication (no token sent).
	wantError(t, f.do(t, "POST", "/agent_api/v1/echo", "", strings.NewReader(strings.Repeat("x", 17)), nil), 413, "content_too_large")
	// Without a Content-Length the bound is found while reading, which only a caller with a
	// token gets to: the anonymous one is 401 with no byte of its body read.
	for _, c := range []struct {
		token  string
		status int
		code   string
	}{{"", 401, "unauthorized"}, {f.admin, 413, "content_too_large"}} {
		req := httptest.NewRequest("POST", "/agent_api/v1/echo", io.MultiReader(strings.NewReader(strings.Repeat("y", 40))))
		req.ContentLength = -1
		if c.token != "" {
			req.Header.Set("Authorization", "Bearer "+c.token)
		}
		rec := httptest.NewRecorder()
		f.api.ServeHTTP(rec, req)
		wantError(t, rec.Result(), c.status, c.code)
		if rec.Result().Header.Get("Connection") != "close" {
			t.Errorf("token %q: an answer before the body is read keeps the connection", c.token)
		}
	}
	// At the bound: authenticated, then handled.
	resp := f.do(t, "POST", "/agent_api/v1/echo", f.admin, strings.NewReader(strings.Repeat("z", 16)), nil)
	if resp.StatusCode != 204 || string(saw) != strings.Repeat("z", 16) {
		t.Fatalf("status %d, body seen %q", resp.StatusCode, saw)
	}
	// Under the bound without a token: 401.
	wantError(t, f.do(t, "POST", "/agent_api/v1/echo", "", strings.NewReader("{}"), nil), 401, "unauthorized")
}

func TestDefaultBodyBoundIsOneMiB(t *testing.T) {
	t.Parallel()
	f := newFixture(t, storetest.Open(t, store.SQLite))
	f.api.handle("POST /agent_api/v1/echo", routeOpts{}, func(w http.ResponseWriter, r *http.Request, c *Call) error {
		w.WriteHeader(http.StatusNoContent)
		return nil
	})
	wantError(t, f.do(t, "POST", "/agent_api/v1/echo", f.admin, bytes.NewReader(make([]byte, 1<<20+1)), nil), 413, "content_too_large")
	if resp := f.do(t, "POST", "/agent_api/v1/echo", f.admin, bytes.NewReader(make([]byte, 1<<20)), nil); resp.StatusCode != 204 {
		t.Fatalf("a body of exactly 1 MiB: status %d", resp.StatusCode)
	}
}

func TestPanicIsInternalError(t *testing.T) {
	t.Parallel()
	f := newFixture(t, storetest.Open(t, store.SQLite))
	f.api.handle("GET /agent_api/v1/boom", routeOpts{}, func(w http.ResponseWriter, r *http.Request, c *Call) error {
		panic("boom")
	})
	resp := f.do(t, "GET", "/agent_api/v1/boom", f.admin, nil, map[string]string{"X-Request-Id": "req-42"})
	e := wantError(t, resp, 500, "internal_error")
	if e["request_id"] != "req-42" || resp.Header.Get("X-Request-Id") != "req-42" {
		t.Fatalf("request_id = %v, header %q; want req-42 in both", e["request_id"], resp.Header.Get("X-Request-Id"))
	}
	if strings.Contains(e["message"].(string), "boom") {
		t.Error("the panic value leaked into the message")
	}
	// A plain error from a handler is the same fault.
	f.api.handle("GET /agent_api/v1/fail", routeOpts{}, func(w http.ResponseWriter, r *http.Request, c *Call) error {
		return io.ErrUnexpectedEOF
	})
	e = wantError(t, f.do(t, "GET", "/agent_api/v1/fail", f.admin, nil, nil), 500, "internal_error")
	if id, _ := e["request_id"].(string); id == "" {
		t.Error("500 without request_id")
	}
}

func TestRequestID(t *testing.T) {
	t.Parallel()
	f := newFixture(t, storetest.Open(t, store.SQLite))
	cases := []struct {
		in   string
		keep bool
	}{
		{"abc-123_x.y:z", true},
		{strings.Repeat("a", 64), true},
		{strings.Repeat("a", 65), false},
		{"has space", false},
		{"new\nline", false},
		{"", false},
	}
	for _, c := range cases {
		resp := f.do(t, "GET", "/healthz", "", nil, map[string]string{"X-Request-Id": c.in})
		got := resp.Header.Get("X-Request-Id")
		if c.keep && got != c.in {
			t.Errorf("client id %q: got %q, want it kept", c.in, got)
		}
		if !c.keep && (got == c.in || got == "") {
			t.Errorf("client id %q: got %q, want a fresh id", c.in, got)
		}
	}
}

func TestHealth(t *testing.T) {
	t.Parallel()
	f := newFixture(t, storetest.Open(t, store.SQLite))
	resp := f.do(t, "GET", "/healthz", "", nil, nil)
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 || string(b) != `{"status":"ok"}`+"\n" {
		t.Fatalf("healthz: %d %s", resp.StatusCode, b)
	}
	resp = f.do(t, "GET", "/readyz", "", nil, nil)
	b, _ = io.ReadAll(resp.Body)
	if resp.StatusCode != 200 || string(b) != `{"status":"ready"}`+"\n" {
		t.Fatalf("readyz: %d %s", resp.StatusCode, b)
	}
	f.api.deps.Ready = func(context.Context) []string { return []string{"store: down"} }
	resp = f.do(t, "GET", "/readyz", "", nil, nil)
	b, _ = io.ReadAll(resp.Body)
	if resp.StatusCode != 503 || string(b) != `{"status":"not_ready","reasons":["store: down"]}`+"\n" {
		t.Fatalf("readyz not ready: %d %s", resp.StatusCode, b)
	}
}

// TestNotReadyIsNoFault: /readyz answering not ready is logged at debug, never as a server
// fault; a real 5xx still is.
func TestNotReadyIsNoFault(t *testing.T) {
	t.Parallel()
	f := newFixture(t, storetest.Open(t, store.SQLite))
	var logs bytes.Buffer
	f.api.deps.Log = hclog.New(&hclog.LoggerOptions{Output: &logs, Level: hclog.Debug})
	f.api.deps.Ready = func(context.Context) []string { return []string{"plugins: starting"} }
	if resp := f.do(t, "GET", "/readyz", "", nil, nil); resp.StatusCode != 503 {
		t.Fatalf("readyz: %d", resp.StatusCode)
	}
	if !strings.Contains(logs.String(), "[DEBUG] request:") || strings.Contains(logs.String(), "[ERROR]") {
		t.Fatalf("a not-ready probe logged %q", logs.String())
	}
	logs.Reset()
	f.api.handle("GET /agent_api/v1/fault", routeOpts{}, func(http.ResponseWriter, *http.Request, *Call) error {
		return errors.New("broken")
	})
	if resp := f.do(t, "GET", "/agent_api/v1/fault", f.admin, nil, nil); resp.StatusCode != 500 {
		t.Fatalf("fault: %d", resp.StatusCode)
	}
	if !strings.Contains(logs.String(), "[ERROR] request:") {
		t.Fatalf("a server fault logged %q", logs.String())
	}
}
