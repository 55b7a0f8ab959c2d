package identity_test

import (
	"context"
	"database/sql"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nexuskernel/nexus/core/identity"
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
