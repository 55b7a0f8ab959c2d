package identity_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nexuskernel/nexus/core/identity"
	"github.com/nexuskernel/nexus/core/refusal"
	"github.com/nexuskernel/nexus/core/store"
	"github.com/nexuskernel/nexus/core/store/storetest"
)

var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

func TestBootstrapCreatesAdmin(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		dir := t.TempDir()
		res, err := identity.Bootstrap(ctx, s, dir, "", t0)
		if err != nil {
			t.Fatal(err)
		}
		if !res.Created || !res.Generated || res.TokenFile != filepath.Join(dir, "admin.token") {
			t.Fatalf("result = %+v", res)
		}
		b, err := os.ReadFile(res.TokenFile)
		if err != nil {
			t.Fatal(err)
		}
		if string(b) != res.Token+"\n" {
			t.Fatalf("file holds %q, want the token and a line feed", b)
		}
		fi, _ := os.Stat(res.TokenFile)
		if fi.Mode().Perm() != 0o600 {
			t.Errorf("mode = %v, want 0600", fi.Mode().Perm())
		}
		auth := identity.NewAuthenticator(s, func() time.Time { return t0 })
		p, err := auth.Member(ctx, res.Token)
		if err != nil {
			t.Fatal(err)
		}
		if p.Kind != "user" || p.Handle != "admin" {
			t.Fatalf("principal = %+v", p)
		}
		var ws []store.Workspace
		if err := s.Reader().Select(ctx, &ws, `SELECT id, public_id, handle, name, created_at FROM workspaces`); err != nil {
			t.Fatal(err)
		}
		if len(ws) != 1 || ws[0].Handle != "default" || ws[0].Name != "Default" {
			t.Fatalf("workspaces = %+v", ws)
		}
		var role string
		if err := s.Reader().Get(ctx, &role, `SELECT role FROM workspace_members WHERE workspace_id = ? AND user_id = ?`, ws[0].ID, p.ID); err != nil || role != "owner" {
			t.Fatalf("admin role = %q, %v; want owner", role, err)
		}

		// A later start does nothing, whatever the environment says.
		os.Remove(res.TokenFile)
		again, err := identity.Bootstrap(ctx, s, dir, "nxm_"+strings.Repeat("b", 40), t0)
		if err != nil || again.Created {
			t.Fatalf("second bootstrap = %+v, %v; want nothing done", again, err)
		}
		if _, err := os.Stat(res.TokenFile); !errors.Is(err, os.ErrNotExist) {
			t.Fatal("second bootstrap wrote a token file")
		}
	})
}

func TestBootstrapEnvironmentToken(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		tok := "nxm_" + strings.Repeat("Q", 32)
		res, err := identity.Bootstrap(ctx, s, t.TempDir(), tok, t0)
		if err != nil {
			t.Fatal(err)
		}
		if !res.Created || res.Generated || res.Token != tok {
			t.Fatalf("result = %+v", res)
		}
		if _, err := identity.NewAuthenticator(s, nil).Member(ctx, tok); err != nil {
			t.Fatal(err)
		}
	})
}

func TestBootstrapRefusals(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		for _, bad := range []string{"secret", "nxe_" + strings.Repeat("a", 40), "nxm_short", "nxm_" + strings.Repeat("a", 31) + "!"} {
			if _, err := identity.Bootstrap(ctx, s, t.TempDir(), bad, t0); !errors.Is(err, identity.ErrBootstrapToken) {
				t.Errorf("Bootstrap with %q: got %v, want ErrBootstrapToken", bad, err)
			}
		}
		dir := t.TempDir()
		path := filepath.Join(dir, "admin.token")
		if err := os.WriteFile(path, []byte("old\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		_, err := identity.Bootstrap(ctx, s, dir, "", t0)
		if !errors.Is(err, identity.ErrTokenFileExists) || !strings.Contains(err.Error(), path) {
			t.Fatalf("Bootstrap with an existing file: got %v, want ErrTokenFileExists naming %s", err, path)
		}
		if n, _ := store.CountUsers(ctx, s.Reader()); n != 0 {
			t.Fatalf("refused bootstrap created %d users", n)
		}
		if b, _ := os.ReadFile(path); string(b) != "old\n" {
			t.Fatalf("refused bootstrap changed the file to %q", b)
		}
	})
}

// Several instances starting together on one store: exactly one creates the admin.
func TestBootstrapConcurrent(t *testing.T) {
	t.Parallel()
	for _, d := range storetest.Dialects() {
		t.Run(string(d), func(t *testing.T) {
			ctx := context.Background()
			url := storetest.FreshURL(t, d)
			const instances = 4
			stores := make([]*store.Store, instances)
			for i := range stores {
				s, err := store.Open(ctx, url, store.Options{MaxReaders: 2})
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { s.Close() })
				stores[i] = s
			}
			if _, err := stores[0].Migrate(ctx); err != nil {
				t.Fatal(err)
			}
			var wg sync.WaitGroup
			results := make([]*identity.BootstrapResult, instances)
			errs := make([]error, instances)
			for i := range stores {
				wg.Add(1)
				go func() {
					defer wg.Done()
					results[i], errs[i] = identity.Bootstrap(ctx, stores[i], t.TempDir(), "", t0)
				}()
			}
			wg.Wait()
			created := 0
			for i := range results {
				if errs[i] != nil {
					t.Fatalf("instance %d: %v", i, errs[i])
				}
				if results[i].Created {
					created++
				}
			}
			if created != 1 {
				t.Fatalf("%d instances bootstrapped, want 1", created)
			}
			if n, _ := store.CountUsers(ctx, stores[0].Reader()); n != 1 {
				t.Fatalf("%d users, want 1", n)
			}
		})
	}
}

func TestAuthenticateMember(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		res, err := identity.Bootstrap(ctx, s, t.TempDir(), "", t0)
		if err != nil {
			t.Fatal(err)
		}
		now := t0
		auth := identity.NewAuthenticator(s, func() time.Time { return now })
		var userID int64
		if err := s.Reader().Get(ctx, &userID, `SELECT id FROM users`); err != nil {
			t.Fatal(err)
		}
		insert := func(expires, revoked sql.NullInt64) string {
			secret, hash := identity.MintToken(identity.MemberPlane)
			err := s.Write(ctx, func(tx *store.Tx) error {
				tk := &store.Token{PublicID: store.NewPublicID(), SecretHash: hash, UserID: sql.NullInt64{Int64: userID, Valid: true}, CreatedAt: store.Millis(t0), ExpiresAt: expires}
				if err := store.InsertToken(ctx, tx, tk); err != nil {
					return err
				}
				if revoked.Valid {
					_, err := tx.Exec(ctx, `UPDATE tokens SET revoked_at = ? WHERE id = ?`, revoked.Int64, tk.ID)
					return err
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			return secret
		}
		later := sql.NullInt64{Int64: store.Millis(t0.Add(time.Hour)), Valid: true}
		expiring := insert(later, sql.NullInt64{})
		revoked := insert(sql.NullInt64{}, sql.NullInt64{Int64: store.Millis(t0), Valid: true})
		exec, _ := identity.MintToken(identity.ExecutorPlane)
		unknown, _ := identity.MintToken(identity.MemberPlane)

		if _, err := auth.Member(ctx, res.Token); err != nil {
			t.Fatalf("valid token: %v", err)
		}
		if _, err := auth.Member(ctx, expiring); err != nil {
			t.Fatalf("token before its expiry: %v", err)
		}
		for name, tok := range map[string]string{
			"revoked": revoked, "executor plane": exec, "unknown": unknown, "empty": "", "malformed": "nxm_abc",
		} {
			if _, err := auth.Member(ctx, tok); !errors.Is(err, identity.ErrUnauthorized) {
				t.Errorf("%s token: got %v, want ErrUnauthorized", name, err)
			}
		}
		// A token of the other plane says which routes it opens; the word stays unauthorized.
		if _, err := auth.Member(ctx, exec); err != identity.ErrExecutorTokenOnMemberRoute {
			t.Errorf("executor token on a member route: got %v", err)
		}
		if _, err := auth.Executor(ctx, res.Token); err != identity.ErrMemberTokenOnExecutorRoute {
			t.Errorf("member token on an executor route: got %v", err)
		}
		now = t0.Add(time.Hour)
		if _, err := auth.Member(ctx, expiring); !errors.Is(err, identity.ErrUnauthorized) {
			t.Errorf("expired token: got %v, want ErrUnauthorized", err)
		}
	})
}

func TestMintMemberToken(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		if _, err := identity.Bootstrap(ctx, s, t.TempDir(), "", t0); err != nil {
			t.Fatal(err)
		}
		tok, err := identity.MintMemberToken(ctx, s, "admin", "break-glass", t0)
		if err != nil {
			t.Fatal(err)
		}
		p, err := identity.NewAuthenticator(s, nil).Member(ctx, tok)
		if err != nil || p.Handle != "admin" {
			t.Fatalf("minted token authenticates as %+v, %v", p, err)
		}
		if _, err := identity.MintMemberToken(ctx, s, "nobody", "", t0); err == nil || !strings.Contains(err.Error(), `"nobody"`) {
			t.Fatalf("mint for an unknown handle: got %v", err)
		}
	})
}

// TestAccessNeeds checks the kind and role words of docs/api.md#planes-and-tokens through
// Directory.Access, in its order: visibility, kind, role.
func TestAccessNeeds(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		boot, err := identity.Bootstrap(ctx, s, t.TempDir(), "", t0)
		if err != nil {
			t.Fatal(err)
		}
		auth := identity.NewAuthenticator(s, func() time.Time { return t0 })
		dir := identity.NewDirectory(s, auth, identity.DirectoryOptions{Now: func() time.Time { return t0 }})
		admin, err := auth.Member(ctx, boot.Token)
		if err != nil {
			t.Fatal(err)
		}
		acc, err := dir.Access(ctx, admin, "default", identity.NeedOwner)
		if err != nil {
			t.Fatal(err)
		}
		ag, err := dir.CreateAgent(ctx, acc, &identity.CreateAgentRequest{Handle: "bot", DisplayName: "Bot"})
		if err != nil {
			t.Fatal(err)
		}
		bot, err := auth.Member(ctx, ag.Token)
		if err != nil {
			t.Fatal(err)
		}
		us, err := dir.CreateUser(ctx, acc, &identity.CreateUserRequest{Handle: "mia", DisplayName: "Mia", Role: identity.RoleMember})
		if err != nil {
			t.Fatal(err)
		}
		mia, err := auth.Member(ctx, us.Token)
		if err != nil {
			t.Fatal(err)
		}
		// A second workspace only the admin belongs to.
		lab, err := dir.CreateWorkspace(ctx, admin, &identity.CreateWorkspaceRequest{Handle: "lab", Name: "Lab"})
		if err != nil {
			t.Fatal(err)
		}
		word := func(err error) string {
			if err == nil {
				return ""
			}
			r, ok := refusal.As(err)
			if !ok {
				t.Fatalf("untyped error %v", err)
			}
			if r.Code == "not_found" && !strings.HasPrefix(r.Message, "No workspace ") {
				t.Fatalf("not_found message %q", r.Message)
			}
			return r.Code
		}
		for _, c := range []struct {
			name   string
			caller *identity.Principal
			ref    string
			need   identity.Need
			want   string
		}{
			{"owner as owner", admin, "default", identity.NeedOwner, ""},
			{"owner as member", admin, "default", identity.NeedMember, ""},
			{"user where an agent is needed", admin, "default", identity.NeedAgent, "not_agent"},
			{"member where an agent is needed", mia, "default", identity.NeedAgent, "not_agent"},
			{"agent as agent", bot, "default", identity.NeedAgent, ""},
			{"agent as member", bot, "default", identity.NeedMember, ""},
			{"agent where an owner is needed", bot, "default", identity.NeedOwner, "not_user"},
			{"member where an owner is needed", mia, "default", identity.NeedOwner, "not_authorized"},
			{"unknown workspace, whatever is needed", bot, "nope", identity.NeedAgent, "not_found"},
			{"unknown workspace for a user", mia, "nope", identity.NeedMember, "not_found"},
			{"not a handle", admin, "-x-", identity.NeedMember, "not_found"},
			{"owner by public id", admin, strings.ToUpper(acc.Workspace.PublicID), identity.NeedOwner, ""},
			{"agent by public id", bot, acc.Workspace.PublicID, identity.NeedAgent, ""},
			{"owner of another workspace", admin, "lab", identity.NeedOwner, ""},
			{"member of another workspace", mia, "lab", identity.NeedMember, "not_found"},
			{"member of another workspace by public id", mia, lab.PublicID, identity.NeedMember, "not_found"},
			{"agent of another workspace", bot, "lab", identity.NeedMember, "not_found"},
			{"unknown public id", admin, "01900000-0000-7000-8000-0000000000ff", identity.NeedMember, "not_found"},
		} {
			got, err := dir.Access(ctx, c.caller, c.ref, c.need)
			if w := word(err); w != c.want {
				t.Errorf("%s: %q, want %q", c.name, w, c.want)
			}
			if err == nil && c.caller == admin && got.Workspace.Role != identity.RoleOwner {
				t.Errorf("%s: role %q", c.name, got.Workspace.Role)
			}
		}
	})
}

// TestAccessIn: AccessIn checks a standing through the querier it is given (a write's
// transaction), reading it afresh: the role as it is now, not_found for a member removed since,
// and not_authorized when the need is no longer met.
func TestAccessIn(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		boot, err := identity.Bootstrap(ctx, s, t.TempDir(), "", t0)
		if err != nil {
			t.Fatal(err)
		}
		auth := identity.NewAuthenticator(s, func() time.Time { return t0 })
		dir := identity.NewDirectory(s, auth, identity.DirectoryOptions{Now: func() time.Time { return t0 }})
		admin, err := auth.Member(ctx, boot.Token)
		if err != nil {
			t.Fatal(err)
		}
		owner, err := dir.Access(ctx, admin, "default", identity.NeedOwner)
		if err != nil {
			t.Fatal(err)
		}
		us, err := dir.CreateUser(ctx, owner, &identity.CreateUserRequest{Handle: "mia", DisplayName: "Mia", Role: identity.RoleMember})
		if err != nil {
			t.Fatal(err)
		}
		mia, err := auth.Member(ctx, us.Token)
		if err != nil {
			t.Fatal(err)
		}
		// reread checks Mia's standing with this need in a write transaction.
		reread := func(need identity.Need) (*identity.Access, string) {
			t.Helper()
			var got *identity.Access
			err := s.Write(ctx, func(tx *store.Tx) error {
				var err error
				got, err = dir.AccessIn(ctx, tx, mia, "default", need)
				return err
			})
			if err == nil {
				return got, ""
			}
			r, ok := refusal.As(err)
			if !ok {
				t.Fatalf("untyped error %v", err)
			}
			return nil, r.Code
		}
		if got, code := reread(identity.NeedMember); code != "" || got.Workspace.Role != identity.RoleMember {
			t.Fatalf("an unchanged member: %v %q", got, code)
		}
		if err := dir.RemoveMember(ctx, owner, us.User.PublicID); err != nil {
			t.Fatal(err)
		}
		if _, code := reread(identity.NeedMember); code != "not_found" {
			t.Fatalf("a removed member: %q, want not_found", code)
		}
		if _, err := dir.AddMember(ctx, owner, &identity.AddMemberRequest{UserPublicID: us.User.PublicID, Role: identity.RoleOwner}); err != nil {
			t.Fatal(err)
		}
		if got, code := reread(identity.NeedMember); code != "" || got.Workspace.Role != identity.RoleOwner {
			t.Fatalf("a member made owner: %v %q", got, code)
		}
		if _, code := reread(identity.NeedOwner); code != "" {
			t.Fatalf("an owner's need met: %q", code)
		}
		if err := dir.RemoveMember(ctx, owner, us.User.PublicID); err != nil {
			t.Fatal(err)
		}
		if _, err := dir.AddMember(ctx, owner, &identity.AddMemberRequest{UserPublicID: us.User.PublicID, Role: identity.RoleMember}); err != nil {
			t.Fatal(err)
		}
		if _, code := reread(identity.NeedOwner); code != "not_authorized" {
			t.Fatalf("an owner made member, rereading an owner's need: %q, want not_authorized", code)
		}
	})
}

// TestLastOwnerUnderConcurrency: two owners removing each other at once leave one owner: the
// membership change of a workspace is serialized (PostgreSQL locks the workspace row).
func TestLastOwnerUnderConcurrency(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		boot, err := identity.Bootstrap(ctx, s, t.TempDir(), "", t0)
		if err != nil {
			t.Fatal(err)
		}
		auth := identity.NewAuthenticator(s, nil)
		dir := identity.NewDirectory(s, auth, identity.DirectoryOptions{})
		for round := 0; round < 5; round++ {
			admin, err := auth.Member(ctx, boot.Token)
			if err != nil {
				t.Fatal(err)
			}
			ws, err := dir.CreateWorkspace(ctx, admin, &identity.CreateWorkspaceRequest{Handle: fmt.Sprintf("w%d", round), Name: "W"})
			if err != nil {
				t.Fatal(err)
			}
			wacc, err := dir.Access(ctx, admin, ws.Handle, identity.NeedOwner)
			if err != nil {
				t.Fatal(err)
			}
			u, err := dir.CreateUser(ctx, wacc, &identity.CreateUserRequest{Handle: fmt.Sprintf("o%d", round), DisplayName: "O", Role: identity.RoleOwner})
			if err != nil {
				t.Fatal(err)
			}
			other, err := auth.Member(ctx, u.Token)
			if err != nil {
				t.Fatal(err)
			}
			oacc, err := dir.Access(ctx, other, ws.Handle, identity.NeedOwner)
			if err != nil {
				t.Fatal(err)
			}
			var wg sync.WaitGroup
			errs := make([]error, 2)
			wg.Add(2)
			go func() { defer wg.Done(); errs[0] = dir.RemoveMember(ctx, wacc, other.PublicID) }()
			go func() { defer wg.Done(); errs[1] = dir.RemoveMember(ctx, oacc, admin.PublicID) }()
			wg.Wait()
			ok := 0
			for _, err := range errs {
				if err == nil {
					ok++
					continue
				}
				if r, isRef := refusal.As(err); !isRef || (r.Code != "last_owner" && r.Code != "not_found") {
					t.Fatalf("round %d: unexpected error %v", round, err)
				}
			}
			if ok != 1 {
				t.Fatalf("round %d: %d removals succeeded (%v), want exactly 1", round, ok, errs)
			}
			var owners int
			if err := s.Reader().Get(ctx, &owners, `SELECT COUNT(*) FROM workspace_members WHERE workspace_id = ? AND role = 'owner'`, ws.ID); err != nil {
				t.Fatal(err)
			}
			if owners != 1 {
				t.Fatalf("round %d: %d owners left, want 1", round, owners)
			}
		}
	})
}
