package httpapi

import (
	"bytes"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/nexuskernel/nexus/core/identity"
	"github.com/nexuskernel/nexus/core/store"
	"github.com/nexuskernel/nexus/core/store/storetest"
)

// identityRoutes are the routes this API serves besides health and the catalog. The test fails
// when a route is added without being listed here, so that the seal tests below cover it.
var identityRoutes = []string{
	"DELETE /agent_api/v1/executors/{public_id}",
	"DELETE /agent_api/v1/tokens/current",
	"DELETE /agent_api/v1/tokens/{public_id}",
	"DELETE /agent_api/v1/workspaces/{ws}/members/{public_id}",
	"GET /agent_api/v1/executor",
	"GET /agent_api/v1/executor/events",
	"GET /agent_api/v1/executor/uploads/{public_id}",
	"GET /agent_api/v1/executor/uploads/{public_id}/bytes",
	"GET /agent_api/v1/executors",
	"GET /agent_api/v1/executors/{public_id}",
	"GET /agent_api/v1/me",
	"GET /agent_api/v1/profile/configuration",
	"GET /agent_api/v1/tokens",
	"GET /agent_api/v1/uploads/{public_id}",
	"GET /agent_api/v1/uploads/{public_id}/bytes",
	"GET /agent_api/v1/workspaces",
	"GET /agent_api/v1/workspaces/{ws}",
	"GET /agent_api/v1/workspaces/{ws}/agent_messaging_policy",
	"GET /agent_api/v1/workspaces/{ws}/agents",
	"GET /agent_api/v1/workspaces/{ws}/agents/{agent}/profile/configuration",
	"GET /agent_api/v1/workspaces/{ws}/members",
	"GET /agent_api/v1/workspaces/{ws}/memory",
	"POST /agent_api/v1/executor/uploads",
	"POST /agent_api/v1/executors",
	"POST /agent_api/v1/executors/{public_id}/token",
	"POST /agent_api/v1/tokens",
	"POST /agent_api/v1/tools/assembly",
	"POST /agent_api/v1/uploads",
	"POST /agent_api/v1/workspaces",
	"POST /agent_api/v1/workspaces/{ws}/agents",
	"POST /agent_api/v1/workspaces/{ws}/agents/{agent}/tokens",
	"POST /agent_api/v1/workspaces/{ws}/agents/{agent}/tools/assembly",
	"POST /agent_api/v1/workspaces/{ws}/members",
	"POST /agent_api/v1/workspaces/{ws}/memory/delete",
	"POST /agent_api/v1/workspaces/{ws}/memory/edit",
	"POST /agent_api/v1/workspaces/{ws}/memory/grep",
	"POST /agent_api/v1/workspaces/{ws}/memory/show",
	"POST /agent_api/v1/workspaces/{ws}/memory/write",
	"POST /agent_api/v1/workspaces/{ws}/users",
	"PUT /agent_api/v1/profile/configuration",
	"PUT /agent_api/v1/workspaces/{ws}/agent_messaging_policy",
	"PUT /agent_api/v1/workspaces/{ws}/agents/{agent}/profile/configuration",
}

func TestRouteTable(t *testing.T) {
	t.Parallel()
	f := newFixture(t, storetest.Open(t, store.SQLite))
	var got []string
	for _, p := range f.api.patterns {
		if !strings.HasSuffix(p, "/healthz") && !strings.HasSuffix(p, "/readyz") && p != "GET /agent_api/v1/tools" {
			got = append(got, p)
		}
	}
	sort.Strings(got)
	if diff := cmp.Diff(identityRoutes, got); diff != "" {
		t.Fatalf("routes (-listed +served):\n%s", diff)
	}
}

// TestPlaneSealEveryRoute: a member token (user or agent) on every executor-plane route, and an
// executor token on every member-plane route, is 401 unauthorized, exactly like an unknown token,
// whatever the rest of the request.
func TestPlaneSealEveryRoute(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		f := newFixture(t, s)
		exID, exTok := f.newExecutor(t, f.admin, "default", "runner", "laptop")
		unknownMember, _ := identity.MintToken(identity.MemberPlane)
		unknownExec, _ := identity.MintToken(identity.ExecutorPlane)
		body := `{"workspace":{"handle":"w","name":"W"},"agent":{"handle":"a","display_name":"A"},"user":{"handle":"u","display_name":"U","role":"member"},"member":{"user_public_id":"` + exID + `","role":"member"},"executor":{"kind":"runner","display_name":"x"}}`
		for _, pattern := range f.api.patterns {
			method, path, _ := strings.Cut(pattern, " ")
			path = strings.NewReplacer("{ws}", "default", "{public_id}", exID).Replace(path)
			var wrong []string
			switch planeOf(path) {
			case planeExecutor:
				wrong = []string{f.admin, f.agent, unknownExec, "", "nxe_short"}
			case planeMember:
				wrong = []string{exTok, unknownMember, "", "nxm_short"}
			default:
				continue
			}
			for i, tok := range wrong {
				resp := f.do(t, method, path, tok, strings.NewReader(body), nil)
				wantError(t, resp, 401, "unauthorized")
				if resp.Header.Get("WWW-Authenticate") != "Bearer" {
					t.Errorf("%s with wrong token %d: WWW-Authenticate = %q", pattern, i, resp.Header.Get("WWW-Authenticate"))
				}
			}
		}
		// Nothing the refused requests carried took effect.
		m := f.must(t, 200, "GET", "/agent_api/v1/workspaces", f.admin, nil)
		if n := len(list(t, m, "workspaces")); n != 1 {
			t.Fatalf("%d workspaces after sealed requests", n)
		}
		m = f.must(t, 200, "GET", "/agent_api/v1/executor", exTok, nil)
		if obj(t, m, "executor")["status"] != "active" {
			t.Fatal("a sealed request revoked the executor")
		}
	})
}

// TestCrossWorkspaceIsolation: nothing of a workspace one is not in is readable or writable, and
// every such attempt answers 404 (a body field naming it, 422), never 403.
func TestCrossWorkspaceIsolation(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		f := newFixture(t, s)
		// otto owns "foreign", with a person, an agent and a runner; the admin and its agent are
		// not in it.
		_, otto := f.newUser(t, f.admin, "default", "otto", "member")
		f.must(t, 201, "POST", "/agent_api/v1/workspaces", otto, `{"workspace":{"handle":"foreign","name":"Foreign"}}`)
		fid := obj(t, f.must(t, 200, "GET", "/agent_api/v1/workspaces/foreign", otto, nil), "workspace")["public_id"].(string)
		fUser, _ := f.newUser(t, otto, "foreign", "fiona", "member")
		fAgent, fAgentTok := f.newAgent(t, otto, "foreign", "fagent")
		fExec, fExecTok := f.newExecutor(t, otto, "foreign", "runner", "fbox")
		fTokenID := list(t, f.must(t, 200, "GET", "/agent_api/v1/tokens", otto, nil), "tokens")[0]["public_id"].(string)

		before := func() []string {
			var out []string
			for _, p := range []string{"/agent_api/v1/workspaces/foreign/members", "/agent_api/v1/workspaces/foreign/agents",
				"/agent_api/v1/executors?workspace=foreign", "/agent_api/v1/executors?workspace=foreign&status=revoked", "/agent_api/v1/tokens"} {
				out = append(out, string(mustRaw(t, f, p, otto)))
			}
			return out
		}()

		for _, who := range []struct{ name, token string }{{"user", f.admin}, {"agent", f.agent}} {
			for _, ref := range []string{"foreign", fid} {
				for _, c := range []struct {
					method, path, body string
				}{
					{"GET", "/agent_api/v1/workspaces/" + ref, ""},
					{"GET", "/agent_api/v1/workspaces/" + ref + "/agents", ""},
					{"GET", "/agent_api/v1/workspaces/" + ref + "/members", ""},
					{"POST", "/agent_api/v1/workspaces/" + ref + "/agents", `{"agent":{"handle":"evil","display_name":"E"}}`},
					{"POST", "/agent_api/v1/workspaces/" + ref + "/users", `{"user":{"handle":"evil","display_name":"E","role":"owner"}}`},
					{"POST", "/agent_api/v1/workspaces/" + ref + "/members", `{"member":{"user_public_id":"` + fUser + `","role":"owner"}}`},
					{"DELETE", "/agent_api/v1/workspaces/" + ref + "/members/" + fUser, ""},
					{"DELETE", "/agent_api/v1/workspaces/" + ref + "/members/" + fAgent, ""},
					{"GET", "/agent_api/v1/executors?workspace=" + ref, ""},
				} {
					f.refused(t, 404, "not_found", "", c.method, c.path, who.token, c.body)
				}
			}
			for _, c := range []struct{ method, path string }{
				{"GET", "/agent_api/v1/executors/" + fExec},
				{"POST", "/agent_api/v1/executors/" + fExec + "/token"},
				{"DELETE", "/agent_api/v1/executors/" + fExec},
				{"DELETE", "/agent_api/v1/tokens/" + fTokenID},
				// A foreign member through the caller's own workspace.
				{"DELETE", "/agent_api/v1/workspaces/default/members/" + fUser},
				{"DELETE", "/agent_api/v1/workspaces/default/members/" + fAgent},
			} {
				status := 404
				code := "not_found"
				if who.name == "agent" && strings.Contains(c.path, "/workspaces/default/") {
					// The agent is in default: its kind is refused before the id is looked at.
					status, code = 403, "not_user"
				}
				f.refused(t, status, code, "", c.method, c.path, who.token, nil)
			}
			// Listings never include it.
			m := f.must(t, 200, "GET", "/agent_api/v1/executors?status=active", who.token, nil)
			for _, e := range list(t, m, "executors") {
				if e["public_id"] == fExec {
					t.Fatalf("%s lists a foreign executor", who.name)
				}
			}
			for _, p := range []string{"/agent_api/v1/workspaces", "/agent_api/v1/me"} {
				if bytes.Contains(mustRaw(t, f, p, who.token), []byte(fid)) {
					t.Fatalf("%s: %s shows the foreign workspace", who.name, p)
				}
			}
		}
		// A body field naming it is a validation failure, never a hint that it exists.
		for _, ref := range []string{"foreign", fid} {
			f.refused(t, 422, "validation_failed", "executor.workspace_public_id", "POST", "/agent_api/v1/executors", f.admin,
				map[string]any{"executor": map[string]any{"kind": "runner", "display_name": "x", "workspace_public_id": ref}})
		}
		// The foreign principals see nothing of default either.
		f.refused(t, 404, "not_found", "", "GET", "/agent_api/v1/workspaces/default", fAgentTok, nil)
		f.refused(t, 401, "unauthorized", "", "GET", "/agent_api/v1/workspaces/default", fExecTok, nil)

		after := func() []string {
			var out []string
			for _, p := range []string{"/agent_api/v1/workspaces/foreign/members", "/agent_api/v1/workspaces/foreign/agents",
				"/agent_api/v1/executors?workspace=foreign", "/agent_api/v1/executors?workspace=foreign&status=revoked", "/agent_api/v1/tokens"} {
				out = append(out, string(mustRaw(t, f, p, otto)))
			}
			return out
		}()
		if diff := cmp.Diff(before, after); diff != "" {
			t.Fatalf("the foreign workspace changed:\n%s", diff)
		}
		f.must(t, 200, "GET", "/agent_api/v1/executor", fExecTok, nil)
		f.must(t, 200, "GET", "/agent_api/v1/me", fAgentTok, nil)
	})
}

func mustRaw(t *testing.T, f *fixture, path, token string) []byte {
	t.Helper()
	resp := f.do(t, "GET", path, token, nil, nil)
	var b bytes.Buffer
	_, _ = b.ReadFrom(resp.Body)
	if resp.StatusCode != 200 {
		t.Fatalf("GET %s: %d %s", path, resp.StatusCode, b.String())
	}
	return b.Bytes()
}

// TestCheckOrder follows the order on every owner route of a workspace (docs/api.md#identity): body
// size, token, visibility, kind, role, body (400, then 422), conflicts.
func TestCheckOrder(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		f := newFixture(t, s)
		_, memberTok := f.newUser(t, f.admin, "default", "mia", "member")
		_, otto := f.newUser(t, f.admin, "default", "otto", "member")
		f.must(t, 201, "POST", "/agent_api/v1/workspaces", otto, `{"workspace":{"handle":"foreign","name":"F"}}`)
		big := `{"x":"` + strings.Repeat("a", DefaultBodyLimit) + `"}`
		for _, route := range []struct {
			path     string
			conflict string // a well-formed body that conflicts, when the route has one
			word     string
			invalid  string // a well-formed body that fails validation and would also conflict
		}{
			{"/agent_api/v1/workspaces/%s/agents", `{"agent":{"handle":"bot","display_name":"B"}}`, "handle_taken", `{"agent":{"handle":"bot","display_name":""}}`},
			{"/agent_api/v1/workspaces/%s/users", `{"user":{"handle":"mia","display_name":"M","role":"member"}}`, "handle_taken", `{"user":{"handle":"mia","display_name":"M","role":"boss"}}`},
			{"/agent_api/v1/workspaces/%s/members", "", "", `{"member":{"user_public_id":"x","role":"member"}}`},
		} {
			own := strings.Replace(route.path, "%s", "default", 1)
			foreign := strings.Replace(route.path, "%s", "foreign", 1)
			f.refused(t, 413, "content_too_large", "", "POST", foreign, "", big)
			f.refused(t, 401, "unauthorized", "", "POST", foreign, "", `[]`)
			f.refused(t, 404, "not_found", "", "POST", foreign, f.agent, `[]`)
			f.refused(t, 404, "not_found", "", "POST", foreign, memberTok, `[]`)
			f.refused(t, 403, "not_user", "", "POST", own, f.agent, `[]`)
			f.refused(t, 403, "not_authorized", "", "POST", own, memberTok, `[]`)
			f.refused(t, 400, "parameter_invalid", "", "POST", own, f.admin, `[]`)
			f.refused(t, 400, "parameter_missing", "", "POST", own, f.admin, ``)
			f.refused(t, 422, "validation_failed", "", "POST", own, f.admin, route.invalid)
			if route.conflict != "" {
				f.refused(t, 409, route.word, "", "POST", own, f.admin, route.conflict)
			}
		}
	})
}
