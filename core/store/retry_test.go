package store_test

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/nexuskernel/nexus/core/store"
	"github.com/nexuskernel/nexus/core/store/storetest"
)

// TestDeadlockIsRetryable makes two writes lock two rows in opposite orders: PostgreSQL refuses
// one as a deadlock victim, and Write answers it as store.ErrRetryable, a RetryableError with
// the SQLSTATE, while the other write commits.
func TestDeadlockIsRetryable(t *testing.T) {
	if storetest.PostgresURL() == "" {
		t.Skip(storetest.PostgresEnv + " is not set: deadlocks are PostgreSQL's")
	}
	ctx := context.Background()
	s := storetest.Open(t, store.Postgres)
	var ids [2]int64
	err := s.Write(ctx, func(tx *store.Tx) error {
		for i, h := range []string{"ana", "ben"} {
			u := &store.User{PublicID: store.NewPublicID(), Handle: h, DisplayName: h}
			if err := store.InsertUser(ctx, tx, u); err != nil {
				return err
			}
			ids[i] = u.ID
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	touch := func(tx *store.Tx, id int64) error {
		_, err := tx.Exec(ctx, `UPDATE users SET display_name = display_name WHERE id = ?`, id)
		return err
	}
	var both sync.WaitGroup
	both.Add(2)
	errs := make([]error, 2)
	var done sync.WaitGroup
	for i := range 2 {
		done.Add(1)
		go func() {
			defer done.Done()
			errs[i] = s.Write(ctx, func(tx *store.Tx) error {
				if err := touch(tx, ids[i]); err != nil {
					both.Done()
					return err
				}
				both.Done()
				both.Wait() // each holds its first row before reaching for the other's
				return touch(tx, ids[1-i])
			})
		}()
	}
	done.Wait()
	var refused, committed int
	for _, err := range errs {
		switch {
		case err == nil:
			committed++
		case errors.Is(err, store.ErrRetryable):
			refused++
			var re *store.RetryableError
			if !errors.As(err, &re) || re.Code != "40P01" {
				t.Fatalf("retryable error %v: want a RetryableError with code 40P01", err)
			}
		default:
			t.Fatalf("write: %v, want nil or store.ErrRetryable", err)
		}
	}
	if refused != 1 || committed != 1 {
		t.Fatalf("refused %d, committed %d: want one deadlock victim and one commit", refused, committed)
	}
}

// TestOrdinaryErrorIsNotRetryable: a write that fails for what it did itself is not retryable.
func TestOrdinaryErrorIsNotRetryable(t *testing.T) {
	for _, d := range storetest.Dialects() {
		t.Run(string(d), func(t *testing.T) {
			ctx := context.Background()
			s := storetest.Open(t, d)
			err := s.Write(ctx, func(tx *store.Tx) error {
				_, err := tx.Exec(ctx, `INSERT INTO no_such_table (x) VALUES (1)`)
				return err
			})
			if err == nil || errors.Is(err, store.ErrRetryable) {
				t.Fatalf("write into a missing table: %v, want an error that is not store.ErrRetryable", err)
			}
		})
	}
}
