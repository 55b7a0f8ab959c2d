package httpapi

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/nexuskernel/nexus/core/store"
	"github.com/nexuskernel/nexus/core/store/storetest"
)

// stewarded is a workspace seen from the member doors of one agent's profile and tokens: helper,
// whose steward is mia (a member), beside ned (a member who stewards nothing).
type stewarded struct {
	url                 string
	mia, ned            string // their tokens
	helperID, helperTok string
}

func newStewarded(t *testing.T, f *fixture) *stewarded {
	t.Helper()
	st := &stewarded{url: f.live(t)}
	miaID, mia := f.newUser(t, f.admin, "default", "mia", "member")
	_, st.ned = f.newUser(t, f.admin, "default", "ned", "member")
	st.mia = mia
	m := f.must(t, 201, "POST", "/agent_api/v1/workspaces/default/agents", f.admin,
		map[string]any{"agent": map[string]any{"handle": "helper", "display_name": "Helper", "steward_user_public_id": miaID}})
	st.helperID, st.helperTok = obj(t, m, "agent")["public_id"].(string), m["token"].(string)
	return st
}

func agentProfilePath(ws, agent string) string {
	return "/agent_api/v1/workspaces/" + ws + "/agents/" + agent + "/profile/configuration"
}

func agentTokensPath(ws, agent string) string {
	return "/agent_api/v1/workspaces/" + ws + "/agents/" + agent + "/tokens"
}

// TestAgentDoorsWhoMayCall: the three member doors of one agent take its steward or an owner,
// in the order of docs/api.md#an-agents-profile-and-tokens: the workspace (404), the kind of
// member (403 not_user), the agent (404), the standing (403 not_authorized), then the body. A
// refusal stores nothing.
func TestAgentDoorsWhoMayCall(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		f := newFixture(t, s)
		st := newStewarded(t, f)
		f.newWorkspace(t, f.admin, "lab")
		for _, c := range []struct{ method, path, body string }{
			{"GET", agentProfilePath("default", "helper"), ""},
			{"PUT", agentProfilePath("default", "helper"), `[]`},
			{"POST", agentTokensPath("default", "helper"), `[]`},
		} {
			t.Run(c.method+" "+c.path, func(t *testing.T) {
				at := func(ws, agent string) string {
					return strings.Replace(strings.Replace(c.path, "/default/", "/"+ws+"/", 1), "/helper/", "/"+agent+"/", 1)
				}
				send(t, c.method, st.url+c.path, "", c.body).refused(t, 401, "unauthorized")
				// The workspace first: mia is not in lab, whatever the agent.
				send(t, c.method, st.url+at("lab", "nobody"), st.mia, c.body).refused(t, 404, "not_found")
				// The kind of member: an agent, even the agent itself, uses its own doors.
				send(t, c.method, st.url+c.path, st.helperTok, c.body).refused(t, 403, "not_user")
				send(t, c.method, st.url+at("default", "nobody"), st.helperTok, c.body).refused(t, 403, "not_user")
				// The agent: unknown, malformed, or of another workspace.
				send(t, c.method, st.url+at("default", "nobody"), st.ned, c.body).refused(t, 404, "not_found")
				send(t, c.method, st.url+at("default", "01900000-0000-7000-8000-0000000000ff"), f.admin, c.body).refused(t, 404, "not_found")
				send(t, c.method, st.url+at("lab", "helper"), f.admin, c.body).refused(t, 404, "not_found")
				// The standing, before the body: ned neither owns the workspace nor stewards helper;
				// mia does not steward bot, the admin's.
				send(t, c.method, st.url+c.path, st.ned, c.body).refused(t, 403, "not_authorized")
				send(t, c.method, st.url+at("default", "bot"), st.mia, c.body).refused(t, 403, "not_authorized")
				// The steward and an owner reach the body (here refused: not an object).
				if c.method != "GET" {
					send(t, c.method, st.url+c.path, st.mia, c.body).refused(t, 400, "parameter_invalid")
					send(t, c.method, st.url+at("default", strings.ToUpper(st.helperID)), f.admin, c.body).refused(t, 400, "parameter_invalid")
				}
			})
		}
		// Nothing above stored a profile or minted a token.
		if got := send(t, "GET", st.url+agentProfilePath("default", "helper"), st.mia, "").ok(t); got != `{"configuration":`+emptyConfiguration+`,"imports":{"pins":null,"problems":[]}}` {
			t.Fatalf("the profile after refusals: %s", got)
		}
		var n int
		if err := s.Reader().Get(t.Context(), &n, `SELECT COUNT(*) FROM tokens t JOIN agents a ON a.id = t.agent_id WHERE a.handle = 'helper'`); err != nil || n != 1 {
			t.Fatalf("helper's tokens after refusals: %d, %v", n, err)
		}
		// A removed agent is none.
		f.must(t, 204, "DELETE", "/agent_api/v1/workspaces/default/members/"+st.helperID, f.admin, nil)
		send(t, "GET", st.url+agentProfilePath("default", "helper"), f.admin, "").refused(t, 404, "not_found")
		send(t, "POST", st.url+agentTokensPath("default", st.helperID), st.mia, "").refused(t, 404, "not_found")
	})
}

// TestAgentProfileMemberDoor: the member door answers the agent's own door's bytes and words: a
// steward's replacement reads back at the agent's door and the other way round, and every
// refusal of the agent's door comes back the same, storing nothing.
func TestAgentProfileMemberDoor(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		f := newFixture(t, s)
		st := newStewarded(t, f)
		member := st.url + agentProfilePath("default", "helper")
		own := st.url + profilePath

		put := send(t, "PUT", member, st.mia, `{"configuration":{"kernel_tools":["nexus.memory.read"],"approval_mode":"ask",`+
			`"default_model":"mock/scripted","instructions":"Be brief."}}`).ok(t)
		if got := send(t, "GET", own, st.helperTok, "").ok(t); got != put {
			t.Fatalf("the agent reads another profile than its steward wrote:\n%s", cmp.Diff(put, got))
		}
		if got := send(t, "GET", st.url+agentProfilePath("default", st.helperID), f.admin, "").ok(t); got != put {
			t.Fatalf("an owner by public id reads:\n%s", cmp.Diff(put, got))
		}
		// The agent's own door keeps working, and the steward reads what it wrote.
		again := send(t, "PUT", own, st.helperTok, `{"configuration":{"instructions":"Be thorough."}}`).ok(t)
		if got := send(t, "GET", member, st.mia, "").ok(t); got != again || !strings.Contains(got, `"instructions":"Be thorough."`) {
			t.Fatalf("the steward reads %s after the agent's own PUT %s", got, again)
		}
		stored := again

		for _, tc := range append(grammarCases(t), profileOnlyCases...) {
			t.Run(tc.name, func(t *testing.T) {
				body := `{"configuration":` + tc.cfg + `}`
				want := send(t, "PUT", own, st.helperTok, body)
				got := send(t, "PUT", member, st.mia, body)
				got.refused(t, 422, "validation_failed", x("field", tc.field), x("word", tc.word), x("path", "configuration."+tc.path))
				if want.status != got.status || !cmp.Equal(want.refusal(t), got.refusal(t), cmp.AllowUnexported(decodedRefusal{}, extra{})) {
					t.Fatalf("the member door answers %s, the agent's %s", got.body, want.body)
				}
			})
		}
		for _, tc := range []struct{ name, body, code, path string }{
			{"empty body", ``, "parameter_missing", "configuration"},
			{"null configuration", `{"configuration":null}`, "parameter_missing", "configuration"},
			{"repeated root", `{"configuration":{},"configuration":{}}`, "parameter_invalid", "configuration"},
			{"unknown root key", `{"configuration":{},"agent":"helper"}`, "parameter_invalid", "agent"},
		} {
			t.Run(tc.name, func(t *testing.T) {
				send(t, "PUT", member, st.mia, tc.body).refused(t, 400, tc.code, x("path", tc.path))
			})
		}
		big := `{"configuration":{"instructions":"` + strings.Repeat("b", DefaultBodyLimit) + `"}}`
		send(t, "PUT", member, st.ned, big).refused(t, 413, "content_too_large")

		if got := send(t, "GET", member, st.mia, "").ok(t); got != stored {
			t.Fatalf("refused PUTs changed the profile:\n%s", cmp.Diff(stored, got))
		}
	})
}

// TestAgentTokenDoor: a steward mints a labelled token for its agent; revoke_others revokes the
// agent's other tokens at once (the lost-token case); the body's refusals store nothing.
func TestAgentTokenDoor(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		f := newFixture(t, s)
		st := newStewarded(t, f)
		path := agentTokensPath("default", "helper")

		m := f.must(t, 201, "POST", path, st.mia, nil)
		first := m["token"].(string)
		info := obj(t, m, "token_info")
		if info["label"] != "minted by mia" || info["current"] != false || info["expires_at"] != nil || obj(t, m, "agent")["handle"] != "helper" {
			t.Fatalf("the first mint: %v", m)
		}
		wantTime(t, "token_info.created_at", info["created_at"])
		if r, ok := m["revoked_token_public_ids"].([]any); !ok || len(r) != 0 {
			t.Fatalf("revoked_token_public_ids = %v, want []", m["revoked_token_public_ids"])
		}
		me := f.must(t, 200, "GET", "/agent_api/v1/me", first, nil)
		if p := obj(t, me, "principal"); p["kind"] != "agent" || p["public_id"] != st.helperID {
			t.Fatalf("the minted token is %v", p)
		}
		// The agent's tokens as it lists them: the initial and the minted one.
		initialID := ""
		for _, tk := range list(t, f.must(t, 200, "GET", "/agent_api/v1/tokens", first, nil), "tokens") {
			if tk["current"] == false {
				initialID = tk["public_id"].(string)
			}
		}
		f.must(t, 200, "GET", "/agent_api/v1/me", st.helperTok, nil)

		// The lost-token case: an owner mints a fresh token and revokes every other.
		expires := f.now.Add(time24h).UTC().Format(store.TimeLayout)
		m = f.must(t, 201, "POST", path, f.admin, map[string]any{"token": map[string]any{"label": "rescued", "expires_at": expires}, "revoke_others": true})
		fresh := m["token"].(string)
		if info := obj(t, m, "token_info"); info["label"] != "rescued" || info["expires_at"] != expires {
			t.Fatalf("the rescue mint: %v", m)
		}
		revoked, _ := m["revoked_token_public_ids"].([]any)
		if len(revoked) != 2 || !contains(revoked, initialID) {
			t.Fatalf("revoked %v, want the initial (%s) and the first minted token", revoked, initialID)
		}
		for _, old := range []string{st.helperTok, first} {
			f.refused(t, 401, "unauthorized", "", "GET", "/agent_api/v1/me", old, nil)
		}
		tokens := list(t, f.must(t, 200, "GET", "/agent_api/v1/tokens", fresh, nil), "tokens")
		if len(tokens) != 1 || tokens[0]["label"] != "rescued" || tokens[0]["current"] != true {
			t.Fatalf("the agent's tokens after the rescue: %v", tokens)
		}

		// The body's refusals, after the standing; none mints or revokes anything.
		for _, tc := range []struct {
			name string
			body any
			path string
		}{
			{"expiry in the past", map[string]any{"token": map[string]any{"expires_at": f.now.Add(-time24h).UTC().Format(store.TimeLayout)}, "revoke_others": true}, "token.expires_at"},
			{"label with a control character", map[string]any{"token": map[string]any{"label": "a\tb"}}, "token.label"},
			{"revoke_others not a boolean", `{"revoke_others":"yes"}`, "revoke_others"},
			{"an unknown key", `{"revoke_others":true,"agent":"helper"}`, "agent"},
			{"an unknown token key", `{"token":{"expires":"soon"},"revoke_others":true}`, "token.expires"},
		} {
			t.Run(tc.name, func(t *testing.T) {
				f.refused(t, 422, "validation_failed", tc.path, "POST", path, st.mia, tc.body)
			})
		}
		f.refused(t, 403, "not_authorized", "", "POST", path, st.ned, map[string]any{"revoke_others": true})
		if got := list(t, f.must(t, 200, "GET", "/agent_api/v1/tokens", fresh, nil), "tokens"); len(got) != 1 {
			t.Fatalf("refused mints changed the agent's tokens: %v", got)
		}
	})
}

// time24h is a day, for expiries.
const time24h = 24 * time.Hour

func contains(items []any, s string) bool {
	for _, it := range items {
		if it == s {
			return true
		}
	}
	return false
}
