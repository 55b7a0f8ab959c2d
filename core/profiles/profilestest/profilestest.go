package profilestest

import (
	"context"
	"testing"
	"time"

	"github.com/nexuskernel/nexus/core/profiles"
	"github.com/nexuskernel/nexus/core/store"
	"github.com/nexuskernel/nexus/sdk/announce"
)

// Executor stores an active executor of kind (store.ExecutorRunner or
// store.ExecutorToolProvider) in a workspace under a chosen public id (lowercase UUID form) and
// returns its row id.
func Executor(t testing.TB, s *store.Store, workspaceID int64, kind, publicID, displayName string) int64 {
	t.Helper()
	e := &store.Executor{PublicID: publicID, WorkspaceID: workspaceID, Kind: kind, DisplayName: displayName,
		Status: store.ExecutorActive, CreatedAt: 0}
	if err := s.Write(context.Background(), func(tx *store.Tx) error { return store.InsertExecutor(context.Background(), tx, e) }); err != nil {
		t.Fatalf("profilestest: executor %s: %v", publicID, err)
	}
	return e.ID
}

// Revoke marks an executor revoked.
func Revoke(t testing.TB, s *store.Store, executorID int64) {
	t.Helper()
	err := s.Write(context.Background(), func(tx *store.Tx) error {
		_, err := store.RevokeExecutor(context.Background(), tx, executorID, 1)
		return err
	})
	if err != nil {
		t.Fatalf("profilestest: revoke %d: %v", executorID, err)
	}
}

// Announce replaces an executor's announcement with body, the JSON an executor would PUT to
// the announcement door, parsed and stored exactly as that door does. A body the door would
// refuse fails the test.
func Announce(t testing.TB, s *store.Store, executorID int64, body string) {
	t.Helper()
	a, r := announce.ParseAnnouncement([]byte(body))
	if r != nil {
		t.Fatalf("profilestest: announcement refused: %v", r)
	}
	err := s.Write(context.Background(), func(tx *store.Tx) error {
		return profiles.PutAnnouncement(context.Background(), tx, executorID, a, time.Now())
	})
	if err != nil {
		t.Fatalf("profilestest: store announcement: %v", err)
	}
}

// ReadOnly is an announced effect profile for announcement bodies.
const ReadOnly = `{"kind":"read_only","destructive":false,"effect_scope":"closed","idempotency":"intrinsic","reconciliation":"none"}`
