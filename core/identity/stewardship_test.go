package identity_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/nexuskernel/nexus/core/identity"
	"github.com/nexuskernel/nexus/core/refusal"
	"github.com/nexuskernel/nexus/core/store"
	"github.com/nexuskernel/nexus/core/store/storetest"
)

// stewardWorld is a workspace with an owner (admin), a member who is bot's steward (mia), a member
// who stewards nothing (ned) and two agents: bot (mia's) and rex (the admin's).
type stewardWorld struct {
	s             *store.Store
	auth          *identity.Authenticator
	dir           *identity.Directory
	owner         *identity.Access
	admin         *identity.Principal
	mia, ned      *identity.Principal
	miaID, nedID  string
	bot, rex      *identity.CreatedAgent
	botPrincipal  *identity.Principal
	clock         time.Time
	unknownPublic string
}

func newStewardWorld(t *testing.T, s *store.Store) *stewardWorld {
	t.Helper()
	ctx := context.Background()
	w := &stewardWorld{s: s, clock: t0, unknownPublic: "01900000-0000-7000-8000-0000000000ff"}
	boot, err := identity.Bootstrap(ctx, s, t.TempDir(), "", t0)
	if err != nil {
		t.Fatal(err)
	}
	w.auth = identity.NewAuthenticator(s, func() time.Time { return w.clock })
	w.dir = identity.NewDirectory(s, w.auth, identity.DirectoryOptions{Now: func() time.Time { return w.clock }})
	if w.admin, err = w.auth.Member(ctx, boot.Token); err != nil {
		t.Fatal(err)
	}
	if w.owner, err = w.dir.Access(ctx, w.admin, "default", identity.NeedOwner); err != nil {
		t.Fatal(err)
	}
	user := func(handle string) (*identity.Principal, string) {
		us, err := w.dir.CreateUser(ctx, w.owner, &identity.CreateUserRequest{Handle: handle, DisplayName: handle, Role: identity.RoleMember})
		if err != nil {
			t.Fatal(err)
		}
		p, err := w.auth.Member(ctx, us.Token)
		if err != nil {
			t.Fatal(err)
		}
		return p, us.User.PublicID
	}
	w.mia, w.miaID = user("mia")
	w.ned, w.nedID = user("ned")
	if w.bot, err = w.dir.CreateAgent(ctx, w.owner, &identity.CreateAgentRequest{Handle: "bot", DisplayName: "Bot", StewardUserPublicID: &w.miaID}); err != nil {
		t.Fatal(err)
	}
	if w.rex, err = w.dir.CreateAgent(ctx, w.owner, &identity.CreateAgentRequest{Handle: "rex", DisplayName: "Rex"}); err != nil {
		t.Fatal(err)
	}
	if w.botPrincipal, err = w.auth.Member(ctx, w.bot.Token); err != nil {
		t.Fatal(err)
	}
	return w
}

// word is a refusal's code, "" for none; an untyped error fails the test.
func word(t *testing.T, err error) string {
	t.Helper()
	if err == nil {
		return ""
	}
	r, ok := refusal.As(err)
	if !ok {
		t.Fatalf("untyped error %v", err)
	}
	return r.Code
}

// TestAgentAccess: the standing over one agent (docs/api.md#an-agents-profile-and-tokens), in the
// door's order: the workspace, the kind of member, the agent, the steward or an owner.
func TestAgentAccess(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		w := newStewardWorld(t, s)
		lab, err := w.dir.CreateWorkspace(ctx, w.admin, &identity.CreateWorkspaceRequest{Handle: "lab", Name: "Lab"})
		if err != nil {
			t.Fatal(err)
		}
		gone, err := w.dir.CreateAgent(ctx, w.owner, &identity.CreateAgentRequest{Handle: "gone", DisplayName: "Gone", StewardUserPublicID: &w.miaID})
		if err != nil {
			t.Fatal(err)
		}
		if err := w.dir.RemoveMember(ctx, w.owner, gone.Agent.PublicID); err != nil {
			t.Fatal(err)
		}
		for _, c := range []struct {
			name     string
			caller   *identity.Principal
			ws, ref  string
			want     string
			wantText string
		}{
			{"an owner over another's agent", w.admin, "default", "bot", "", ""},
			{"the steward by handle", w.mia, "default", "bot", "", ""},
			{"the steward by public id, upper case", w.mia, w.owner.Workspace.PublicID, strings.ToUpper(w.bot.Agent.PublicID), "", ""},
			{"a member over another's agent", w.mia, "default", "rex", "not_authorized", "steward"},
			{"a member who stewards nothing", w.ned, "default", "bot", "not_authorized", "steward"},
			{"the agent itself", w.botPrincipal, "default", "bot", "not_user", ""},
			{"a workspace the caller is not in", w.mia, "lab", "bot", "not_found", "No workspace"},
			{"an agent of another workspace", w.admin, lab.PublicID, "bot", "not_found", "No agent"},
			{"an unknown handle", w.admin, "default", "ghost", "not_found", "No agent"},
			{"an unknown public id", w.admin, "default", w.unknownPublic, "not_found", "No agent"},
			{"not a handle", w.admin, "default", "Bad Handle", "not_found", "No agent"},
			{"a removed agent", w.mia, "default", "gone", "not_found", "No agent"},
		} {
			acc, err := w.dir.AgentAccess(ctx, c.caller, c.ws, c.ref)
			if got := word(t, err); got != c.want {
				t.Errorf("%s: %q, want %q", c.name, got, c.want)
				continue
			}
			if err != nil {
				if r, _ := refusal.As(err); !strings.Contains(r.Message, c.wantText) {
					t.Errorf("%s: message %q lacks %q", c.name, r.Message, c.wantText)
				}
				continue
			}
			if acc.Agent.PublicID != w.bot.Agent.PublicID || acc.Agent.ID == 0 || acc.Workspace.Handle != "default" {
				t.Errorf("%s: access %+v", c.name, acc)
			}
		}
	})
}

// TestRecheckAgent: a write over an agent reads the standing again in its own transaction: an
// owner demoted since, a steward removed since, an agent removed since each refuse it, and
// nothing is written.
func TestRecheckAgent(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		w := newStewardWorld(t, s)
		// Ned becomes an owner, reads his standing over bot, and is made a plain member again.
		if err := w.dir.RemoveMember(ctx, w.owner, w.nedID); err != nil {
			t.Fatal(err)
		}
		if _, err := w.dir.AddMember(ctx, w.owner, &identity.AddMemberRequest{UserPublicID: w.nedID, Role: identity.RoleOwner}); err != nil {
			t.Fatal(err)
		}
		nedAcc, err := w.dir.AgentAccess(ctx, w.ned, "default", "bot")
		if err != nil {
			t.Fatal(err)
		}
		miaAcc, err := w.dir.AgentAccess(ctx, w.mia, "default", "bot")
		if err != nil {
			t.Fatal(err)
		}
		if err := w.dir.RemoveMember(ctx, w.owner, w.nedID); err != nil {
			t.Fatal(err)
		}
		if _, err := w.dir.AddMember(ctx, w.owner, &identity.AddMemberRequest{UserPublicID: w.nedID, Role: identity.RoleMember}); err != nil {
			t.Fatal(err)
		}
		tokens := func() int {
			var n int
			if err := s.Reader().Get(ctx, &n, `SELECT COUNT(*) FROM tokens WHERE agent_id = ?`, miaAcc.Agent.ID); err != nil {
				t.Fatal(err)
			}
			return n
		}
		before := tokens()
		if _, err := w.dir.CreateAgentToken(ctx, nedAcc, &identity.CreateAgentTokenRequest{}); word(t, err) != "not_authorized" {
			t.Fatalf("a demoted owner minted: %v", err)
		}
		recheck := func(acc *identity.AgentAccess) string {
			return word(t, s.Write(ctx, func(tx *store.Tx) error { return w.dir.RecheckAgent(ctx, tx, acc) }))
		}
		if got := recheck(miaAcc); got != "" {
			t.Fatalf("the steward's standing: %q", got)
		}
		// The steward removed from the workspace no longer sees it.
		if err := w.dir.RemoveMember(ctx, w.owner, w.miaID); err != nil {
			t.Fatal(err)
		}
		if got := recheck(miaAcc); got != "not_found" {
			t.Fatalf("a removed steward: %q, want not_found", got)
		}
		if _, err := w.dir.AddMember(ctx, w.owner, &identity.AddMemberRequest{UserPublicID: w.miaID, Role: identity.RoleMember}); err != nil {
			t.Fatal(err)
		}
		if got := recheck(miaAcc); got != "" {
			t.Fatalf("the steward back in the workspace: %q", got)
		}
		// The agent removed.
		if err := w.dir.RemoveMember(ctx, w.owner, w.bot.Agent.PublicID); err != nil {
			t.Fatal(err)
		}
		if _, err := w.dir.CreateAgentToken(ctx, miaAcc, &identity.CreateAgentTokenRequest{}); word(t, err) != "not_found" {
			t.Fatalf("a token for a removed agent: %v", err)
		}
		if n := tokens(); n != before {
			t.Fatalf("refused mints stored tokens: %d, want %d", n, before)
		}
	})
}

// TestCreateAgentToken: a steward mints a labelled token for an agent; revoke_others revokes every
// other live token, whose cached decisions are void before the answer, and names them.
func TestCreateAgentToken(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		w := newStewardWorld(t, s)
		acc, err := w.dir.AgentAccess(ctx, w.mia, "default", "bot")
		if err != nil {
			t.Fatal(err)
		}
		// A token the agent minted itself, and one that has expired.
		own, err := w.dir.CreateToken(ctx, w.botPrincipal, &identity.CreateTokenRequest{Label: "own"})
		if err != nil {
			t.Fatal(err)
		}
		soon := store.Millis(t0.Add(time.Minute))
		if _, err := w.dir.CreateToken(ctx, w.botPrincipal, &identity.CreateTokenRequest{Label: "short", ExpiresAt: &soon}); err != nil {
			t.Fatal(err)
		}

		first, err := w.dir.CreateAgentToken(ctx, acc, &identity.CreateAgentTokenRequest{})
		if err != nil {
			t.Fatal(err)
		}
		if first.Info.Label != "minted by mia" || first.Info.Current || first.Info.ExpiresAt != nil || len(first.Revoked) != 0 {
			t.Fatalf("first mint: %+v", first)
		}
		p, err := w.auth.Member(ctx, first.Token)
		if err != nil || p.Kind != identity.KindAgent || p.PublicID != w.bot.Agent.PublicID {
			t.Fatalf("the minted token authenticates as %+v, %v", p, err)
		}
		// The earlier tokens still work (and are cached now).
		for _, tok := range []string{w.bot.Token, own.Token} {
			if _, err := w.auth.Member(ctx, tok); err != nil {
				t.Fatalf("an earlier token before revoke_others: %v", err)
			}
		}

		w.clock = t0.Add(2 * time.Minute) // the short token has expired
		until := store.Millis(w.clock.Add(time.Hour))
		second, err := w.dir.CreateAgentToken(ctx, acc, &identity.CreateAgentTokenRequest{Label: "laptop", ExpiresAt: &until, RevokeOthers: true})
		if err != nil {
			t.Fatal(err)
		}
		live, err := store.LiveTokensOf(ctx, s.Reader(), store.KindAgent, acc.Agent.ID, store.Millis(w.clock))
		if err != nil {
			t.Fatal(err)
		}
		if len(live) != 1 || live[0].PublicID != second.Info.PublicID || second.Info.Label != "laptop" || *second.Info.ExpiresAt != until {
			t.Fatalf("live tokens after revoke_others: %+v; minted %+v", live, second.Info)
		}
		var wantRevoked []string
		if err := s.Reader().Select(ctx, &wantRevoked, `SELECT public_id FROM tokens WHERE agent_id = ? AND revoked_at = ? ORDER BY public_id`,
			acc.Agent.ID, store.Millis(w.clock)); err != nil {
			t.Fatal(err)
		}
		if len(wantRevoked) != 3 || strings.Join(second.Revoked, ",") != strings.Join(wantRevoked, ",") {
			t.Fatalf("revoked %v, want the initial, the own and the first minted token %v", second.Revoked, wantRevoked)
		}
		for _, tok := range []string{w.bot.Token, own.Token, first.Token} {
			if _, err := w.auth.Member(ctx, tok); word(t, err) != "unauthorized" {
				t.Fatalf("a revoked token still authenticates: %v", err)
			}
		}
		if _, err := w.auth.Member(ctx, second.Token); err != nil {
			t.Fatalf("the new token: %v", err)
		}

		for _, c := range []struct {
			name string
			req  identity.CreateAgentTokenRequest
			path string
		}{
			{"expiry in the past", identity.CreateAgentTokenRequest{ExpiresAt: &soon}, "token.expires_at"},
			{"label too long", identity.CreateAgentTokenRequest{Label: strings.Repeat("l", 129)}, "token.label"},
			{"label with a control character", identity.CreateAgentTokenRequest{Label: "a\nb", RevokeOthers: true}, "token.label"},
		} {
			_, err := w.dir.CreateAgentToken(ctx, acc, &c.req)
			r, ok := refusal.As(err)
			if path, _ := r.Get("path"); !ok || r.Code != "validation_failed" || path != c.path {
				t.Errorf("%s: %v", c.name, err)
			}
		}
		if _, err := w.auth.Member(ctx, second.Token); err != nil {
			t.Fatalf("a refused mint revoked the live token: %v", err)
		}
	})
}
