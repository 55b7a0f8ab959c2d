package httpapi

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/nexuskernel/nexus/core/declare"
	"github.com/nexuskernel/nexus/core/declare/declaretest"
	"github.com/nexuskernel/nexus/core/model"
	"github.com/nexuskernel/nexus/core/profiles"
	"github.com/nexuskernel/nexus/core/registry"
	"github.com/nexuskernel/nexus/core/store"
	"github.com/nexuskernel/nexus/sdk/jsonwire"
)

// newProfiles is a profile service over reg with the built-in models catalog.
func newProfiles(t testing.TB, s *store.Store, reg declare.Registry, now func() time.Time) *profiles.Service {
	t.Helper()
	c, err := declare.New(reg)
	if err != nil {
		t.Fatal(err)
	}
	svc, err := profiles.New(profiles.Options{Store: s, Compiler: c, Models: model.MustBuiltin(), Now: now})
	if err != nil {
		t.Fatal(err)
	}
	return svc
}

// live serves the fixture's API over a real socket and returns its base URL.
func (f *fixture) live(t *testing.T) string {
	t.Helper()
	srv := httptest.NewServer(f.api)
	t.Cleanup(srv.Close)
	return srv.URL
}

// liveFixtureRegistry serves an API like the fixture's whose profile doors compile against the
// worked examples' fixture registry (docs/development.md#the-declaration-compiler), over a real
// socket.
func (f *fixture) liveFixtureRegistry(t *testing.T) string {
	t.Helper()
	api, err := New(Deps{Auth: f.auth, Directory: f.dir, CatalogBody: registry.New().CatalogBody(), Now: f.clock,
		Profiles: newProfiles(t, f.store, declaretest.NewRegistry(), f.clock)})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(api)
	t.Cleanup(srv.Close)
	return srv.URL
}

func (f *fixture) clock() time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.now
}

// defaultWorkspace is the row id of the bootstrap workspace, where the fixture's agent lives.
func (f *fixture) defaultWorkspace(t *testing.T) int64 {
	t.Helper()
	var id int64
	if err := f.store.Reader().Get(context.Background(), &id, `SELECT id FROM workspaces WHERE handle = 'default'`); err != nil {
		t.Fatal(err)
	}
	return id
}

// reply is one answer of the live server.
type reply struct {
	status int
	body   []byte
}

// send makes one request over HTTP; body "" sends none.
func send(t *testing.T, method, url, token, body string) reply {
	t.Helper()
	var r io.Reader
	if body != "" {
		r = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, url, r)
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if ct := resp.Header.Get("Content-Type"); ct != contentTypeJSON {
		t.Fatalf("%s %s: Content-Type %q", method, url, ct)
	}
	return reply{resp.StatusCode, b}
}

// ok checks a 200 and returns the body without its final line feed.
func (r reply) ok(t *testing.T) string {
	t.Helper()
	if r.status != http.StatusOK {
		t.Fatalf("status %d, want 200: %s", r.status, r.body)
	}
	s := string(r.body)
	if !strings.HasSuffix(s, "\n") {
		t.Fatalf("body without a final line feed: %q", s)
	}
	return strings.TrimSuffix(s, "\n")
}

// extra is one expected key of a refusal after code and message.
type extra struct{ key, value string }

func x(key, value string) extra { return extra{key, value} }

// refused checks a refusal exactly: the status, the code, a non-empty message (never its
// text), then the extra keys in order and nothing else.
func (r reply) refused(t *testing.T, status int, code string, extras ...extra) {
	t.Helper()
	got := r.refusal(t)
	if r.status != status || got.code != code {
		t.Fatalf("status %d code %s, want %d %s: %s", r.status, got.code, status, code, r.body)
	}
	if len(got.extras) != len(extras) {
		t.Fatalf("extras %v, want %v: %s", got.extras, extras, r.body)
	}
	for i := range extras {
		if got.extras[i] != extras[i] {
			t.Fatalf("extra %d = %v, want %v: %s", i, got.extras[i], extras[i], r.body)
		}
	}
}

type decodedRefusal struct {
	code   string
	extras []extra
}

// refusal decodes {"error":{"code","message",…}} keeping the key order.
func (r reply) refusal(t *testing.T) decodedRefusal {
	t.Helper()
	v, err := jsonwire.Decode(r.body)
	if err != nil {
		t.Fatalf("refusal body is not JSON: %s", r.body)
	}
	e, ok := v.Get("error")
	if !ok || !e.IsObject() || len(v.Keys()) != 1 {
		t.Fatalf("not a refusal envelope: %s", r.body)
	}
	ms := e.Members()
	if len(ms) < 2 || ms[0].Key != "code" || ms[1].Key != "message" {
		t.Fatalf("refusal does not start with code and message: %s", r.body)
	}
	code, _ := ms[0].Value.AsString()
	if msg, isString := ms[1].Value.AsString(); !isString || msg == "" {
		t.Fatalf("empty message: %s", r.body)
	}
	out := decodedRefusal{code: code}
	for _, m := range ms[2:] {
		s, isString := m.Value.AsString()
		if !isString {
			s = string(m.Value.Encode())
		}
		out.extras = append(out.extras, extra{m.Key, s})
	}
	return out
}

// member reads a member of a decoded JSON object body.
func memberOf(t *testing.T, body string, path ...string) jsonwire.Value {
	t.Helper()
	v, err := jsonwire.DecodeText(body)
	if err != nil {
		t.Fatalf("not JSON: %s", body)
	}
	for _, k := range path {
		next, ok := v.Get(k)
		if !ok {
			t.Fatalf("no %q in %s", k, body)
		}
		v = next
	}
	return v
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
