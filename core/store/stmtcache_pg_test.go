package store_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/lib/pq"

	"github.com/nexuskernel/nexus/core/store"
	"github.com/nexuskernel/nexus/core/store/storetest"
)

// openOneConn opens a fresh store of dialect d whose pool holds one connection, so that every
// statement of the test meets the same statement cache.
func openOneConn(t *testing.T, d store.Dialect) *store.Store {
	t.Helper()
	s, err := store.Open(context.Background(), storetest.FreshURL(t, d), store.Options{MaxReaders: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	ctx := context.Background()
	err = s.Write(ctx, func(tx *store.Tx) error {
		if _, err := tx.Exec(ctx, `CREATE TABLE kv (k INTEGER PRIMARY KEY, v TEXT NOT NULL)`); err != nil {
			return err
		}
		for i := 1; i <= 3; i++ {
			if _, err := tx.Exec(ctx, `INSERT INTO kv (k, v) VALUES (?, ?)`, i, fmt.Sprintf("v%d", i)); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// A statement kept prepared whose table changed shape answers with the new shape: on
// PostgreSQL the one execution that meets the stale plan fails with 0A000 and the text is
// prepared anew on its next use; SQLite re-prepares by itself.
func TestStmtCacheSchemaChange(t *testing.T) {
	for _, d := range storetest.Dialects() {
		t.Run(string(d), func(t *testing.T) {
			s := openOneConn(t, d)
			ctx := context.Background()
			const q = `SELECT * FROM kv WHERE k = ?`
			for i := 0; i < 2; i++ { // the second read runs the cached statement
				var got struct {
					K int64  `db:"k"`
					V string `db:"v"`
				}
				if err := s.Reader().Get(ctx, &got, q, 2); err != nil || got.V != "v2" {
					t.Fatalf("read %d: %+v %v", i, got, err)
				}
			}
			if err := s.Write(ctx, func(tx *store.Tx) error {
				_, err := tx.Exec(ctx, `ALTER TABLE kv ADD COLUMN extra TEXT`)
				return err
			}); err != nil {
				t.Fatal(err)
			}
			var got struct {
				K     int64   `db:"k"`
				V     string  `db:"v"`
				Extra *string `db:"extra"`
			}
			err := s.Reader().Get(ctx, &got, q, 2)
			if d == store.Postgres {
				var pe *pq.Error
				if !errors.As(err, &pe) || pe.Code != "0A000" {
					t.Fatalf("first read after the change: %v, want the stale plan's 0A000", err)
				}
				err = s.Reader().Get(ctx, &got, q, 2)
			}
			if err != nil || got.K != 2 || got.V != "v2" || got.Extra != nil {
				t.Fatalf("read after the change: %+v %v", got, err)
			}
		})
	}
}

// Arguments go through the driver's conversion: a pq.Array is an array, and a nil byte slice is
// NULL on both stores.
func TestStmtCacheDriverConversion(t *testing.T) {
	for _, d := range storetest.Dialects() {
		s := openOneConn(t, d)
		q := `SELECT CAST(? AS BLOB) IS NULL`
		if d == store.Postgres {
			q = `SELECT CAST(? AS BYTEA) IS NULL`
		}
		for i := 0; i < 2; i++ {
			var null bool
			if err := s.Reader().Get(context.Background(), &null, q, []byte(nil)); err != nil || !null {
				t.Fatalf("%s read %d: a nil byte slice is NULL: %v %v", d, i, null, err)
			}
		}
	}
	for _, d := range storetest.Dialects() {
		if d != store.Postgres {
			continue // SQLite has no array parameters
		}
		s := openOneConn(t, d)
		var n int
		for i := 0; i < 2; i++ {
			if err := s.Reader().Get(context.Background(), &n, `SELECT COUNT(*) FROM kv WHERE k = ANY(?)`, pq.Array([]int64{1, 3, 9})); err != nil || n != 2 {
				t.Fatalf("read %d: %d %v, want 2", i, n, err)
			}
		}
	}
}

// A statement the server forgot (a pooler's DISCARD, here DEALLOCATE ALL on the connection)
// fails once with 26000 and is prepared anew on its next use.
func TestStmtCacheForgottenStatement(t *testing.T) {
	for _, d := range storetest.Dialects() {
		if d != store.Postgres {
			continue // SQLite statements live in the process
		}
		s := openOneConn(t, d)
		ctx := context.Background()
		const q = `SELECT v FROM kv WHERE k = ?`
		var v string
		if err := s.Reader().Get(ctx, &v, q, 1); err != nil || v != "v1" {
			t.Fatalf("first read: %q %v", v, err)
		}
		if _, err := s.Reader().Exec(ctx, `DEALLOCATE ALL`); err != nil {
			t.Fatal(err)
		}
		err := s.Reader().Get(ctx, &v, q, 1)
		var pe *pq.Error
		if !errors.As(err, &pe) || pe.Code != "26000" {
			t.Fatalf("read after DEALLOCATE ALL: %v, want 26000", err)
		}
		if err := s.Reader().Get(ctx, &v, q, 3); err != nil || v != "v3" {
			t.Fatalf("read after the statement was prepared anew: %q %v", v, err)
		}
	}
}
