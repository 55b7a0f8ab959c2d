package uploads

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/nexuskernel/nexus/core/identity"
	"github.com/nexuskernel/nexus/core/store"
)

// world is a store with two workspaces and their members and executors:
//
//	w1: alice (owner), carol (member), agent bot, runner r1, tool provider p1
//	w2: bob (owner), carol (member), runner r2
type world struct {
	store *store.Store
	svc   *Service
	w1    int64
	w2    int64

	alice, bob, carol, bot *identity.Principal
	r1, p1, r2             *identity.Executor

	mu  sync.Mutex
	now time.Time
}

func newWorld(t testing.TB, s *store.Store) *world {
	t.Helper()
	ctx := context.Background()
	w := &world{store: s, now: time.Date(2025, 3, 1, 9, 30, 0, 500_000_000, time.UTC)}
	at := store.Millis(w.now)
	err := s.Write(ctx, func(tx *store.Tx) error {
		ws := func(handle string) int64 {
			x := &store.Workspace{PublicID: store.NewPublicID(), Handle: handle, Name: handle, CreatedAt: at}
			if err := store.InsertWorkspace(ctx, tx, x); err != nil {
				t.Fatal(err)
			}
			return x.ID
		}
		w.w1, w.w2 = ws("w1"), ws("w2")
		user := func(handle string, memberships map[int64]string) *identity.Principal {
			u := &store.User{PublicID: store.NewPublicID(), Handle: handle, DisplayName: handle, CreatedAt: at}
			if err := store.InsertUser(ctx, tx, u); err != nil {
				t.Fatal(err)
			}
			for wsID, role := range memberships {
				if err := store.InsertMembership(ctx, tx, wsID, u.ID, role, at); err != nil {
					t.Fatal(err)
				}
			}
			return &identity.Principal{Kind: identity.KindUser, ID: u.ID, PublicID: u.PublicID, Handle: handle}
		}
		w.alice = user("alice", map[int64]string{w.w1: store.RoleOwner})
		w.bob = user("bob", map[int64]string{w.w2: store.RoleOwner})
		w.carol = user("carol", map[int64]string{w.w1: store.RoleMember, w.w2: store.RoleMember})
		a := &store.Agent{PublicID: store.NewPublicID(), WorkspaceID: w.w1, Handle: "bot", DisplayName: "Bot", StewardUserID: w.alice.ID, CreatedAt: at}
		if err := store.InsertAgent(ctx, tx, a); err != nil {
			t.Fatal(err)
		}
		w.bot = &identity.Principal{Kind: identity.KindAgent, ID: a.ID, PublicID: a.PublicID, WorkspaceID: w.w1}
		executor := func(wsID int64, kind, name string) *identity.Executor {
			e := &store.Executor{PublicID: store.NewPublicID(), WorkspaceID: wsID, Kind: kind, DisplayName: name, Status: store.ExecutorActive, CreatedAt: at}
			if err := store.InsertExecutor(ctx, tx, e); err != nil {
				t.Fatal(err)
			}
			return &identity.Executor{ID: e.ID, PublicID: e.PublicID, Kind: kind, Status: store.ExecutorActive, DisplayName: name, WorkspaceID: wsID}
		}
		w.r1 = executor(w.w1, store.ExecutorRunner, "r1")
		w.p1 = executor(w.w1, store.ExecutorToolProvider, "p1")
		w.r2 = executor(w.w2, store.ExecutorRunner, "r2")
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	svc, err := New(s, Options{DetectContentType: http.DetectContentType, Now: w.clock})
	if err != nil {
		t.Fatal(err)
	}
	w.svc = svc
	return w
}

func (w *world) clock() time.Time {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.now
}

func (w *world) advance(d time.Duration) {
	w.mu.Lock()
	w.now = w.now.Add(d)
	w.mu.Unlock()
}

// ingest stages data as c and fails the test on any error.
func (w *world) ingest(t testing.TB, c Creator, name string, data []byte) *Upload {
	t.Helper()
	u, err := w.svc.Ingest(context.Background(), c, name, bytes.NewReader(data))
	if err != nil {
		t.Fatalf("ingest %s: %v", name, err)
	}
	return u
}

// bind binds ids to a target in one transaction.
func (w *world) bind(t testing.TB, target Target, ids ...string) {
	t.Helper()
	err := w.store.Write(context.Background(), func(tx *store.Tx) error {
		return Bind(context.Background(), tx, target, ids, w.clock())
	})
	if err != nil {
		t.Fatalf("bind %v: %v", ids, err)
	}
}

// readAll reads an upload's bytes [off, off+n).
func (w *world) readAll(t testing.TB, u *Upload, off, n int64) []byte {
	t.Helper()
	r, err := w.svc.Open(context.Background(), u, off, n)
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(r)
	if err != nil {
		t.Fatalf("read %d+%d of %s: %v", off, n, u.PublicID, err)
	}
	return b
}

// counts reports how many upload rows and chunk rows the store holds.
func counts(t testing.TB, s *store.Store) (uploads, chunks int64) {
	t.Helper()
	ctx := context.Background()
	if err := s.Reader().Get(ctx, &uploads, `SELECT COUNT(*) FROM uploads`); err != nil {
		t.Fatal(err)
	}
	if err := s.Reader().Get(ctx, &chunks, `SELECT COUNT(*) FROM upload_chunks`); err != nil {
		t.Fatal(err)
	}
	return uploads, chunks
}

// pattern returns n deterministic bytes that differ across chunk boundaries.
func pattern(n int) []byte {
	b := make([]byte, n)
	x := uint32(2463534242)
	for i := range b {
		x ^= x << 13
		x ^= x >> 17
		x ^= x << 5
		b[i] = byte(x)
	}
	return b
}

func hexSum(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}
