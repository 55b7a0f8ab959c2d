package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/nexuskernel/nexus/core/identity"
	"github.com/nexuskernel/nexus/core/memory"
	"github.com/nexuskernel/nexus/core/registry"
	"github.com/nexuskernel/nexus/core/store"
	"github.com/nexuskernel/nexus/core/store/storetest"
	"github.com/nexuskernel/nexus/sdk/client"
)

// memT0 is the memory tests' clock: microseconds that the API's millisecond times cut.
var memT0 = time.Date(2030, time.January, 15, 9, 0, 0, 123456000, time.UTC)

// memFixture serves the fixture's API over real HTTP.
type memFixture struct {
	*fixture
	url string
}

func newMemFixture(t *testing.T, s *store.Store) *memFixture {
	t.Helper()
	f := newFixture(t, s)
	f.mu.Lock()
	f.now = memT0
	f.mu.Unlock()
	srv := httptest.NewServer(f.api)
	t.Cleanup(srv.Close)
	return &memFixture{fixture: f, url: srv.URL}
}

func (m *memFixture) client(token string) *client.Client { return client.New(m.url, token) }

// send makes one HTTP request with a raw body ("" sends none) and answers the status and body.
func (m *memFixture) send(t *testing.T, method, path, token, body string) (int, []byte) {
	t.Helper()
	var r io.Reader
	if body != "" {
		r = strings.NewReader(body)
	}
	req, err := http.NewRequestWithContext(context.Background(), method, m.url+path, r)
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
	raw, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, raw
}

// jsonOf encodes v for a request body.
func jsonOf(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// wantRefusal checks a client call's refusal: status, word and, when set, the field path.
func wantRefusal(t *testing.T, what string, err error, status int, code, path string) {
	t.Helper()
	var ce *client.Error
	if !errors.As(err, &ce) {
		t.Fatalf("%s: error %v, want %d %s", what, err, status, code)
	}
	if ce.Status != status || ce.Code != code {
		t.Fatalf("%s: %d %s (%s), want %d %s", what, ce.Status, ce.Code, ce.Message, status, code)
	}
	if path != "" {
		var got string
		_ = json.Unmarshal(ce.Extra["path"], &got)
		if got != path {
			t.Fatalf("%s: path %q, want %q", what, got, path)
		}
	}
}

func ptr[T any](v T) *T { return &v }

// TestMemoryDoorsLifecycle drives every door over HTTP: create, show, list, replace, edit, grep,
// delete, with the exact wire shape, the user root following the controlling person, and skills
// written where models may not write.
func TestMemoryDoorsLifecycle(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		m := newMemFixture(t, s)
		ctx := context.Background()
		admin := m.client(m.admin)

		// Create: 201 and the exact document shape.
		status, raw := m.send(t, "POST", "/agent_api/v1/workspaces/default/memory/write", m.admin,
			`{"memory":{"path":"workspace/notes.md","content":"alpha\nbeta\n","expected_public_id":null,"expected_lock_version":null}}`)
		if status != 201 {
			t.Fatalf("create: %d %s", status, raw)
		}
		var created struct {
			Memory struct {
				PublicID string `json:"public_id"`
			} `json:"memory"`
		}
		if err := json.Unmarshal(raw, &created); err != nil {
			t.Fatal(err)
		}
		id := created.Memory.PublicID
		want := fmt.Sprintf(`{"memory":{"path":"workspace/notes.md","public_id":%q,"lock_version":1,"bytesize":11,"description":null,"written_at":"2030-01-15T09:00:00.123Z"}}`+"\n", id)
		if diff := cmp.Diff(want, string(raw)); diff != "" {
			t.Fatalf("create body (-want +got):\n%s", diff)
		}
		if !identity.IsUUID(id) {
			t.Fatalf("public id %q", id)
		}

		// Show adds the content.
		status, raw = m.send(t, "POST", "/agent_api/v1/workspaces/default/memory/show", m.admin, `{"memory":{"path":"workspace/notes.md"}}`)
		want = fmt.Sprintf(`{"memory":{"path":"workspace/notes.md","public_id":%q,"lock_version":1,"bytesize":11,"description":null,"written_at":"2030-01-15T09:00:00.123Z","content":"alpha\nbeta\n"}}`+"\n", id)
		if status != 200 || string(raw) != want {
			t.Fatalf("show: %d %s, want %s", status, raw, want)
		}

		// Replace: 200, same public id, next lock version, new time.
		m.advance(time.Minute)
		res, err := admin.MemoryWrite(ctx, "default", &client.MemoryWriteRequest{
			Path: "workspace/notes.md", Content: "alpha\nbeta\ngamma\n", Expected: &client.MemoryVersion{PublicID: id, LockVersion: 1},
		})
		if err != nil {
			t.Fatal(err)
		}
		if res.Created || res.Memory.PublicID != id || res.Memory.LockVersion != 2 || res.Memory.Bytesize != 17 ||
			!res.Memory.WrittenAt.Equal(memT0.Add(time.Minute).Truncate(time.Millisecond)) || res.Memory.Content != nil {
			t.Fatalf("replace: %+v", res)
		}

		// Edit: 200, lock version 3.
		res, err = admin.MemoryEdit(ctx, "default", &client.MemoryEditRequest{
			Path: "workspace/notes.md", OldText: "beta", NewText: "BETA", Expected: client.MemoryVersion{PublicID: id, LockVersion: 2},
		})
		if err != nil || res.Memory.LockVersion != 3 || res.Memory.PublicID != id {
			t.Fatalf("edit: %+v %v", res, err)
		}
		shown, err := admin.MemoryShow(ctx, "default", "workspace/notes.md")
		if err != nil || *shown.Memory.Content != "alpha\nBETA\ngamma\n" {
			t.Fatalf("show after edit: %+v %v", shown, err)
		}

		// Skills are written here (never memory_reserved_prefix), with their description.
		skill, err := admin.MemoryWrite(ctx, "default", &client.MemoryWriteRequest{
			Path: "workspace/skills/release-notes", Content: "# Release notes\n", Description: ptr("How we write release notes."),
		})
		if err != nil || !skill.Created || skill.Memory.Description == nil || *skill.Memory.Description != "How we write release notes." {
			t.Fatalf("skill write: %+v %v", skill, err)
		}
		// A replace sets the description sent; an edit keeps it.
		skill, err = admin.MemoryWrite(ctx, "default", &client.MemoryWriteRequest{
			Path: "workspace/skills/release-notes", Content: "# Release notes\nBe brief.\n", Description: ptr("Release notes, briefly."),
			Expected: &client.MemoryVersion{PublicID: skill.Memory.PublicID, LockVersion: 1},
		})
		if err != nil || *skill.Memory.Description != "Release notes, briefly." {
			t.Fatalf("skill replace: %+v %v", skill, err)
		}
		skill, err = admin.MemoryEdit(ctx, "default", &client.MemoryEditRequest{
			Path: "workspace/skills/release-notes", OldText: "brief", NewText: "short",
			Expected: client.MemoryVersion{PublicID: skill.Memory.PublicID, LockVersion: 2},
		})
		if err != nil || *skill.Memory.Description != "Release notes, briefly." || skill.Memory.LockVersion != 3 {
			t.Fatalf("skill edit: %+v %v", skill, err)
		}

		// The user root is the caller's controlling person: the admin's agent (stewarded by the
		// admin) shares it; another member has their own.
		if _, err := admin.MemoryWrite(ctx, "default", &client.MemoryWriteRequest{Path: "user/prefs.md", Content: "tabs"}); err != nil {
			t.Fatal(err)
		}
		_, otherTok := m.newUser(t, m.admin, "default", "mia", "member")
		other := m.client(otherTok)
		agent := m.client(m.agent)
		paths := func(c *client.Client, prefix string) []string {
			t.Helper()
			l, err := c.MemoryList(ctx, "default", prefix)
			if err != nil {
				t.Fatal(err)
			}
			out := []string{}
			for _, d := range l.Memory {
				out = append(out, d.Path)
			}
			return out
		}
		// Listing order: root (user before workspace), then name.
		wantAll := []string{"user/prefs.md", "workspace/notes.md", "workspace/skills/release-notes"}
		if diff := cmp.Diff(wantAll, paths(admin, "")); diff != "" {
			t.Errorf("admin list (-want +got):\n%s", diff)
		}
		if diff := cmp.Diff(wantAll, paths(agent, "")); diff != "" {
			t.Errorf("agent list (-want +got):\n%s", diff)
		}
		if diff := cmp.Diff([]string{"workspace/notes.md", "workspace/skills/release-notes"}, paths(other, "")); diff != "" {
			t.Errorf("other member's list (-want +got):\n%s", diff)
		}
		// Prefix forms.
		for prefix, want := range map[string][]string{
			"workspace":         {"workspace/notes.md", "workspace/skills/release-notes"},
			"workspace/":        {"workspace/notes.md", "workspace/skills/release-notes"},
			"workspace/skills/": {"workspace/skills/release-notes"},
			"workspace/no":      {"workspace/notes.md"},
			"workspace/zz":      {},
			"user":              {"user/prefs.md"},
		} {
			if diff := cmp.Diff(want, paths(admin, prefix)); diff != "" {
				t.Errorf("list %q (-want +got):\n%s", prefix, diff)
			}
		}
		// Any member may write (write standing in a workspace is membership).
		if _, err := other.MemoryWrite(ctx, "default", &client.MemoryWriteRequest{Path: "workspace/from-mia.md", Content: "hi"}); err != nil {
			t.Fatalf("member write: %v", err)
		}
		if _, err := agent.MemoryWrite(ctx, "default", &client.MemoryWriteRequest{Path: "workspace/from-bot.md", Content: "hi"}); err != nil {
			t.Fatalf("agent write: %v", err)
		}

		// Grep: order by root, name, line; the clamp mark; truncation.
		long := strings.Repeat("é", 600)
		if _, err := admin.MemoryWrite(ctx, "default", &client.MemoryWriteRequest{Path: "user/long.md", Content: "x " + long + "\r\nx again\n"}); err != nil {
			t.Fatal(err)
		}
		g, err := admin.MemoryGrep(ctx, "default", &client.MemoryGrepRequest{Pattern: "a"})
		if err != nil {
			t.Fatal(err)
		}
		wantMatches := []client.MemoryMatch{
			{Path: "user/long.md", LineNumber: 2, Text: "x again"},
			{Path: "user/prefs.md", LineNumber: 1, Text: "tabs"},
			{Path: "workspace/notes.md", LineNumber: 1, Text: "alpha"},
			{Path: "workspace/notes.md", LineNumber: 3, Text: "gamma"},
			{Path: "workspace/skills/release-notes", LineNumber: 1, Text: "# Release notes"},
		}
		if diff := cmp.Diff(wantMatches, g.Matches); diff != "" || g.Truncated {
			t.Errorf("grep a (-want +got):\n%s truncated %v", diff, g.Truncated)
		}
		g, err = admin.MemoryGrep(ctx, "default", &client.MemoryGrepRequest{Pattern: "^X É", IgnoreCase: true, Prefix: "user/lo"})
		if err != nil || len(g.Matches) != 1 || g.Matches[0].Text != "x "+strings.Repeat("é", 498)+"…" {
			t.Fatalf("grep clamp: %+v %v", g, err)
		}
		g, err = admin.MemoryGrep(ctx, "default", &client.MemoryGrepRequest{Pattern: "a", Limit: 2})
		if err != nil || len(g.Matches) != 2 || !g.Truncated {
			t.Fatalf("grep limit: %+v %v", g, err)
		}
		status, raw = m.send(t, "POST", "/agent_api/v1/workspaces/default/memory/grep", m.admin, `{"memory":{"pattern":"nothing-here"}}`)
		if status != 200 || string(raw) != `{"matches":[],"truncated":false}`+"\n" {
			t.Fatalf("grep none: %d %s", status, raw)
		}

		// Delete: 204, then gone.
		if err := admin.MemoryDelete(ctx, "default", &client.MemoryDeleteRequest{Path: "workspace/notes.md", Expected: client.MemoryVersion{PublicID: id, LockVersion: 3}}); err != nil {
			t.Fatal(err)
		}
		status, raw = m.send(t, "POST", "/agent_api/v1/workspaces/default/memory/delete", m.admin,
			jsonOf(t, map[string]any{"memory": map[string]any{"path": "workspace/skills/release-notes", "expected_public_id": skill.Memory.PublicID, "expected_lock_version": 3}}))
		if status != 204 || len(raw) != 0 {
			t.Fatalf("delete: %d %q", status, raw)
		}
		_, err = admin.MemoryShow(ctx, "default", "workspace/notes.md")
		wantRefusal(t, "show after delete", err, 404, "memory_not_found", "memory.path")
		// Recreated at the same path: a new public id at version 1.
		again, err := admin.MemoryWrite(ctx, "default", &client.MemoryWriteRequest{Path: "workspace/notes.md", Content: "new"})
		if err != nil || again.Memory.PublicID == id || again.Memory.LockVersion != 1 || !again.Created {
			t.Fatalf("recreate: %+v %v", again, err)
		}
		// The old version names a recreated document no longer.
		_, err = admin.MemoryEdit(ctx, "default", &client.MemoryEditRequest{Path: "workspace/notes.md", OldText: "new", NewText: "x", Expected: client.MemoryVersion{PublicID: id, LockVersion: 1}})
		wantRefusal(t, "edit of a recreated document", err, 409, "stale_object", "")
	})
}

// memCase is one refused door request and what it must answer.
type memCase struct {
	name, method, route, body string
	status                    int
	code, path                string
}

// TestMemoryDoorRefusals sends every refusal of the doors over HTTP, with its status, word and
// field, including the orders between them; none of them changes anything.
func TestMemoryDoorRefusals(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		m := newMemFixture(t, s)
		ctx := context.Background()
		admin := m.client(m.admin)
		write := func(path, content string) client.MemoryDocument {
			t.Helper()
			res, err := admin.MemoryWrite(ctx, "default", &client.MemoryWriteRequest{Path: path, Content: content})
			if err != nil {
				t.Fatal(err)
			}
			return res.Memory
		}
		notes := write("workspace/notes.md", "alpha\nbeta\n")
		triple := write("workspace/triple.md", "aaa")
		big := write("workspace/big.md", strings.Repeat("x", 65535)+"y")
		otherID := store.NewPublicID()

		// Request bodies.
		mem := func(fields map[string]any) string { return jsonOf(t, map[string]any{"memory": fields}) }
		create := func(path string, extra ...any) string {
			f := map[string]any{"path": path, "content": "x", "expected_public_id": nil, "expected_lock_version": nil}
			for i := 0; i+1 < len(extra); i += 2 {
				f[extra[i].(string)] = extra[i+1]
			}
			return mem(f)
		}
		skill := func(path string, desc any) string {
			f := map[string]any{"path": path, "content": "x", "expected_public_id": nil, "expected_lock_version": nil}
			if desc != "<absent>" {
				f["description"] = desc
			}
			return mem(f)
		}
		cond := func(path string, d client.MemoryDocument, extra ...any) string {
			f := map[string]any{"path": path, "expected_public_id": d.PublicID, "expected_lock_version": d.LockVersion}
			for i := 0; i+1 < len(extra); i += 2 {
				f[extra[i].(string)] = extra[i+1]
			}
			return mem(f)
		}
		stale := client.MemoryDocument{PublicID: notes.PublicID, LockVersion: 2}
		const (
			W = "/memory/write"
			E = "/memory/edit"
			D = "/memory/delete"
			S = "/memory/show"
			G = "/memory/grep"
		)
		cases := []memCase{
			// The body and the expected pair: 400.
			{"body not an object", "POST", W, `[1]`, 400, "parameter_invalid", ""},
			{"body not JSON", "POST", W, `{"memory":`, 400, "parameter_invalid", ""},
			{"no body", "POST", W, ``, 400, "parameter_missing", "memory"},
			{"memory null", "POST", W, `{"memory":null}`, 400, "parameter_missing", "memory"},
			{"memory absent", "POST", S, `{"path":"workspace/notes.md"}`, 400, "parameter_missing", "memory"},
			{"memory not an object", "POST", W, `{"memory":"workspace/x"}`, 400, "parameter_invalid", "memory"},
			{"expected public id missing", "POST", W, mem(map[string]any{"path": "workspace/a", "content": "x", "expected_lock_version": nil}), 400, "parameter_missing", "memory.expected_public_id"},
			{"expected lock version missing", "POST", W, mem(map[string]any{"path": "workspace/a", "content": "x", "expected_public_id": nil}), 400, "parameter_missing", "memory.expected_lock_version"},
			{"half null: id", "POST", W, create("workspace/a", "expected_lock_version", 1), 400, "parameter_invalid", "memory.expected_public_id"},
			{"half null: version", "POST", W, create("workspace/a", "expected_public_id", otherID), 400, "parameter_invalid", "memory.expected_lock_version"},
			{"public id not a uuid", "POST", W, create("workspace/a", "expected_public_id", "doc-1", "expected_lock_version", 1), 400, "parameter_invalid", "memory.expected_public_id"},
			{"public id not a string", "POST", W, create("workspace/a", "expected_public_id", 7, "expected_lock_version", 1), 400, "parameter_invalid", "memory.expected_public_id"},
			{"lock version zero", "POST", W, create("workspace/a", "expected_public_id", otherID, "expected_lock_version", 0), 400, "parameter_invalid", "memory.expected_lock_version"},
			{"lock version a string", "POST", W, create("workspace/a", "expected_public_id", otherID, "expected_lock_version", "1"), 400, "parameter_invalid", "memory.expected_lock_version"},
			{"lock version a fraction", "POST", W, create("workspace/a", "expected_public_id", otherID, "expected_lock_version", 1.5), 400, "parameter_invalid", "memory.expected_lock_version"},
			{"400 before 422", "POST", W, mem(map[string]any{"path": 5, "content": 5}), 400, "parameter_missing", "memory.expected_public_id"},
			{"edit both null", "POST", E, mem(map[string]any{"path": "workspace/notes.md", "old_text": "a", "new_text": "b", "expected_public_id": nil, "expected_lock_version": nil}), 400, "parameter_invalid", "memory.expected_public_id"},
			{"delete both null", "POST", D, mem(map[string]any{"path": "workspace/notes.md", "expected_public_id": nil, "expected_lock_version": nil}), 400, "parameter_invalid", "memory.expected_public_id"},
			{"delete pair missing", "POST", D, mem(map[string]any{"path": "workspace/notes.md"}), 400, "parameter_missing", "memory.expected_public_id"},
			{"grep ignore_case not boolean", "POST", G, mem(map[string]any{"pattern": "a", "ignore_case": "yes"}), 400, "parameter_invalid", "memory.ignore_case"},
			{"grep limit zero", "POST", G, mem(map[string]any{"pattern": "a", "limit": 0}), 400, "parameter_invalid", "memory.limit"},
			{"grep limit over 500", "POST", G, mem(map[string]any{"pattern": "a", "limit": 501}), 400, "parameter_invalid", "memory.limit"},
			{"grep limit a string", "POST", G, mem(map[string]any{"pattern": "a", "limit": "5"}), 400, "parameter_invalid", "memory.limit"},

			// Paths: 422.
			{"path missing", "POST", W, mem(map[string]any{"content": "x", "expected_public_id": nil, "expected_lock_version": nil}), 422, "memory_path_invalid", "memory.path"},
			{"path not a string", "POST", W, create("x", "path", 5), 422, "memory_path_invalid", "memory.path"},
			{"no name", "POST", W, create("workspace"), 422, "memory_path_invalid", "memory.path"},
			{"empty name", "POST", W, create("workspace/"), 422, "memory_path_invalid", "memory.path"},
			{"empty segment", "POST", W, create("workspace/a//b"), 422, "memory_path_invalid", "memory.path"},
			{"dot segment", "POST", W, create("workspace/../x"), 422, "memory_path_invalid", "memory.path"},
			{"control character", "POST", W, create("workspace/a\u0001b"), 422, "memory_path_invalid", "memory.path"},
			{"name over 255 bytes", "POST", W, create("workspace/" + strings.Repeat("n", 256)), 422, "memory_path_invalid", "memory.path"},
			{"conversation root", "POST", W, create("conversation/x"), 422, "memory_scope_unavailable", "memory.path"},
			{"unknown root", "POST", W, create("team/x"), 422, "memory_scope_unavailable", "memory.path"},
			{"show path not a string", "POST", S, mem(map[string]any{"path": true}), 422, "memory_path_invalid", "memory.path"},
			{"show conversation", "POST", S, mem(map[string]any{"path": "conversation/x"}), 422, "memory_scope_unavailable", "memory.path"},
			{"edit conversation", "POST", E, cond("conversation/notes.md", notes, "old_text", "a", "new_text", "b"), 422, "memory_scope_unavailable", "memory.path"},
			{"delete bad path", "POST", D, cond("workspace/a//b", notes), 422, "memory_path_invalid", "memory.path"},
			{"list conversation", "GET", "/memory?prefix=conversation", "", 422, "memory_scope_unavailable", "prefix"},
			{"list unknown root", "GET", "/memory?prefix=team/x", "", 422, "memory_scope_unavailable", "prefix"},
			{"grep prefix not a string", "POST", G, mem(map[string]any{"pattern": "a", "prefix": 5}), 422, "memory_path_invalid", "memory.prefix"},
			{"grep prefix unbound", "POST", G, mem(map[string]any{"pattern": "a", "prefix": "conversation/"}), 422, "memory_scope_unavailable", "memory.prefix"},

			// Descriptions and skills: 422, in the order (docs/agent-tools.md#memory-and-skills).
			{"description on a plain document", "POST", W, create("workspace/a.md", "description", "d"), 422, "memory_description_invalid", "memory.description"},
			{"empty description on a plain document", "POST", W, create("workspace/a.md", "description", ""), 422, "memory_description_invalid", "memory.description"},
			{"skill name uppercase", "POST", W, skill("workspace/skills/Release", "d"), 422, "skill_name_invalid", "memory.path"},
			{"skill name two segments", "POST", W, skill("workspace/skills/a/b", "d"), 422, "skill_name_invalid", "memory.path"},
			{"skills folder itself", "POST", W, skill("workspace/skills", "d"), 422, "skill_name_invalid", "memory.path"},
			{"skill name empty", "POST", W, skill("workspace/skills/", "d"), 422, "skill_name_invalid", "memory.path"},
			{"skill name 65 characters", "POST", W, skill("workspace/skills/"+strings.Repeat("a", 65), "d"), 422, "skill_name_invalid", "memory.path"},
			{"skill name double hyphen", "POST", W, skill("user/skills/a--b", "d"), 422, "skill_name_invalid", "memory.path"},
			{"skill name before scope", "POST", W, skill("conversation/skills/Bad", "d"), 422, "skill_name_invalid", "memory.path"},
			{"conversation skill", "POST", W, skill("conversation/skills/notes", "d"), 422, "skill_scope_unavailable", "memory.path"},
			{"unknown root skill", "POST", W, skill("team/skills/notes", "d"), 422, "skill_scope_unavailable", "memory.path"},
			{"scope before description", "POST", W, skill("conversation/skills/notes", "<absent>"), 422, "skill_scope_unavailable", "memory.path"},
			{"skill without description", "POST", W, skill("workspace/skills/notes", "<absent>"), 422, "skill_description_required", "memory.description"},
			{"skill null description", "POST", W, skill("workspace/skills/notes", nil), 422, "skill_description_required", "memory.description"},
			{"skill blank description", "POST", W, skill("workspace/skills/notes", " \n\t"), 422, "skill_description_required", "memory.description"},
			{"skill description not a string", "POST", W, skill("workspace/skills/notes", 5), 422, "memory_description_invalid", "memory.description"},
			{"skill description over 1024 bytes", "POST", W, skill("workspace/skills/notes", strings.Repeat("é", 513)), 422, "memory_description_invalid", "memory.description"},
			{"skill description with U+0000", "POST", W, skill("workspace/skills/notes", "a\u0000b"), 422, "memory_description_invalid", "memory.description"},
			{"description before content", "POST", W, mem(map[string]any{"path": "user/skills/notes", "content": 5, "expected_public_id": nil, "expected_lock_version": nil}), 422, "skill_description_required", "memory.description"},

			// Content: 422.
			{"content missing", "POST", W, mem(map[string]any{"path": "workspace/a", "expected_public_id": nil, "expected_lock_version": nil}), 422, "memory_content_invalid", "memory.content"},
			{"content not a string", "POST", W, create("workspace/a", "content", 5), 422, "memory_content_invalid", "memory.content"},
			{"content with U+0000", "POST", W, create("workspace/a", "content", "a\u0000b"), 422, "memory_content_invalid", "memory.content"},
			{"content over 65536 bytes", "POST", W, create("workspace/a", "content", strings.Repeat("x", 65537)), 422, "memory_document_too_large", "memory.content"},
			{"content before the condition", "POST", W, create("workspace/notes.md", "content", 5), 422, "memory_content_invalid", "memory.content"},

			// Edit words: 422.
			{"old_text missing", "POST", E, cond("workspace/notes.md", notes, "new_text", "b"), 422, "memory_edit_invalid", "memory.old_text"},
			{"old_text empty", "POST", E, cond("workspace/notes.md", notes, "old_text", "", "new_text", "b"), 422, "memory_edit_invalid", "memory.old_text"},
			{"old_text not a string", "POST", E, cond("workspace/notes.md", notes, "old_text", 1, "new_text", "b"), 422, "memory_edit_invalid", "memory.old_text"},
			{"new_text missing", "POST", E, cond("workspace/notes.md", notes, "old_text", "a"), 422, "memory_edit_invalid", "memory.new_text"},
			{"new_text with U+0000", "POST", E, cond("workspace/notes.md", notes, "old_text", "alpha", "new_text", "\u0000"), 422, "memory_content_invalid", "memory.new_text"},
			{"edit text absent", "POST", E, cond("workspace/notes.md", notes, "old_text", "zeta", "new_text", "b"), 422, "memory_edit_not_found", "memory.old_text"},
			{"edit text twice", "POST", E, cond("workspace/notes.md", notes, "old_text", "a", "new_text", "b"), 422, "memory_edit_ambiguous", "memory.old_text"},
			{"edit text overlapping", "POST", E, cond("workspace/triple.md", triple, "old_text", "aa", "new_text", "b"), 422, "memory_edit_ambiguous", "memory.old_text"},
			{"edit result too large", "POST", E, cond("workspace/big.md", big, "old_text", "y", "new_text", "yy"), 422, "memory_document_too_large", "memory.new_text"},

			// Patterns: 422.
			{"pattern missing", "POST", G, mem(map[string]any{}), 422, "memory_pattern_invalid", "memory.pattern"},
			{"pattern empty", "POST", G, mem(map[string]any{"pattern": ""}), 422, "memory_pattern_invalid", "memory.pattern"},
			{"pattern not a string", "POST", G, mem(map[string]any{"pattern": 5}), 422, "memory_pattern_invalid", "memory.pattern"},
			{"pattern not RE2", "POST", G, mem(map[string]any{"pattern": "(?<x"}), 422, "memory_pattern_invalid", "memory.pattern"},

			// The stored state: 404 and 409, the condition before the text.
			{"show missing", "POST", S, mem(map[string]any{"path": "workspace/missing.md"}), 404, "memory_not_found", "memory.path"},
			{"create on an occupied path", "POST", W, create("workspace/notes.md"), 409, "stale_object", "memory.path"},
			{"replace a changed version", "POST", W, cond("workspace/notes.md", stale, "content", "x"), 409, "stale_object", "memory.path"},
			{"replace another document", "POST", W, cond("workspace/notes.md", client.MemoryDocument{PublicID: otherID, LockVersion: 1}, "content", "x"), 409, "stale_object", "memory.path"},
			{"replace a missing document", "POST", W, cond("workspace/missing.md", notes, "content", "x"), 409, "stale_object", "memory.path"},
			{"edit a changed version", "POST", E, cond("workspace/notes.md", stale, "old_text", "alpha", "new_text", "b"), 409, "stale_object", "memory.path"},
			{"condition before text", "POST", E, cond("workspace/notes.md", stale, "old_text", "zeta", "new_text", "b"), 409, "stale_object", "memory.path"},
			{"edit a missing document", "POST", E, cond("workspace/missing.md", notes, "old_text", "a", "new_text", "b"), 409, "stale_object", "memory.path"},
			{"delete a changed version", "POST", D, cond("workspace/notes.md", stale), 409, "stale_object", "memory.path"},
			{"delete a missing document", "POST", D, cond("workspace/missing.md", notes), 409, "stale_object", "memory.path"},
		}
		before := listRaw(t, m)
		for _, c := range cases {
			status, raw := m.send(t, c.method, "/agent_api/v1/workspaces/default"+c.route, m.admin, c.body)
			checkRefusal(t, c, status, raw)
		}
		if diff := cmp.Diff(before, listRaw(t, m)); diff != "" {
			t.Errorf("refused requests changed memory (-before +after):\n%s", diff)
		}
		// The edit refusals left every document whole.
		shown, err := admin.MemoryShow(ctx, "default", "workspace/notes.md")
		if err != nil || *shown.Memory.Content != "alpha\nbeta\n" || shown.Memory.LockVersion != 1 {
			t.Fatalf("notes after refusals: %+v %v", shown, err)
		}
	})
}

func listRaw(t *testing.T, m *memFixture) string {
	t.Helper()
	status, raw := m.send(t, "GET", "/agent_api/v1/workspaces/default/memory", m.admin, "")
	if status != 200 {
		t.Fatalf("list: %d %s", status, raw)
	}
	return string(raw)
}

func checkRefusal(t *testing.T, c memCase, status int, raw []byte) {
	t.Helper()
	var env struct {
		Error map[string]any `json:"error"`
	}
	if err := json.Unmarshal(raw, &env); err != nil || env.Error == nil {
		t.Errorf("%s: %d %s is not an error body", c.name, status, raw)
		return
	}
	if status != c.status || env.Error["code"] != c.code {
		t.Errorf("%s: %d %v, want %d %s (%s)", c.name, status, env.Error["code"], c.status, c.code, raw)
		return
	}
	if c.path != "" && env.Error["path"] != c.path {
		t.Errorf("%s: path %v, want %s", c.name, env.Error["path"], c.path)
	}
	if msg, _ := env.Error["message"].(string); msg == "" {
		t.Errorf("%s: no message", c.name)
	}
}

// TestMemoryDoorStanding: the doors answer only members of the workspace (404 otherwise, never
// 403), only on the member plane (401), and within the body bound (413).
func TestMemoryDoorStanding(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		m := newMemFixture(t, s)
		_, otto := m.newUser(t, m.admin, "default", "otto", "member")
		m.must(t, 201, "POST", "/agent_api/v1/workspaces", otto, `{"workspace":{"handle":"foreign","name":"Foreign"}}`)
		foreignID := obj(t, m.must(t, 200, "GET", "/agent_api/v1/workspaces/foreign", otto, nil), "workspace")["public_id"].(string)
		_, exTok := m.newExecutor(t, m.admin, "default", "runner", "laptop")
		ottoClient := m.client(otto)
		if _, err := ottoClient.MemoryWrite(context.Background(), "foreign", &client.MemoryWriteRequest{Path: "workspace/secret.md", Content: "s"}); err != nil {
			t.Fatal(err)
		}
		body := `{"memory":{"path":"workspace/secret.md","pattern":"s","content":"x","expected_public_id":null,"expected_lock_version":null}}`
		routes := []struct{ method, route string }{
			{"GET", "/memory"}, {"POST", "/memory/show"}, {"POST", "/memory/write"}, {"POST", "/memory/edit"},
			{"POST", "/memory/grep"}, {"POST", "/memory/delete"},
		}
		for _, r := range routes {
			for _, ws := range []string{"foreign", foreignID, "nowhere", store.NewPublicID()} {
				for _, tok := range []string{m.admin, m.agent} {
					status, raw := m.send(t, r.method, "/agent_api/v1/workspaces/"+ws+r.route, tok, body)
					checkRefusal(t, memCase{name: r.route + " in " + ws, status: 404, code: "not_found"}, status, raw)
				}
			}
			for _, tok := range []string{"", exTok, "nxm_short"} {
				status, raw := m.send(t, r.method, "/agent_api/v1/workspaces/default"+r.route, tok, body)
				checkRefusal(t, memCase{name: r.route + " unauthorized", status: 401, code: "unauthorized"}, status, raw)
			}
			if r.method == "POST" {
				huge := `{"memory":{"path":"workspace/a","content":"` + strings.Repeat("x", DefaultBodyLimit) + `"}}`
				status, raw := m.send(t, r.method, "/agent_api/v1/workspaces/default"+r.route, m.admin, huge)
				checkRefusal(t, memCase{name: r.route + " too large", status: 413, code: "content_too_large"}, status, raw)
			}
		}
		// Nothing reached the foreign workspace's memory.
		l, err := ottoClient.MemoryList(context.Background(), "foreign", "")
		if err != nil || len(l.Memory) != 1 || l.Memory[0].LockVersion != 1 {
			t.Fatalf("foreign memory: %+v %v", l, err)
		}
	})
}

// TestMemoryDoorFull: the 65th document of a root is 422 memory_full; a replace at the cap
// succeeds; the cap is per root, skills included; an occupied path is stale before it is full.
func TestMemoryDoorFull(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		m := newMemFixture(t, s)
		ctx := context.Background()
		admin := m.client(m.admin)
		var first client.MemoryDocument
		for i := range 63 {
			res, err := admin.MemoryWrite(ctx, "default", &client.MemoryWriteRequest{Path: fmt.Sprintf("user/doc-%02d", i), Content: "x"})
			if err != nil {
				t.Fatal(err)
			}
			if i == 0 {
				first = res.Memory
			}
		}
		if _, err := admin.MemoryWrite(ctx, "default", &client.MemoryWriteRequest{Path: "user/skills/last", Content: "x", Description: ptr("The 64th.")}); err != nil {
			t.Fatal(err)
		}
		_, err := admin.MemoryWrite(ctx, "default", &client.MemoryWriteRequest{Path: "user/one-more", Content: "x"})
		wantRefusal(t, "65th create", err, 422, "memory_full", "memory.path")
		_, err = admin.MemoryWrite(ctx, "default", &client.MemoryWriteRequest{Path: "user/doc-00", Content: "x"})
		wantRefusal(t, "create on an occupied path at the cap", err, 409, "stale_object", "memory.path")
		if _, err := admin.MemoryWrite(ctx, "default", &client.MemoryWriteRequest{Path: "user/doc-00", Content: "y", Expected: &client.MemoryVersion{PublicID: first.PublicID, LockVersion: 1}}); err != nil {
			t.Fatalf("replace at the cap: %v", err)
		}
		if _, err := admin.MemoryWrite(ctx, "default", &client.MemoryWriteRequest{Path: "workspace/elsewhere", Content: "x"}); err != nil {
			t.Fatalf("another root: %v", err)
		}
		l, err := admin.MemoryList(ctx, "default", "user/")
		if err != nil || len(l.Memory) != 64 {
			t.Fatalf("user root holds %d documents (%v), want 64", len(l.Memory), err)
		}
	})
}

// TestMemoryDoorGrepBudget: a search over its budget is 422 memory_pattern_too_costly.
func TestMemoryDoorGrepBudget(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		f := newFixture(t, s)
		doors := memory.NewDoors(memory.New(s), memory.NewResolver(s, nil), memory.DoorsOptions{GrepBudget: time.Nanosecond})
		api, err := New(Deps{Auth: f.auth, Directory: f.dir, Memory: doors, CatalogBody: registry.New().CatalogBody()})
		if err != nil {
			t.Fatal(err)
		}
		srv := httptest.NewServer(api)
		t.Cleanup(srv.Close)
		c := client.New(srv.URL, f.admin)
		if _, err := c.MemoryWrite(context.Background(), "default", &client.MemoryWriteRequest{Path: "workspace/a", Content: "needle"}); err != nil {
			t.Fatal(err)
		}
		_, err = c.MemoryGrep(context.Background(), "default", &client.MemoryGrepRequest{Pattern: "needle"})
		wantRefusal(t, "grep over budget", err, 422, "memory_pattern_too_costly", "memory.pattern")
	})
}
