package httpapi

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/nexuskernel/nexus/core/store"
	"github.com/nexuskernel/nexus/core/store/storetest"
)

func TestWorkspaceRoutes(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		f := newFixture(t, s)
		// The bootstrap workspace, as the admin sees it.
		m := f.must(t, 200, "GET", "/agent_api/v1/workspaces", f.admin, nil)
		ws := list(t, m, "workspaces")
		if len(ws) != 1 || ws[0]["handle"] != "default" || ws[0]["name"] != "Default" || ws[0]["role"] != "owner" {
			t.Fatalf("workspaces = %v", ws)
		}
		wantTime(t, "created_at", ws[0]["created_at"])
		defaultID := ws[0]["public_id"].(string)
		if len(ws[0]) != 5 {
			t.Errorf("workspace object has keys %v, want public_id, handle, name, role, created_at", ws[0])
		}

		// Create: the caller owns the new workspace, and it lists by handle.
		m = f.must(t, 201, "POST", "/agent_api/v1/workspaces", f.admin, `{"workspace":{"handle":"acme","name":"Acme Inc."}}`)
		acme := obj(t, m, "workspace")
		if acme["handle"] != "acme" || acme["name"] != "Acme Inc." || acme["role"] != "owner" {
			t.Fatalf("created = %v", acme)
		}
		f.newWorkspace(t, f.admin, "beta")
		m = f.must(t, 200, "GET", "/agent_api/v1/workspaces", f.admin, nil)
		if got := field(list(t, m, "workspaces"), "handle"); !cmp.Equal(got, []string{"acme", "beta", "default"}) {
			t.Fatalf("handles = %v, want acme, beta, default", got)
		}

		// Read by handle, by public id, and by an upper-case public id.
		for _, ref := range []string{"acme", acme["public_id"].(string), strings.ToUpper(acme["public_id"].(string))} {
			m = f.must(t, 200, "GET", "/agent_api/v1/workspaces/"+ref, f.admin, nil)
			if diff := cmp.Diff(acme, obj(t, m, "workspace")); diff != "" {
				t.Fatalf("GET %s differs from the create answer:\n%s", ref, diff)
			}
		}

		// An agent sees its one workspace, with role agent; it cannot create one.
		m = f.must(t, 200, "GET", "/agent_api/v1/workspaces", f.agent, nil)
		ws = list(t, m, "workspaces")
		if len(ws) != 1 || ws[0]["public_id"] != defaultID || ws[0]["role"] != "agent" {
			t.Fatalf("agent's workspaces = %v", ws)
		}
		f.refused(t, 403, "not_user", "", "POST", "/agent_api/v1/workspaces", f.agent, `{"workspace":{"handle":"x","name":"X"}}`)
		// Kind comes before the body.
		f.refused(t, 403, "not_user", "", "POST", "/agent_api/v1/workspaces", f.agent, `[]`)
		f.refused(t, 404, "not_found", "", "GET", "/agent_api/v1/workspaces/acme", f.agent, nil)

		// A taken handle is a conflict; an invalid one is refused before it.
		f.refused(t, 409, "handle_taken", "", "POST", "/agent_api/v1/workspaces", f.admin, `{"workspace":{"handle":"acme","name":"Again"}}`)
		f.refused(t, 422, "validation_failed", "workspace.name", "POST", "/agent_api/v1/workspaces", f.admin, `{"workspace":{"handle":"acme","name":""}}`)
	})
}

func TestWorkspaceCreateRefusals(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, s *store.Store) { testWorkspaceCreateRefusals(t, newFixture(t, s)) })
}

func testWorkspaceCreateRefusals(t *testing.T, f *fixture) {
	const url = "/agent_api/v1/workspaces"
	cases := []struct {
		name, body string
		status     int
		code, path string
	}{
		{"empty body", ``, 400, "parameter_missing", "workspace"},
		{"no root", `{}`, 400, "parameter_missing", "workspace"},
		{"null root", `{"workspace":null}`, 400, "parameter_missing", "workspace"},
		{"not an object", `[1]`, 400, "parameter_invalid", ""},
		{"not json", `{"workspace":`, 400, "parameter_invalid", ""},
		{"root of the wrong type", `{"workspace":"acme"}`, 422, "validation_failed", "workspace"},
		{"handle of the wrong type", `{"workspace":{"handle":5,"name":"A"}}`, 422, "validation_failed", "workspace.handle"},
		{"no handle", `{"workspace":{"name":"A"}}`, 422, "validation_failed", "workspace.handle"},
		{"upper-case handle", `{"workspace":{"handle":"Acme","name":"A"}}`, 422, "validation_failed", "workspace.handle"},
		{"leading dash", `{"workspace":{"handle":"-acme","name":"A"}}`, 422, "validation_failed", "workspace.handle"},
		{"leading underscore", `{"workspace":{"handle":"_acme","name":"A"}}`, 422, "validation_failed", "workspace.handle"},
		{"dot", `{"workspace":{"handle":"a.b","name":"A"}}`, 422, "validation_failed", "workspace.handle"},
		{"64 characters", `{"workspace":{"handle":"` + strings.Repeat("a", 64) + `","name":"A"}}`, 422, "validation_failed", "workspace.handle"},
		{"uuid form", `{"workspace":{"handle":"0190d1f2-aaaa-7bbb-8ccc-123456789abc","name":"A"}}`, 422, "validation_failed", "workspace.handle"},
		{"no name", `{"workspace":{"handle":"acme"}}`, 422, "validation_failed", "workspace.name"},
		{"129 characters", `{"workspace":{"handle":"acme","name":"` + strings.Repeat("é", 129) + `"}}`, 422, "validation_failed", "workspace.name"},
		{"control character", `{"workspace":{"handle":"acme","name":"a\u0007b"}}`, 422, "validation_failed", "workspace.name"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f.refused(t, c.status, c.code, c.path, "POST", url, f.admin, c.body)
		})
	}
	// Nothing was created by any of them.
	m := f.must(t, 200, "GET", url, f.admin, nil)
	if n := len(list(t, m, "workspaces")); n != 1 {
		t.Fatalf("%d workspaces after refusals, want 1", n)
	}
	// The bounds themselves are accepted.
	f.must(t, 201, "POST", url, f.admin, `{"workspace":{"handle":"`+strings.Repeat("a", 63)+`","name":"`+strings.Repeat("é", 128)+`"}}`)
	f.must(t, 201, "POST", url, f.admin, `{"workspace":{"handle":"0","name":"x"}}`)
	f.must(t, 201, "POST", url, f.admin, `{"workspace":{"handle":"a-b_c9","name":"x"}}`)
}

func TestWorkspaceVisibility(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		f := newFixture(t, s)
		for _, ref := range []string{"nope", "0190d1f2-aaaa-7bbb-8ccc-123456789abc", "NOT%20A%20HANDLE", "%E2%82%AC", "0190d1f2-aaaa-7bbb-8ccc-12345678zzzz"} {
			f.refused(t, 404, "not_found", "", "GET", "/agent_api/v1/workspaces/"+ref, f.admin, nil)
		}
	})
}

func TestMe(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		f := newFixture(t, s)
		f.newWorkspace(t, f.admin, "acme")
		m := f.must(t, 200, "GET", "/agent_api/v1/me", f.admin, nil)
		p := obj(t, m, "principal")
		if p["kind"] != "user" || p["handle"] != "admin" || p["display_name"] != "admin" || p["public_id"] == "" || len(p) != 4 {
			t.Fatalf("principal = %v", p)
		}
		if got := field(list(t, m, "workspaces"), "handle"); !cmp.Equal(got, []string{"acme", "default"}) {
			t.Fatalf("workspaces = %v", got)
		}
		m = f.must(t, 200, "GET", "/agent_api/v1/me", f.agent, nil)
		p = obj(t, m, "principal")
		if p["kind"] != "agent" || p["handle"] != "bot" || p["display_name"] != "Bot" {
			t.Fatalf("agent principal = %v", p)
		}
		if ws := list(t, m, "workspaces"); len(ws) != 1 || ws[0]["role"] != "agent" {
			t.Fatalf("agent workspaces = %v", ws)
		}
	})
}
