package httpapi

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/nexuskernel/nexus/core/store"
	"github.com/nexuskernel/nexus/core/store/storetest"
)

// policyURL is the messaging policy door of a workspace.
func policyURL(ws string) string { return "/agent_api/v1/workspaces/" + ws + "/agent_messaging_policy" }

func putPolicy(agents string, version any) string {
	return fmt.Sprintf(`{"agent_messaging_policy":{"agents":%s},"expected_lock_version":%v}`, agents, version)
}

// wantPolicy checks a policy answer's whole shape.
func wantPolicy(t *testing.T, m map[string]any, agents map[string]any, version float64) {
	t.Helper()
	want := map[string]any{"agent_messaging_policy": map[string]any{"agents": agents}, "lock_version": version}
	if diff := cmp.Diff(want, m); diff != "" {
		t.Fatalf("policy answer differs (-want +got):\n%s", diff)
	}
}

func workspaceRowID(t *testing.T, s *store.Store, publicID string) int64 {
	t.Helper()
	w, err := store.WorkspaceByPublicID(context.Background(), s.Reader(), publicID)
	if err != nil {
		t.Fatal(err)
	}
	return w.ID
}

func TestAgentMessagingPolicyDoor(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		f := newFixture(t, s)
		ctx := context.Background()
		ws := f.newWorkspace(t, f.admin, "msg")
		scout, scoutToken := f.newAgent(t, f.admin, ws, "scout")
		helper, _ := f.newAgent(t, f.admin, ws, "helper")
		_, memberToken := f.newUser(t, f.admin, ws, "mia", "member")
		wsID := workspaceRowID(t, s, ws)

		// A new workspace: every agent public, lock version 0.
		wantPolicy(t, f.must(t, 200, "GET", policyURL(ws), f.admin, nil), map[string]any{}, 0)
		private := func(agent string) bool {
			t.Helper()
			p, err := store.AgentMessagingPrivate(ctx, s.Reader(), wsID, agent)
			if err != nil {
				t.Fatal(err)
			}
			return p
		}
		if private(scout) {
			t.Fatal("an agent absent from the policy reads private")
		}

		// Whole replacement; an upper-case key is stored in canonical form.
		m := f.must(t, 200, "PUT", policyURL(ws), f.admin,
			putPolicy(fmt.Sprintf(`{%q:"private",%q:"public"}`, strings.ToUpper(scout), helper), 0))
		wantPolicy(t, m, map[string]any{scout: "private", helper: "public"}, 1)
		wantPolicy(t, f.must(t, 200, "GET", policyURL(ws), f.admin, nil), map[string]any{scout: "private", helper: "public"}, 1)
		if !private(scout) || private(helper) {
			t.Fatalf("private(scout) = %v, private(helper) = %v; want true, false", private(scout), private(helper))
		}

		// A stale version is a conflict naming the current one.
		e := f.refused(t, 409, "stale_object", "", "PUT", policyURL(ws), f.admin, putPolicy(`{}`, 0))
		if e["current_lock_version"] != float64(1) {
			t.Fatalf("current_lock_version = %v, want 1", e["current_lock_version"])
		}

		// Standing: an agent is not a user; a member is not an owner; a stranger sees no workspace.
		f.refused(t, 403, "not_user", "", "GET", policyURL(ws), scoutToken, nil)
		f.refused(t, 403, "not_user", "", "PUT", policyURL(ws), scoutToken, putPolicy(`{}`, 1))
		f.refused(t, 403, "not_authorized", "", "GET", policyURL(ws), memberToken, nil)
		f.refused(t, 403, "not_authorized", "", "PUT", policyURL(ws), memberToken, putPolicy(`{}`, 1))
		f.refused(t, 404, "not_found", "", "GET", policyURL("nowhere"), f.admin, nil)
		f.refused(t, 404, "not_found", "", "GET", policyURL(ws), f.agent, nil)

		// The body's shape: 400s, before the entries are looked at.
		other := f.newWorkspace(t, f.admin, "elsewhere")
		stranger, _ := f.newAgent(t, f.admin, other, "stranger")
		for _, c := range []struct {
			body, code, path string
		}{
			{`[]`, "parameter_invalid", ""},
			{`{"expected_lock_version":1}`, "parameter_missing", "agent_messaging_policy"},
			{`{"agent_messaging_policy":[],"expected_lock_version":1}`, "parameter_invalid", "agent_messaging_policy"},
			{`{"agent_messaging_policy":{},"expected_lock_version":1}`, "parameter_missing", "agent_messaging_policy.agents"},
			{`{"agent_messaging_policy":{"agents":"x"},"expected_lock_version":1}`, "parameter_invalid", "agent_messaging_policy.agents"},
			{`{"agent_messaging_policy":{"agents":{}}}`, "parameter_missing", "expected_lock_version"},
			{putPolicy(`{}`, -1), "parameter_invalid", "expected_lock_version"},
			{putPolicy(`{}`, 1.5), "parameter_invalid", "expected_lock_version"},
			{putPolicy(`{}`, `"1"`), "parameter_invalid", "expected_lock_version"},
		} {
			f.refused(t, 400, c.code, c.path, "PUT", policyURL(ws), f.admin, c.body)
		}
		// The entries: 422 validation_failed at the entry's path.
		for _, c := range []struct{ key, value string }{
			{scout, `"secret"`},
			{scout, `true`},
			{"not-an-id", `"private"`},
			{"0190a5e2-0000-7000-8000-0000000000c1", `"private"`},
			{stranger, `"private"`},
		} {
			f.refused(t, 422, "validation_failed", "agent_messaging_policy.agents."+c.key, "PUT", policyURL(ws), f.admin,
				putPolicy(fmt.Sprintf(`{%q:%s}`, c.key, c.value), 1))
		}
		// Refusals changed nothing.
		wantPolicy(t, f.must(t, 200, "GET", policyURL(ws), f.admin, nil), map[string]any{scout: "private", helper: "public"}, 1)

		// Replacing with the empty map makes everyone public again.
		wantPolicy(t, f.must(t, 200, "PUT", policyURL(ws), f.admin, putPolicy(`{}`, 1)), map[string]any{}, 2)
		if private(scout) {
			t.Fatal("scout is still private after the policy was emptied")
		}
		// Another workspace has its own policy, at version 0.
		wantPolicy(t, f.must(t, 200, "GET", policyURL(other), f.admin, nil), map[string]any{}, 0)
	})
}
