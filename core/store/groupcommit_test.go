package store_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/nexuskernel/nexus/core/store"
	"github.com/nexuskernel/nexus/core/store/storetest"
)

// holdWriter runs a write that holds SQLite's writer connection until release is closed, and
// answers once it holds it.
func holdWriter(t *testing.T, s *store.Store, release <-chan struct{}) <-chan error {
	t.Helper()
	held := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		done <- s.Write(context.Background(), func(tx *store.Tx) error {
			close(held)
			<-release
			return nil
		})
	}()
	<-held
	return done
}

// probeStore opens a SQLite store with a table group_probe of integer keys.
func probeStore(t *testing.T) *store.Store {
	t.Helper()
	s := storetest.Open(t, store.SQLite)
	ctx := context.Background()
	if err := s.Write(ctx, func(tx *store.Tx) error {
		_, err := tx.Exec(ctx, `CREATE TABLE group_probe (n INTEGER PRIMARY KEY)`)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	return s
}

// waitPending waits until n writes wait in the queue.
func waitPending(t *testing.T, s *store.Store, n int) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); store.PendingWrites(s) < n; {
		if time.Now().After(deadline) {
			t.Fatalf("%d writes queued, want %d", store.PendingWrites(s), n)
		}
		time.Sleep(time.Millisecond)
	}
}

// TestGroupCommit: writes that queue while another holds SQLite's writer commit together, in
// one transaction; one that fails changes nothing and the others stand; one whose caller gave up
// before its turn never runs; a panic reaches its own caller.
func TestGroupCommit(t *testing.T) {
	t.Parallel()
	s := probeStore(t)
	ctx := context.Background()
	release := make(chan struct{})
	holder := holdWriter(t, s, release)
	before := s.Statements()
	refused := errors.New("refused")
	const writes = 12
	errs := make([]error, writes)
	panics := make([]any, writes)
	gone, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	for i := range writes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { panics[i] = recover() }()
			wctx := ctx
			if i == 3 {
				wctx = gone
			}
			errs[i] = s.Write(wctx, func(tx *store.Tx) error {
				if _, err := tx.Exec(ctx, `INSERT INTO group_probe (n) VALUES (?)`, i); err != nil {
					return err
				}
				switch i {
				case 5:
					return refused // its insert is undone
				case 7:
					panic("seven")
				case 9:
					// A constraint error after a statement that succeeded: both are undone.
					_, err := tx.Exec(ctx, `INSERT INTO group_probe (n) VALUES (?)`, i)
					return err
				}
				return nil
			})
		}()
	}
	waitPending(t, s, writes)
	cancel()
	close(release)
	wg.Wait()
	if err := <-holder; err != nil {
		t.Fatal(err)
	}
	for i := range writes {
		switch i {
		case 3:
			if !errors.Is(errs[i], context.Canceled) {
				t.Errorf("write 3 (given up): %v", errs[i])
			}
		case 5:
			if !errors.Is(errs[i], refused) {
				t.Errorf("write 5: %v", errs[i])
			}
		case 7:
			if panics[i] != "seven" {
				t.Errorf("write 7 panicked %v, err %v", panics[i], errs[i])
			}
		case 9:
			if !store.IsUniqueViolation(errs[i]) {
				t.Errorf("write 9: %v", errs[i])
			}
		default:
			if errs[i] != nil || panics[i] != nil {
				t.Errorf("write %d: %v %v", i, errs[i], panics[i])
			}
		}
	}
	var got []int
	if err := s.Reader().Select(ctx, &got, `SELECT n FROM group_probe ORDER BY n`); err != nil {
		t.Fatal(err)
	}
	if want := []int{0, 1, 2, 4, 6, 8, 10, 11}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("rows %v, want %v", got, want)
	}
	// The holder's transaction had begun before; the queued writes took one more.
	if n := s.Statements().Sub(before).Transactions; n != 1 {
		t.Fatalf("the queued writes took %d transactions, want 1", n)
	}
}

// TestGroupCommitAlone: a write with nothing queued beside it runs in a transaction of its own,
// without a savepoint, and a failure rolls it back.
func TestGroupCommitAlone(t *testing.T) {
	t.Parallel()
	s := probeStore(t)
	ctx := context.Background()
	before := s.Statements()
	refused := errors.New("refused")
	err := s.Write(ctx, func(tx *store.Tx) error {
		if _, err := tx.Exec(ctx, `INSERT INTO group_probe (n) VALUES (?)`, 1); err != nil {
			return err
		}
		return refused
	})
	if !errors.Is(err, refused) {
		t.Fatalf("err %v", err)
	}
	if d := s.Statements().Sub(before); d.Transactions != 1 || d.Statements != 1 {
		t.Fatalf("a lone write sent %+v, want one transaction of one statement", d)
	}
	var n int
	if err := s.Reader().Get(ctx, &n, `SELECT count(*) FROM group_probe`); err != nil || n != 0 {
		t.Fatalf("rows %d (%v), want none", n, err)
	}
}
