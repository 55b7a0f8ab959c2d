package httpapi

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/nexuskernel/nexus/core/store"
	"github.com/nexuskernel/nexus/core/store/storetest"
)

func TestAgentRoutes(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		f := newFixture(t, s)
		me := obj(t, f.must(t, 200, "GET", "/agent_api/v1/me", f.admin, nil), "principal")
		wsID := obj(t, f.must(t, 200, "GET", "/agent_api/v1/workspaces/default", f.admin, nil), "workspace")["public_id"]
		alice, aliceTok := f.newUser(t, f.admin, "default", "alice", "member")

		// The steward defaults to the caller.
		m := f.must(t, 201, "POST", "/agent_api/v1/workspaces/default/agents", f.admin,
			`{"agent":{"handle":"zed","display_name":"Zed"}}`)
		zed := obj(t, m, "agent")
		if zed["handle"] != "zed" || zed["display_name"] != "Zed" || zed["steward_user_public_id"] != me["public_id"] || zed["workspace_public_id"] != wsID || len(zed) != 6 {
			t.Fatalf("agent = %v", zed)
		}
		wantTime(t, "created_at", zed["created_at"])
		tok, _ := m["token"].(string)
		if !strings.HasPrefix(tok, "nxm_") {
			t.Fatalf("token = %q", tok)
		}
		// The token is the agent's.
		p := obj(t, f.must(t, 200, "GET", "/agent_api/v1/me", tok, nil), "principal")
		if p["kind"] != "agent" || p["public_id"] != zed["public_id"] {
			t.Fatalf("agent token authenticates as %v", p)
		}

		// An explicit steward, in either case of its id.
		m = f.must(t, 201, "POST", "/agent_api/v1/workspaces/"+wsID.(string)+"/agents", f.admin,
			map[string]any{"agent": map[string]any{"handle": "amy", "display_name": "Amy", "steward_user_public_id": strings.ToUpper(alice)}})
		if got := obj(t, m, "agent")["steward_user_public_id"]; got != alice {
			t.Fatalf("steward = %v, want %s", got, alice)
		}

		// The list: the create answers' objects, by handle, removed agents excluded.
		m = f.must(t, 200, "GET", "/agent_api/v1/workspaces/default/agents", aliceTok, nil)
		agents := list(t, m, "agents")
		if got := field(agents, "handle"); !cmp.Equal(got, []string{"amy", "bot", "zed"}) {
			t.Fatalf("agents = %v", got)
		}
		if diff := cmp.Diff(zed, agents[2]); diff != "" {
			t.Fatalf("list item differs from the create answer:\n%s", diff)
		}
		f.must(t, 204, "DELETE", "/agent_api/v1/workspaces/default/members/"+zed["public_id"].(string), f.admin, nil)
		m = f.must(t, 200, "GET", "/agent_api/v1/workspaces/default/agents", f.agent, nil)
		if got := field(list(t, m, "agents"), "handle"); !cmp.Equal(got, []string{"amy", "bot"}) {
			t.Fatalf("agents after removal = %v", got)
		}

		// Agent handles are per workspace: the same handle elsewhere is fine, here it is taken
		// (a removed agent's handle stays taken).
		f.newWorkspace(t, f.admin, "other")
		f.newAgent(t, f.admin, "other", "amy")
		f.refused(t, 409, "handle_taken", "", "POST", "/agent_api/v1/workspaces/default/agents", f.admin, `{"agent":{"handle":"amy","display_name":"Again"}}`)
		f.refused(t, 409, "handle_taken", "", "POST", "/agent_api/v1/workspaces/default/agents", f.admin, `{"agent":{"handle":"zed","display_name":"Again"}}`)

		// Kind and role.
		f.refused(t, 403, "not_user", "", "POST", "/agent_api/v1/workspaces/default/agents", f.agent, `{"agent":{"handle":"x","display_name":"X"}}`)
		f.refused(t, 403, "not_authorized", "", "POST", "/agent_api/v1/workspaces/default/agents", aliceTok, `{"agent":{"handle":"x","display_name":"X"}}`)
		f.refused(t, 404, "not_found", "", "POST", "/agent_api/v1/workspaces/other/agents", aliceTok, `{"agent":{"handle":"x","display_name":"X"}}`)
		f.refused(t, 404, "not_found", "", "GET", "/agent_api/v1/workspaces/other/agents", aliceTok, nil)
	})
}

func TestAgentCreateRefusals(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		f := newFixture(t, s)
		_, _ = f.newUser(t, f.admin, "default", "alice", "member")
		f.newWorkspace(t, f.admin, "other")
		outsider, _ := f.newUser(t, f.admin, "other", "olga", "owner")
		agentID := obj(t, f.must(t, 200, "GET", "/agent_api/v1/me", f.agent, nil), "principal")["public_id"].(string)
		const url = "/agent_api/v1/workspaces/default/agents"
		cases := []struct {
			name, body string
			status     int
			code, path string
		}{
			{"empty body", ``, 400, "parameter_missing", "agent"},
			{"no root", `{"handle":"x"}`, 400, "parameter_missing", "agent"},
			{"not an object", `"agent"`, 400, "parameter_invalid", ""},
			{"bad handle", `{"agent":{"handle":"X","display_name":"X"}}`, 422, "validation_failed", "agent.handle"},
			{"uuid handle", `{"agent":{"handle":"` + agentID + `","display_name":"X"}}`, 422, "validation_failed", "agent.handle"},
			{"no display name", `{"agent":{"handle":"x"}}`, 422, "validation_failed", "agent.display_name"},
			{"long display name", `{"agent":{"handle":"x","display_name":"` + strings.Repeat("x", 129) + `"}}`, 422, "validation_failed", "agent.display_name"},
			{"steward not an id", `{"agent":{"handle":"x","display_name":"X","steward_user_public_id":"alice"}}`, 422, "validation_failed", "agent.steward_user_public_id"},
			{"steward unknown", `{"agent":{"handle":"x","display_name":"X","steward_user_public_id":"0190d1f2-aaaa-7bbb-8ccc-123456789abc"}}`, 422, "validation_failed", "agent.steward_user_public_id"},
			{"steward of another workspace", `{"agent":{"handle":"x","display_name":"X","steward_user_public_id":"` + outsider + `"}}`, 422, "validation_failed", "agent.steward_user_public_id"},
			{"steward is an agent", `{"agent":{"handle":"x","display_name":"X","steward_user_public_id":"` + agentID + `"}}`, 422, "validation_failed", "agent.steward_user_public_id"},
			{"steward of the wrong type", `{"agent":{"handle":"x","display_name":"X","steward_user_public_id":7}}`, 422, "validation_failed", "agent.steward_user_public_id"},
			// A taken handle with another field wrong: 422 comes before 409.
			{"taken handle and bad name", `{"agent":{"handle":"bot","display_name":""}}`, 422, "validation_failed", "agent.display_name"},
		}
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				f.refused(t, c.status, c.code, c.path, "POST", url, f.admin, c.body)
			})
		}
		m := f.must(t, 200, "GET", url, f.admin, nil)
		if got := field(list(t, m, "agents"), "handle"); !cmp.Equal(got, []string{"bot"}) {
			t.Fatalf("refusals created agents: %v", got)
		}
	})
}

func TestUserRoutes(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		f := newFixture(t, s)
		m := f.must(t, 201, "POST", "/agent_api/v1/workspaces/default/users", f.admin,
			`{"user":{"handle":"alice","display_name":"Alice Liddell","role":"owner"}}`)
		u := obj(t, m, "user")
		if u["handle"] != "alice" || u["display_name"] != "Alice Liddell" || u["role"] != "owner" || len(u) != 5 {
			t.Fatalf("user = %v", u)
		}
		wantTime(t, "created_at", u["created_at"])
		tok := m["token"].(string)
		m = f.must(t, 200, "GET", "/agent_api/v1/me", tok, nil)
		if p := obj(t, m, "principal"); p["public_id"] != u["public_id"] || p["kind"] != "user" {
			t.Fatalf("new user's token authenticates as %v", p)
		}
		if ws := list(t, m, "workspaces"); len(ws) != 1 || ws[0]["handle"] != "default" || ws[0]["role"] != "owner" {
			t.Fatalf("new user's workspaces = %v", ws)
		}
		// As an owner, alice may invite in turn.
		_, bobTok := f.newUser(t, tok, "default", "bob", "member")

		// User handles are global: taken in another workspace too.
		f.newWorkspace(t, f.admin, "other")
		f.refused(t, 409, "handle_taken", "", "POST", "/agent_api/v1/workspaces/other/users", f.admin, `{"user":{"handle":"alice","display_name":"A","role":"member"}}`)
		f.refused(t, 409, "handle_taken", "", "POST", "/agent_api/v1/workspaces/other/users", f.admin, `{"user":{"handle":"admin","display_name":"A","role":"member"}}`)

		f.refused(t, 403, "not_user", "", "POST", "/agent_api/v1/workspaces/default/users", f.agent, `{"user":{"handle":"x","display_name":"X","role":"member"}}`)
		f.refused(t, 403, "not_authorized", "", "POST", "/agent_api/v1/workspaces/default/users", bobTok, `{"user":{"handle":"x","display_name":"X","role":"member"}}`)
		f.refused(t, 404, "not_found", "", "POST", "/agent_api/v1/workspaces/other/users", bobTok, `{"user":{"handle":"x","display_name":"X","role":"member"}}`)
		for name, c := range map[string]struct{ body, status, code, path string }{
			"no root":        {`{}`, "400", "parameter_missing", "user"},
			"not object":     {`[]`, "400", "parameter_invalid", ""},
			"bad handle":     {`{"user":{"handle":"a b","display_name":"X","role":"member"}}`, "422", "validation_failed", "user.handle"},
			"bad name":       {`{"user":{"handle":"x","display_name":"\n","role":"member"}}`, "422", "validation_failed", "user.display_name"},
			"no role":        {`{"user":{"handle":"x","display_name":"X"}}`, "422", "validation_failed", "user.role"},
			"agent role":     {`{"user":{"handle":"x","display_name":"X","role":"agent"}}`, "422", "validation_failed", "user.role"},
			"taken, no role": {`{"user":{"handle":"alice","display_name":"X"}}`, "422", "validation_failed", "user.role"},
		} {
			t.Run(name, func(t *testing.T) {
				status := map[string]int{"400": 400, "422": 422}[c.status]
				f.refused(t, status, c.code, c.path, "POST", "/agent_api/v1/workspaces/default/users", f.admin, c.body)
			})
		}
		m = f.must(t, 200, "GET", "/agent_api/v1/workspaces/default/members", f.admin, nil)
		if got := field(list(t, m, "members"), "handle"); !cmp.Equal(got, []string{"admin", "alice", "bob", "bot"}) {
			t.Fatalf("members = %v", got)
		}
	})
}

func TestMemberRoutes(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		f := newFixture(t, s)
		admin := obj(t, f.must(t, 200, "GET", "/agent_api/v1/me", f.admin, nil), "principal")["public_id"].(string)
		zoe, zoeTok := f.newUser(t, f.admin, "default", "zoe", "member")
		f.newAgent(t, f.admin, "default", "alpha")
		f.newWorkspace(t, f.admin, "other")
		carl, carlTok := f.newUser(t, f.admin, "other", "carl", "member")

		// Users by handle, then agents by handle.
		m := f.must(t, 200, "GET", "/agent_api/v1/workspaces/default/members", zoeTok, nil)
		ms := list(t, m, "members")
		type row struct{ Kind, Handle, Role string }
		var got []row
		for _, it := range ms {
			got = append(got, row{it["kind"].(string), it["handle"].(string), it["role"].(string)})
			wantTime(t, "joined_at", it["joined_at"])
			if len(it) != 6 {
				t.Errorf("member object keys: %v", it)
			}
		}
		want := []row{{"user", "admin", "owner"}, {"user", "zoe", "member"}, {"agent", "alpha", "agent"}, {"agent", "bot", "agent"}}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Fatalf("members (-want +got):\n%s", diff)
		}
		f.must(t, 200, "GET", "/agent_api/v1/workspaces/default/members", f.agent, nil)

		// Add an existing user.
		m = f.must(t, 201, "POST", "/agent_api/v1/workspaces/default/members", f.admin,
			map[string]any{"member": map[string]any{"user_public_id": carl, "role": "member"}})
		added := obj(t, m, "member")
		if added["kind"] != "user" || added["public_id"] != carl || added["handle"] != "carl" || added["role"] != "member" || added["display_name"] != "User carl" {
			t.Fatalf("added = %v", added)
		}
		wantTime(t, "joined_at", added["joined_at"])
		f.must(t, 200, "GET", "/agent_api/v1/workspaces/default", carlTok, nil)
		f.refused(t, 409, "already_member", "", "POST", "/agent_api/v1/workspaces/default/members", f.admin,
			map[string]any{"member": map[string]any{"user_public_id": carl, "role": "owner"}})
		f.refused(t, 409, "already_member", "", "POST", "/agent_api/v1/workspaces/default/members", f.admin,
			map[string]any{"member": map[string]any{"user_public_id": strings.ToUpper(admin), "role": "owner"}})

		for name, c := range map[string]struct {
			body       any
			status     int
			code, path string
		}{
			"no root":         {`{}`, 400, "parameter_missing", "member"},
			"not object":      {`1`, 400, "parameter_invalid", ""},
			"unknown user":    {map[string]any{"member": map[string]any{"user_public_id": "0190d1f2-aaaa-7bbb-8ccc-123456789abc", "role": "member"}}, 422, "validation_failed", "member.user_public_id"},
			"not an id":       {map[string]any{"member": map[string]any{"user_public_id": "carl", "role": "member"}}, 422, "validation_failed", "member.user_public_id"},
			"missing id":      {map[string]any{"member": map[string]any{"role": "member"}}, 422, "validation_failed", "member.user_public_id"},
			"an agent":        {`{"member":{"user_public_id":"` + obj(t, f.must(t, 200, "GET", "/agent_api/v1/me", f.agent, nil), "principal")["public_id"].(string) + `","role":"member"}}`, 422, "validation_failed", "member.user_public_id"},
			"bad role":        {map[string]any{"member": map[string]any{"user_public_id": zoe, "role": "agent"}}, 422, "validation_failed", "member.role"},
			"member, no role": {map[string]any{"member": map[string]any{"user_public_id": zoe}}, 422, "validation_failed", "member.role"},
		} {
			t.Run(name, func(t *testing.T) {
				f.refused(t, c.status, c.code, c.path, "POST", "/agent_api/v1/workspaces/default/members", f.admin, c.body)
			})
		}
		f.refused(t, 403, "not_user", "", "POST", "/agent_api/v1/workspaces/default/members", f.agent, `{"member":{}}`)
		f.refused(t, 403, "not_authorized", "", "POST", "/agent_api/v1/workspaces/default/members", zoeTok, `{"member":{}}`)
		f.refused(t, 403, "not_user", "", "DELETE", "/agent_api/v1/workspaces/default/members/"+zoe, f.agent, nil)
		f.refused(t, 403, "not_authorized", "", "DELETE", "/agent_api/v1/workspaces/default/members/"+carl, zoeTok, nil)

		// Removing a user: their token stops reaching the workspace at once, and only it.
		f.must(t, 204, "DELETE", "/agent_api/v1/workspaces/default/members/"+carl, f.admin, nil)
		f.refused(t, 404, "not_found", "", "GET", "/agent_api/v1/workspaces/default", carlTok, nil)
		f.refused(t, 404, "not_found", "", "GET", "/agent_api/v1/workspaces/default/members", carlTok, nil)
		f.must(t, 200, "GET", "/agent_api/v1/workspaces/other", carlTok, nil)
		f.refused(t, 404, "not_found", "", "DELETE", "/agent_api/v1/workspaces/default/members/"+carl, f.admin, nil)
		// ... and they can be added again.
		f.must(t, 201, "POST", "/agent_api/v1/workspaces/default/members", f.admin,
			map[string]any{"member": map[string]any{"user_public_id": carl, "role": "owner"}})

		// Unknown, malformed, and members of another workspace only: 404.
		for _, id := range []string{"0190d1f2-aaaa-7bbb-8ccc-123456789abc", "carl", obj(t, f.must(t, 200, "GET", "/agent_api/v1/me", f.agent, nil), "principal")["public_id"].(string)[:8]} {
			f.refused(t, 404, "not_found", "", "DELETE", "/agent_api/v1/workspaces/default/members/"+id, f.admin, nil)
		}
		olga, _ := f.newUser(t, f.admin, "other", "olga", "member")
		f.refused(t, 404, "not_found", "", "DELETE", "/agent_api/v1/workspaces/default/members/"+olga, f.admin, nil)
		otherAgent, _ := f.newAgent(t, f.admin, "other", "spy")
		f.refused(t, 404, "not_found", "", "DELETE", "/agent_api/v1/workspaces/default/members/"+otherAgent, f.admin, nil)
	})
}

func TestLastOwner(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		f := newFixture(t, s)
		admin := obj(t, f.must(t, 200, "GET", "/agent_api/v1/me", f.admin, nil), "principal")["public_id"].(string)
		f.refused(t, 409, "last_owner", "", "DELETE", "/agent_api/v1/workspaces/default/members/"+admin, f.admin, nil)
		alice, aliceTok := f.newUser(t, f.admin, "default", "alice", "owner")
		// With two owners, either may go; then the other is the last.
		f.must(t, 204, "DELETE", "/agent_api/v1/workspaces/default/members/"+admin, aliceTok, nil)
		f.refused(t, 404, "not_found", "", "GET", "/agent_api/v1/workspaces/default", f.admin, nil)
		f.refused(t, 409, "last_owner", "", "DELETE", "/agent_api/v1/workspaces/default/members/"+alice, aliceTok, nil)
		// A member who is not an owner never counts.
		_, _ = f.newUser(t, aliceTok, "default", "mo", "member")
		f.refused(t, 409, "last_owner", "", "DELETE", "/agent_api/v1/workspaces/default/members/"+alice, aliceTok, nil)
	})
}

// TestRemovedAgentIsUnauthorizedAtOnce: an agent's token, cached by a request, is refused by
// the very next request after its removal answers.
func TestRemovedAgentIsUnauthorizedAtOnce(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		f := newFixture(t, s)
		id, tok := f.newAgent(t, f.admin, "default", "temp")
		for i := 0; i < 3; i++ {
			f.must(t, 200, "GET", "/agent_api/v1/me", tok, nil)
		}
		f.must(t, 204, "DELETE", "/agent_api/v1/workspaces/default/members/"+id, f.admin, nil)
		for _, path := range []string{"/agent_api/v1/me", "/agent_api/v1/tools", "/agent_api/v1/workspaces"} {
			f.refused(t, 401, "unauthorized", "", "GET", path, tok, nil)
		}
		f.refused(t, 404, "not_found", "", "DELETE", "/agent_api/v1/workspaces/default/members/"+id, f.admin, nil)
	})
}
