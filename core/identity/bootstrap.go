package identity

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/nexuskernel/nexus/core/store"
)

// Names the bootstrap creates on an empty store (docs/operations.md#first-start-bootstrap).
const (
	BootstrapWorkspaceHandle = "default"
	BootstrapWorkspaceName   = "Default"
	BootstrapUserHandle      = "admin"
	BootstrapUserDisplayName = "admin"
	// AdminTokenFile is the file in the data directory that receives the first token.
	AdminTokenFile = "admin.token"
	// BootstrapTokenEnv lets an operator choose the first token instead of a random one.
	BootstrapTokenEnv = "NEXUS_BOOTSTRAP_TOKEN"
)

// BootstrapResult says what the bootstrap did.
type BootstrapResult struct {
	// Created is true when this call created the first user; false when the store had users.
	Created bool
	// TokenFile is where the token was written (only when Created).
	TokenFile string
	// Generated is true when the token is random rather than NEXUS_BOOTSTRAP_TOKEN's.
	Generated bool
	// Token is the minted token (only when Created).
	Token string
}

// ErrBootstrapToken means NEXUS_BOOTSTRAP_TOKEN is set to something that is not a member token.
var ErrBootstrapToken = errors.New("identity: " + BootstrapTokenEnv + " must be nxm_ followed by at least 32 base64url characters")

// ErrTokenFileExists means the store has no user but the data directory already has an
// admin.token: a previous bootstrap may have died between writing it and committing, or the
// directory belongs to another database. Creating nothing keeps the operator from holding a token
// that no database knows.
var ErrTokenFileExists = errors.New("identity: admin token file already exists")

// Bootstrap creates the default workspace, the admin user and its first token when the store has
// no user at all, and writes the token to <dataDir>/admin.token. The rows and the file are one
// unit: the file is created (exclusively, mode 0600, durably) inside the transaction, before the
// commit; if the commit fails the file is removed. A crash between the two leaves a file and no
// user, which the next start reports instead of locking the operator out; the reverse order could
// leave a user whose only token was never written down.
func Bootstrap(ctx context.Context, s *store.Store, dataDir, envToken string, now time.Time) (*BootstrapResult, error) {
	n, err := store.CountUsers(ctx, s.Reader())
	if err != nil {
		return nil, fmt.Errorf("identity: bootstrap: %w", err)
	}
	if n > 0 {
		return &BootstrapResult{}, nil
	}
	var secret string
	var hash []byte
	generated := envToken == ""
	if generated {
		secret, hash = MintToken(MemberPlane)
	} else {
		if p, ok := TokenPlane(envToken); !ok || p != MemberPlane {
			return nil, ErrBootstrapToken
		}
		secret, hash = envToken, HashToken(envToken)
	}
	path := filepath.Join(dataDir, AdminTokenFile)
	if _, err := os.Lstat(path); err == nil {
		return nil, fmt.Errorf("%w: %s (the store has no user; remove the file to bootstrap again)", ErrTokenFileExists, path)
	}
	var wrote bool
	res := &BootstrapResult{}
	err = s.Write(ctx, func(tx *store.Tx) error {
		if err := store.LockBootstrap(ctx, tx); err != nil {
			return err
		}
		n, err := store.CountUsers(ctx, tx)
		if err != nil {
			return err
		}
		if n > 0 { // another instance bootstrapped meanwhile
			return nil
		}
		at := store.Millis(now)
		ws := &store.Workspace{PublicID: store.NewPublicID(), Handle: BootstrapWorkspaceHandle, Name: BootstrapWorkspaceName, CreatedAt: at}
		if err := store.InsertWorkspace(ctx, tx, ws); err != nil {
			return err
		}
		u := &store.User{PublicID: store.NewPublicID(), Handle: BootstrapUserHandle, DisplayName: BootstrapUserDisplayName, CreatedAt: at}
		if err := store.InsertUser(ctx, tx, u); err != nil {
			return err
		}
		if err := store.InsertMembership(ctx, tx, ws.ID, u.ID, store.RoleOwner, at); err != nil {
			return err
		}
		tok := &store.Token{PublicID: store.NewPublicID(), SecretHash: hash, UserID: sql.NullInt64{Int64: u.ID, Valid: true}, Label: "bootstrap", CreatedAt: at}
		if err := store.InsertToken(ctx, tx, tok); err != nil {
			return err
		}
		if err := writeExclusive(path, []byte(secret+"\n")); err != nil {
			return err
		}
		wrote = true
		*res = BootstrapResult{Created: true, TokenFile: path, Generated: generated, Token: secret}
		return nil
	})
	if err != nil {
		if wrote {
			_ = os.Remove(path)
		}
		return nil, fmt.Errorf("identity: bootstrap: %w", err)
	}
	return res, nil
}

// writeExclusive creates path with data, mode 0600, failing if path exists. The bytes are written
// and synced under a temporary name and then hard-linked into place, so the file either does not
// exist or holds the whole token: a reader never sees it half written, and no existing file is
// ever replaced.
func writeExclusive(path string, data []byte) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	var r [8]byte
	_, _ = rand.Read(r[:])
	tmp := filepath.Join(dir, "."+filepath.Base(path)+".tmp-"+hex.EncodeToString(r[:]))
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	defer func() { _ = os.Remove(tmp) }()
	if _, err := f.Write(data); err != nil {
		_ = f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		_ = f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := os.Link(tmp, path); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return fmt.Errorf("%w: %s", ErrTokenFileExists, path)
		}
		return err
	}
	return syncDir(dir)
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// MintMemberToken mints a new member token for the user with this handle, directly on the store:
// the operator's break-glass door when every token is lost. It returns the token, shown once.
func MintMemberToken(ctx context.Context, s *store.Store, handle, label string, now time.Time) (string, error) {
	secret, hash := MintToken(MemberPlane)
	err := s.Write(ctx, func(tx *store.Tx) error {
		u, err := store.UserByHandle(ctx, tx, handle)
		if errors.Is(err, store.ErrNotFound) {
			return fmt.Errorf("identity: no user with handle %q", handle)
		}
		if err != nil {
			return err
		}
		return store.InsertToken(ctx, tx, &store.Token{
			PublicID: store.NewPublicID(), SecretHash: hash,
			UserID: sql.NullInt64{Int64: u.ID, Valid: true}, Label: label, CreatedAt: store.Millis(now),
		})
	})
	if err != nil {
		return "", err
	}
	return secret, nil
}
