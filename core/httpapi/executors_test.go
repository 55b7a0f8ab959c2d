package httpapi

import (
	"errors"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/nexuskernel/nexus/core/store"
	"github.com/nexuskernel/nexus/core/store/storetest"
)

func TestExecutorLifecycle(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		f := newFixture(t, s)
		wsID := obj(t, f.must(t, 200, "GET", "/agent_api/v1/workspaces/default", f.admin, nil), "workspace")["public_id"].(string)

		// The admin owns exactly one workspace: the field may be omitted.
		m := f.must(t, 201, "POST", "/agent_api/v1/executors", f.admin, `{"executor":{"kind":"runner","display_name":"laptop"}}`)
		ex := obj(t, m, "executor")
		want := map[string]any{"public_id": ex["public_id"], "kind": "runner", "status": "active", "display_name": "laptop",
			"workspace_public_id": wsID, "created_at": ex["created_at"]}
		if diff := cmp.Diff(want, ex); diff != "" {
			t.Fatalf("executor (-want +got):\n%s", diff)
		}
		wantTime(t, "created_at", ex["created_at"])
		tok := m["token"].(string)
		if !strings.HasPrefix(tok, "nxe_") || len(tok) != 47 {
			t.Fatalf("token = %q", tok)
		}
		id := ex["public_id"].(string)

		// Its identity on the executor plane.
		m = f.must(t, 200, "GET", "/agent_api/v1/executor", tok, nil)
		if diff := cmp.Diff(ex, obj(t, m, "executor")); diff != "" {
			t.Fatalf("identity differs from the create answer:\n%s", diff)
		}
		if m["measured_at"] != f.now.UTC().Format(store.TimeLayout) {
			t.Fatalf("measured_at = %v, want the server clock %s", m["measured_at"], f.now.UTC().Format(store.TimeLayout))
		}

		// Rotation: a new token, the old one refused at once, the same executor.
		m = f.must(t, 201, "POST", "/agent_api/v1/executors/"+id+"/token", f.admin, nil)
		if diff := cmp.Diff(ex, obj(t, m, "executor")); diff != "" {
			t.Fatalf("rotation changed the executor:\n%s", diff)
		}
		tok2 := m["token"].(string)
		if tok2 == tok {
			t.Fatal("rotation returned the old token")
		}
		f.refused(t, 401, "unauthorized", "", "GET", "/agent_api/v1/executor", tok, nil)
		f.must(t, 200, "GET", "/agent_api/v1/executor", tok2, nil)

		// Revocation: status revoked, tokens refused at once, the hook run once.
		m = f.must(t, 200, "DELETE", "/agent_api/v1/executors/"+id, f.admin, nil)
		got := obj(t, m, "executor")
		want["status"] = "revoked"
		if diff := cmp.Diff(want, got); diff != "" {
			t.Fatalf("revoked executor (-want +got):\n%s", diff)
		}
		f.refused(t, 401, "unauthorized", "", "GET", "/agent_api/v1/executor", tok2, nil)
		f.effects.mu.Lock()
		settled, revoked := len(f.effects.settled), len(f.effects.revoked)
		f.effects.mu.Unlock()
		if settled != 1 || revoked != 1 {
			t.Fatalf("revocation effects: settled %d, revoked %d; want 1, 1", settled, revoked)
		}
		// Again: the same answer, no second effect; no token for a revoked executor.
		m = f.must(t, 200, "DELETE", "/agent_api/v1/executors/"+id, f.admin, nil)
		if diff := cmp.Diff(want, obj(t, m, "executor")); diff != "" {
			t.Fatalf("second revocation:\n%s", diff)
		}
		f.refused(t, 409, "executor_revoked", "", "POST", "/agent_api/v1/executors/"+id+"/token", f.admin, nil)
		f.effects.mu.Lock()
		settled = len(f.effects.settled)
		f.effects.mu.Unlock()
		if settled != 1 {
			t.Fatalf("second revocation ran the effects again")
		}
		// The read still shows it, revoked.
		m = f.must(t, 200, "GET", "/agent_api/v1/executors/"+id, f.agent, nil)
		if st := obj(t, m, "executor")["status"]; st != "revoked" {
			t.Fatalf("status = %v", st)
		}
	})
}

func TestExecutorRevocationRollsBackWithItsEffects(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		f := newFixture(t, s)
		id, tok := f.newExecutor(t, f.admin, "default", "tool_provider", "search")
		f.effects.mu.Lock()
		f.effects.fail = errors.New("settling failed")
		f.effects.mu.Unlock()
		f.refused(t, 500, "internal_error", "", "DELETE", "/agent_api/v1/executors/"+id, f.admin, nil)
		// Nothing changed: the executor is active and its token works.
		m := f.must(t, 200, "GET", "/agent_api/v1/executor", tok, nil)
		if st := obj(t, m, "executor")["status"]; st != "active" {
			t.Fatalf("status after a failed revocation = %v", st)
		}
		f.effects.mu.Lock()
		f.effects.fail = nil
		f.effects.mu.Unlock()
		f.must(t, 200, "DELETE", "/agent_api/v1/executors/"+id, f.admin, nil)
		f.refused(t, 401, "unauthorized", "", "GET", "/agent_api/v1/executor", tok, nil)
	})
}

func TestExecutorCreateRefusals(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		f := newFixture(t, s)
		_, memberTok := f.newUser(t, f.admin, "default", "mia", "member")
		// Another user's workspace, which the admin is not in.
		f.newWorkspace(t, f.admin, "mine")
		_, ownerTok := f.newUser(t, f.admin, "mine", "otto", "owner")
		f.newWorkspace(t, ownerTok, "foreign")
		const url = "/agent_api/v1/executors"
		for name, c := range map[string]struct {
			token, body string
			status      int
			code, path  string
		}{
			"agent":                     {f.agent, `{"executor":{"kind":"runner","display_name":"x","workspace_public_id":"default"}}`, 403, "not_user", ""},
			"agent, bad body":           {f.agent, `[]`, 403, "not_user", ""},
			"member, not owner":         {memberTok, `{"executor":{"kind":"runner","display_name":"x","workspace_public_id":"default"}}`, 403, "not_authorized", ""},
			"member, bad kind":          {memberTok, `{"executor":{"kind":"robot","display_name":"x","workspace_public_id":"default"}}`, 403, "not_authorized", ""},
			"empty body":                {f.admin, ``, 400, "parameter_missing", "executor"},
			"not an object":             {f.admin, `"x"`, 400, "parameter_invalid", ""},
			"bad kind":                  {f.admin, `{"executor":{"kind":"robot","display_name":"x","workspace_public_id":"default"}}`, 422, "validation_failed", "executor.kind"},
			"no kind":                   {f.admin, `{"executor":{"display_name":"x","workspace_public_id":"default"}}`, 422, "validation_failed", "executor.kind"},
			"no display name":           {f.admin, `{"executor":{"kind":"runner","workspace_public_id":"default"}}`, 422, "validation_failed", "executor.display_name"},
			"long display name":         {f.admin, `{"executor":{"kind":"runner","display_name":"` + strings.Repeat("d", 129) + `","workspace_public_id":"default"}}`, 422, "validation_failed", "executor.display_name"},
			"required with two owned":   {f.admin, `{"executor":{"kind":"runner","display_name":"x"}}`, 422, "validation_failed", "executor.workspace_public_id"},
			"required with none owned":  {memberTok, `{"executor":{"kind":"runner","display_name":"x"}}`, 422, "validation_failed", "executor.workspace_public_id"},
			"foreign workspace":         {f.admin, `{"executor":{"kind":"runner","display_name":"x","workspace_public_id":"foreign"}}`, 422, "validation_failed", "executor.workspace_public_id"},
			"unknown workspace":         {f.admin, `{"executor":{"kind":"runner","display_name":"x","workspace_public_id":"0190d1f2-aaaa-7bbb-8ccc-123456789abc"}}`, 422, "validation_failed", "executor.workspace_public_id"},
			"malformed workspace":       {f.admin, `{"executor":{"kind":"runner","display_name":"x","workspace_public_id":"No Such"}}`, 422, "validation_failed", "executor.workspace_public_id"},
			"workspace of wrong type":   {f.admin, `{"executor":{"kind":"runner","display_name":"x","workspace_public_id":3}}`, 422, "validation_failed", "executor.workspace_public_id"},
			"foreign and bad kind":      {f.admin, `{"executor":{"kind":"robot","display_name":"x","workspace_public_id":"foreign"}}`, 422, "validation_failed", "executor.kind"},
			"member of foreign, by id?": {memberTok, `{"executor":{"kind":"runner","display_name":"x","workspace_public_id":"mine"}}`, 422, "validation_failed", "executor.workspace_public_id"},
		} {
			t.Run(name, func(t *testing.T) {
				f.refused(t, c.status, c.code, c.path, "POST", url, c.token, c.body)
			})
		}
		m := f.must(t, 200, "GET", url+"?status=revoked", f.admin, nil)
		m2 := f.must(t, 200, "GET", url, f.admin, nil)
		if len(list(t, m, "executors"))+len(list(t, m2, "executors")) != 0 {
			t.Fatal("a refused request created an executor")
		}
		// By handle or by public id, the owner of two workspaces names one.
		mineID := obj(t, f.must(t, 200, "GET", "/agent_api/v1/workspaces/mine", f.admin, nil), "workspace")["public_id"].(string)
		for _, ref := range []string{"mine", mineID, strings.ToUpper(mineID)} {
			m := f.must(t, 201, "POST", url, f.admin, map[string]any{"executor": map[string]any{"kind": "tool_provider", "display_name": "p", "workspace_public_id": ref}})
			if obj(t, m, "executor")["workspace_public_id"] != mineID {
				t.Fatalf("created in %v, want %s", obj(t, m, "executor")["workspace_public_id"], mineID)
			}
		}
	})
}

func TestExecutorOwnerRouteRefusals(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		f := newFixture(t, s)
		_, memberTok := f.newUser(t, f.admin, "default", "mia", "member")
		id, tok := f.newExecutor(t, f.admin, "default", "runner", "laptop")
		for _, route := range []struct{ method, path string }{
			{"POST", "/agent_api/v1/executors/" + id + "/token"},
			{"DELETE", "/agent_api/v1/executors/" + id},
		} {
			f.refused(t, 403, "not_user", "", route.method, route.path, f.agent, nil)
			f.refused(t, 403, "not_authorized", "", route.method, route.path, memberTok, nil)
			for _, bad := range []string{"0190d1f2-aaaa-7bbb-8ccc-123456789abc", "laptop"} {
				f.refused(t, 404, "not_found", "", route.method, strings.Replace(route.path, id, bad, 1), f.admin, nil)
			}
		}
		f.must(t, 200, "GET", "/agent_api/v1/executor", tok, nil)
	})
}

func TestExecutorDiscovery(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		f := newFixture(t, s)
		b, _ := f.newExecutor(t, f.admin, "default", "runner", "beta")
		a2, _ := f.newExecutor(t, f.admin, "default", "tool_provider", "alpha")
		a1, _ := f.newExecutor(t, f.admin, "default", "runner", "alpha")
		c, _ := f.newExecutor(t, f.admin, "default", "runner", "gamma")
		f.must(t, 200, "DELETE", "/agent_api/v1/executors/"+c, f.admin, nil)
		f.newWorkspace(t, f.admin, "other")
		o, _ := f.newExecutor(t, f.admin, "other", "runner", "omega")
		_, aliceTok := f.newUser(t, f.admin, "default", "alice", "member")

		ids := func(m map[string]any) []string { return field(list(t, m, "executors"), "public_id") }
		// By display name then public id; a1 was created after a2 and sorts after it.
		alpha := []string{a2, a1}
		if a1 < a2 {
			alpha = []string{a1, a2}
		}
		for _, c := range []struct {
			token, query string
			want         []string
		}{
			{f.admin, "", append(append([]string{}, alpha...), b, o)},
			{f.admin, "?workspace=default", append(append([]string{}, alpha...), b)},
			{f.admin, "?kind=runner", []string{a1, b, o}},
			{f.admin, "?kind=tool_provider", []string{a2}},
			{f.admin, "?status=revoked", []string{c}},
			{f.admin, "?status=active&kind=runner&workspace=other", []string{o}},
			{aliceTok, "", append(append([]string{}, alpha...), b)},
			{f.agent, "?kind=runner", []string{a1, b}},
		} {
			m := f.must(t, 200, "GET", "/agent_api/v1/executors"+c.query, c.token, nil)
			if diff := cmp.Diff(c.want, ids(m)); diff != "" {
				t.Errorf("GET executors%s (-want +got):\n%s", c.query, diff)
			}
		}
		for _, q := range []string{"?kind=robot", "?status=gone", "?kind=", "?status=ACTIVE"} {
			if q == "?kind=" {
				f.must(t, 200, "GET", "/agent_api/v1/executors"+q, f.admin, nil)
				continue
			}
			f.refused(t, 400, "parameter_invalid", "", "GET", "/agent_api/v1/executors"+q, f.admin, nil)
		}
		f.refused(t, 404, "not_found", "", "GET", "/agent_api/v1/executors?workspace=other", aliceTok, nil)

		// One read: every field of docs/api.md#executors.
		m := f.must(t, 200, "GET", "/agent_api/v1/executors/"+b, aliceTok, nil)
		e := obj(t, m, "executor")
		keys := make([]string, 0, len(e))
		for k := range e {
			keys = append(keys, k)
		}
		wantKeys := []string{"announced_at", "connected_at", "created_at", "definition_digests", "display_name", "environment", "kind", "last_seen_at",
			"presence", "public_id", "served_documents", "served_tools", "status", "workspace_public_id"}
		if diff := cmp.Diff(wantKeys, sorted(keys)); diff != "" {
			t.Fatalf("executor keys (-want +got):\n%s", diff)
		}
		if e["presence"] != "not_yet_seen" || e["last_seen_at"] != nil || e["connected_at"] != nil || len(e["served_tools"].([]any)) != 0 {
			t.Fatalf("executor = %v", e)
		}
		f.refused(t, 404, "not_found", "", "GET", "/agent_api/v1/executors/"+o, aliceTok, nil)
		f.refused(t, 404, "not_found", "", "GET", "/agent_api/v1/executors/nope", aliceTok, nil)
	})
}

func sorted(s []string) []string {
	out := append([]string(nil), s...)
	sort.Strings(out)
	return out
}

func TestExecutorPresence(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		f := newFixture(t, s)
		id, tok := f.newExecutor(t, f.admin, "default", "runner", "laptop")
		read := func() map[string]any {
			return obj(t, f.must(t, 200, "GET", "/agent_api/v1/executors/"+id, f.admin, nil), "executor")
		}
		if p := read()["presence"]; p != "not_yet_seen" {
			t.Fatalf("presence before any request = %v", p)
		}
		first := f.now
		f.must(t, 200, "GET", "/agent_api/v1/executor", tok, nil)
		e := read()
		if e["presence"] != "online" || e["last_seen_at"] != first.UTC().Format(store.TimeLayout) {
			t.Fatalf("after a request: %v", e)
		}
		// Within 10 s a request writes nothing; after it, it does.
		f.advance(9 * time.Second)
		f.must(t, 200, "GET", "/agent_api/v1/executor", tok, nil)
		if got := read()["last_seen_at"]; got != first.UTC().Format(store.TimeLayout) {
			t.Fatalf("last_seen_at written again within 10 s: %v", got)
		}
		f.advance(time.Second)
		f.must(t, 200, "GET", "/agent_api/v1/executor", tok, nil)
		second := f.now
		if got := read()["last_seen_at"]; got != second.UTC().Format(store.TimeLayout) {
			t.Fatalf("last_seen_at = %v, want %s", got, second.UTC().Format(store.TimeLayout))
		}
		f.advance(30 * time.Second)
		if p := read()["presence"]; p != "online" {
			t.Fatalf("presence 30 s after the last request = %v, want online", p)
		}
		f.advance(time.Millisecond)
		if p := read()["presence"]; p != "offline" {
			t.Fatalf("presence past 30 s = %v, want offline", p)
		}
	})
}
