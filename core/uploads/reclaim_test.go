package uploads

import (
	"context"
	"database/sql"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/nexuskernel/nexus/core/store"
	"github.com/nexuskernel/nexus/core/store/storetest"
)

// leaveIncomplete stores what a crash mid-upload leaves behind: a row that never completed and
// its first chunk.
func (w *world) leaveIncomplete(t *testing.T) int64 {
	t.Helper()
	ctx := context.Background()
	row := &store.Upload{PublicID: store.NewPublicID(), CreatorKind: CreatorRunner, CreatorExecutorID: sql.NullInt64{Int64: w.r1.ID, Valid: true},
		CreatorPublicID: w.r1.PublicID, Filename: "crashed", CreatedAt: store.Millis(w.clock())}
	err := w.store.Write(ctx, func(tx *store.Tx) error {
		if err := store.InsertUpload(ctx, tx, row); err != nil {
			return err
		}
		return store.InsertUploadChunk(ctx, tx, row.ID, 0, pattern(ChunkSize))
	})
	if err != nil {
		t.Fatal(err)
	}
	return row.ID
}

func exists(t *testing.T, s *store.Store, id int64) bool {
	t.Helper()
	var n int
	if err := s.Reader().Get(context.Background(), &n, `SELECT COUNT(*) FROM uploads WHERE id = ?`, id); err != nil {
		t.Fatal(err)
	}
	var c int
	if err := s.Reader().Get(context.Background(), &c, `SELECT COUNT(*) FROM upload_chunks WHERE upload_id = ?`, id); err != nil {
		t.Fatal(err)
	}
	if n == 0 && c != 0 {
		t.Fatalf("upload %d is gone but %d chunks remain", id, c)
	}
	return n == 1
}

func TestReclaim(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		w := newWorld(t, s)
		ctx := context.Background()
		old := w.ingest(t, ExecutorCreator(w.r1), "old", pattern(ChunkSize+5))
		oldBound := w.ingest(t, ExecutorCreator(w.r1), "bound", []byte("keep me"))
		w.bind(t, Target{Kind: TargetTaskResult, ID: 1, WorkspaceID: w.w1}, oldBound.PublicID)
		oldInput := w.ingest(t, MemberCreator(w.alice), "input", []byte("input"))
		w.bind(t, Target{Kind: TargetTurnInput, ID: 2, WorkspaceID: w.w1}, oldInput.PublicID)
		crashed := w.leaveIncomplete(t)
		w.advance(time.Minute)
		young := w.ingest(t, MemberCreator(w.alice), "young", []byte("young"))
		youngCrashed := w.leaveIncomplete(t)

		// Just short of a day: nothing goes.
		w.advance(UnboundLifetime - 2*time.Minute)
		if n, err := w.svc.Reclaim(ctx); err != nil || n != 0 {
			t.Fatalf("before a day: reclaimed %d, %v", n, err)
		}
		// A day after the first ones: the unbound and the incomplete old ones go.
		w.advance(time.Minute)
		if n, err := w.svc.Reclaim(ctx); err != nil || n != 2 {
			t.Fatalf("after a day: reclaimed %d, %v; want 2", n, err)
		}
		for _, c := range []struct {
			name string
			id   int64
			want bool
		}{{"old", old.ID, false}, {"crashed", crashed, false}, {"bound", oldBound.ID, true}, {"input", oldInput.ID, true},
			{"young", young.ID, true}, {"young crashed", youngCrashed, true}} {
			if got := exists(t, s, c.id); got != c.want {
				t.Errorf("%s: exists %v, want %v", c.name, got, c.want)
			}
		}
		if _, err := w.svc.ForExecutor(ctx, w.r1, old.PublicID); !isCode(err, "not_found") {
			t.Fatalf("a reclaimed capture reads %v", err)
		}
		if _, err := w.svc.ForExecutor(ctx, w.r1, oldBound.PublicID); err != nil {
			t.Fatalf("a bound capture after a day: %v", err)
		}
		w.advance(time.Minute)
		if n, err := w.svc.Reclaim(ctx); err != nil || n != 2 {
			t.Fatalf("the young ones a day later: reclaimed %d, %v; want 2", n, err)
		}
		// A reclaimed capture can no longer be owned or bound.
		err := s.Write(ctx, func(tx *store.Tx) error {
			own, err := OwnedCaptures(ctx, tx, w.r1.ID, []string{old.PublicID})
			if err != nil || len(own) != 0 {
				return fmt.Errorf("reclaimed capture owned: %v %v", own, err)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	})
}

func TestReclaimBatches(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		w := newWorld(t, s)
		for i := 0; i < ReclaimBatch+3; i++ {
			w.ingest(t, MemberCreator(w.alice), "f", []byte{byte(i)})
		}
		w.advance(UnboundLifetime)
		for i, want := range []int{ReclaimBatch, 3, 0} {
			if n, err := w.svc.Reclaim(context.Background()); err != nil || n != want {
				t.Fatalf("pass %d: reclaimed %d, %v; want %d", i, n, err, want)
			}
		}
		if u, c := counts(t, s); u != 0 || c != 0 {
			t.Fatalf("%d uploads, %d chunks left", u, c)
		}
	})
}

// TestReclaimRacesBinders binds expired captures while sweepers reclaim: every capture ends
// either bound and readable, or gone, never bound and gone; no sweeper fails on a binding.
func TestReclaimRacesBinders(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		w := newWorld(t, s)
		ctx := context.Background()
		const n = 40
		ids := make([]string, n)
		for i := range ids {
			ids[i] = w.ingest(t, ExecutorCreator(w.r1), "c", []byte{byte(i)}).PublicID
		}
		w.advance(UnboundLifetime + time.Second)

		bound := make([]bool, n)
		var wg sync.WaitGroup
		errs := make(chan error, 2*n)
		stop := make(chan struct{})
		for k := 0; k < 3; k++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					select {
					case <-stop:
						return
					default:
					}
					if _, err := w.svc.Reclaim(ctx); err != nil {
						errs <- fmt.Errorf("reclaim: %w", err)
						return
					}
				}
			}()
		}
		var binders sync.WaitGroup
		for i := range ids {
			binders.Add(1)
			go func(i int) {
				defer binders.Done()
				var ok bool
				err := s.Write(ctx, func(tx *store.Tx) error {
					own, err := OwnedCaptures(ctx, tx, w.r1.ID, []string{ids[i]})
					if err != nil || len(own) == 0 {
						return err
					}
					ok = true
					return Bind(ctx, tx, Target{Kind: TargetTaskResult, ID: int64(i), WorkspaceID: w.w1}, own, w.clock())
				})
				if err != nil {
					errs <- fmt.Errorf("bind %d: %w", i, err)
					return
				}
				bound[i] = ok
			}(i)
		}
		binders.Wait()
		close(stop)
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Error(err)
		}
		// One more pass with nothing racing: whatever is left unbound goes now.
		if _, err := w.svc.Reclaim(ctx); err != nil {
			t.Fatal(err)
		}
		var kept int
		for i, id := range ids {
			u, err := w.svc.ForExecutor(ctx, w.r1, id)
			switch {
			case bound[i] && err != nil:
				t.Errorf("capture %d was bound but reads %v", i, err)
			case bound[i] && !u.Bound:
				t.Errorf("capture %d was bound but reads unbound", i)
			case !bound[i] && !isCode(err, "not_found"):
				t.Errorf("capture %d was never bound but reads %v", i, err)
			}
			if bound[i] {
				kept++
			}
		}
		t.Logf("%d of %d captures bound before the sweepers took them", kept, n)
	})
}

// TestReclaimSkipsWhatABinderHolds is the PostgreSQL lock protocol step by step: while a
// commit holds an expired capture FOR SHARE, the sweeper neither waits for it nor takes it; once
// the commit bound it, the capture stays.
// SQLite serializes writers, so there it has nothing to show.
func TestReclaimSkipsWhatABinderHolds(t *testing.T) {
	t.Parallel()
	for _, d := range storetest.Dialects() {
		if d == store.Postgres {
			t.Run(string(d), func(t *testing.T) { reclaimSkipsHeld(t, storetest.Open(t, d)) })
		}
	}
}

func reclaimSkipsHeld(t *testing.T, s *store.Store) {
	w := newWorld(t, s)
	ctx := context.Background()
	held := w.ingest(t, ExecutorCreator(w.r1), "held", []byte("held"))
	free := w.ingest(t, ExecutorCreator(w.r1), "free", []byte("free"))
	w.advance(UnboundLifetime)

	locked := make(chan struct{})
	release := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		done <- s.Write(ctx, func(tx *store.Tx) error {
			own, err := OwnedCaptures(ctx, tx, w.r1.ID, []string{held.PublicID})
			if err != nil || len(own) != 1 {
				return fmt.Errorf("owned %v: %v", own, err)
			}
			close(locked)
			<-release
			return Bind(ctx, tx, Target{Kind: TargetTaskResult, ID: 1, WorkspaceID: w.w1}, own, w.clock())
		})
	}()
	<-locked
	start := time.Now()
	n, err := w.svc.Reclaim(ctx)
	if err != nil || n != 1 {
		t.Fatalf("reclaim beside a binder: %d, %v; want the free capture only", n, err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("reclaim waited %v for the binder", d)
	}
	if !exists(t, s, held.ID) || exists(t, s, free.ID) {
		t.Fatal("the held capture went, or the free one stayed")
	}
	close(release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if n, err := w.svc.Reclaim(ctx); err != nil || n != 0 || !exists(t, s, held.ID) {
		t.Fatalf("after the bind: reclaimed %d, %v", n, err)
	}
}
