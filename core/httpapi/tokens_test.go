package httpapi

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/nexuskernel/nexus/core/store"
	"github.com/nexuskernel/nexus/core/store/storetest"
)

func TestTokenRoutes(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		f := newFixture(t, s)
		// An empty body mints an unlabelled token that does not expire.
		m := f.must(t, 201, "POST", "/agent_api/v1/tokens", f.admin, nil)
		plain := m["token"].(string)
		if !strings.HasPrefix(plain, "nxm_") || len(plain) != 47 {
			t.Fatalf("token = %q", plain)
		}
		info := obj(t, m, "token_info")
		if info["label"] != "" || info["expires_at"] != nil || info["current"] != false {
			t.Fatalf("token_info = %v", info)
		}
		// A labelled, expiring one.
		exp := f.now.Add(time.Hour).UTC().Truncate(time.Millisecond)
		m = f.must(t, 201, "POST", "/agent_api/v1/tokens", f.admin,
			map[string]any{"token": map[string]any{"label": "ci runner", "expires_at": exp.Format(time.RFC3339Nano)}})
		expiring := m["token"].(string)
		info = obj(t, m, "token_info")
		if info["label"] != "ci runner" || info["expires_at"] != exp.Format(store.TimeLayout) {
			t.Fatalf("token_info = %v", info)
		}
		expiringID := info["public_id"].(string)
		f.must(t, 200, "GET", "/agent_api/v1/me", expiring, nil)

		// The list: the caller's live tokens, oldest first, the current one marked, no values.
		m = f.must(t, 200, "GET", "/agent_api/v1/tokens", plain, nil)
		ts := list(t, m, "tokens")
		if got := field(ts, "label"); !cmp.Equal(got, []string{"bootstrap", "", "ci runner"}) {
			t.Fatalf("labels = %v", got)
		}
		var current []bool
		for _, it := range ts {
			current = append(current, it["current"].(bool))
			if len(it) != 5 {
				t.Errorf("token object keys: %v", it)
			}
			for _, v := range it {
				if s, ok := v.(string); ok && strings.HasPrefix(s, "nxm_") {
					t.Fatalf("a token value was listed: %v", it)
				}
			}
		}
		if !cmp.Equal(current, []bool{false, true, false}) {
			t.Fatalf("current = %v", current)
		}
		// An agent's tokens are its own.
		m = f.must(t, 200, "GET", "/agent_api/v1/tokens", f.agent, nil)
		if n := len(list(t, m, "tokens")); n != 1 {
			t.Fatalf("agent lists %d tokens, want its one", n)
		}
		f.must(t, 201, "POST", "/agent_api/v1/tokens", f.agent, `{"token":{"label":"second"}}`)

		// Another's token is not found, never revoked.
		f.refused(t, 404, "not_found", "", "DELETE", "/agent_api/v1/tokens/"+expiringID, f.agent, nil)
		f.refused(t, 404, "not_found", "", "DELETE", "/agent_api/v1/tokens/0190d1f2-aaaa-7bbb-8ccc-123456789abc", f.admin, nil)
		f.refused(t, 404, "not_found", "", "DELETE", "/agent_api/v1/tokens/nope", f.admin, nil)
		f.must(t, 200, "GET", "/agent_api/v1/me", expiring, nil)

		// Revoking by id: 401 at once, though the token was just cached; again changes nothing.
		f.must(t, 204, "DELETE", "/agent_api/v1/tokens/"+strings.ToUpper(expiringID), f.admin, nil)
		f.refused(t, 401, "unauthorized", "", "GET", "/agent_api/v1/me", expiring, nil)
		f.must(t, 204, "DELETE", "/agent_api/v1/tokens/"+expiringID, f.admin, nil)
		m = f.must(t, 200, "GET", "/agent_api/v1/tokens", f.admin, nil)
		if got := field(list(t, m, "tokens"), "label"); !cmp.Equal(got, []string{"bootstrap", ""}) {
			t.Fatalf("labels after revocation = %v", got)
		}

		// Revoking the current token.
		f.must(t, 200, "GET", "/agent_api/v1/tools", plain, nil)
		f.must(t, 204, "DELETE", "/agent_api/v1/tokens/current", plain, nil)
		f.refused(t, 401, "unauthorized", "", "GET", "/agent_api/v1/tools", plain, nil)
		f.refused(t, 401, "unauthorized", "", "DELETE", "/agent_api/v1/tokens/current", plain, nil)
		f.must(t, 200, "GET", "/agent_api/v1/me", f.admin, nil)
	})
}

func TestTokenExpiry(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		f := newFixture(t, s)
		exp := f.now.Add(time.Minute)
		m := f.must(t, 201, "POST", "/agent_api/v1/tokens", f.admin,
			map[string]any{"token": map[string]any{"expires_at": exp.Format(time.RFC3339)}})
		tok := m["token"].(string)
		f.must(t, 200, "GET", "/agent_api/v1/me", tok, nil) // cached now
		f.advance(time.Minute)
		f.refused(t, 401, "unauthorized", "", "GET", "/agent_api/v1/me", tok, nil)
		m = f.must(t, 200, "GET", "/agent_api/v1/tokens", f.admin, nil)
		if n := len(list(t, m, "tokens")); n != 1 {
			t.Fatalf("an expired token is listed: %v", m)
		}
	})
}

func TestTokenCreateRefusals(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		f := newFixture(t, s)
		past := f.now.Add(-time.Second).Format(time.RFC3339Nano)
		for name, c := range map[string]struct {
			body       string
			status     int
			code, path string
		}{
			"not an object":    {`[]`, 400, "parameter_invalid", ""},
			"root wrong type":  {`{"token":"x"}`, 422, "validation_failed", "token"},
			"label wrong type": {`{"token":{"label":1}}`, 422, "validation_failed", "token.label"},
			"long label":       {`{"token":{"label":"` + strings.Repeat("l", 129) + `"}}`, 422, "validation_failed", "token.label"},
			"control in label": {`{"token":{"label":"a\tb"}}`, 422, "validation_failed", "token.label"},
			"bad time":         {`{"token":{"expires_at":"tomorrow"}}`, 422, "validation_failed", "token.expires_at"},
			"time wrong type":  {`{"token":{"expires_at":17}}`, 422, "validation_failed", "token.expires_at"},
			"past":             {`{"token":{"expires_at":"` + past + `"}}`, 422, "validation_failed", "token.expires_at"},
		} {
			t.Run(name, func(t *testing.T) {
				f.refused(t, c.status, c.code, c.path, "POST", "/agent_api/v1/tokens", f.admin, c.body)
			})
		}
		m := f.must(t, 200, "GET", "/agent_api/v1/tokens", f.admin, nil)
		if n := len(list(t, m, "tokens")); n != 1 {
			t.Fatalf("refusals minted tokens: %v", m)
		}
		f.must(t, 201, "POST", "/agent_api/v1/tokens", f.admin, `{"token":{"label":"`+strings.Repeat("l", 128)+`"}}`)
		f.must(t, 201, "POST", "/agent_api/v1/tokens", f.admin, `{}`)
	})
}
