package store

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
)

func openCacheTestDB(t *testing.T) *Store {
	t.Helper()
	s, err := Open(context.Background(), filepath.Join(t.TempDir(), "cache.db"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	ctx := context.Background()
	err = s.Write(ctx, func(tx *Tx) error {
		if _, err := tx.Exec(ctx, `CREATE TABLE kv (k INTEGER PRIMARY KEY, v TEXT NOT NULL)`); err != nil {
			return err
		}
		for i := 1; i <= 5; i++ {
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

// cachedCount reports how many statements the writer's one connection holds prepared.
func cachedCount(t *testing.T, s *Store) int {
	t.Helper()
	conn, err := s.writer.Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	n := -1
	if err := conn.Raw(func(dc any) error {
		n = len(dc.(*stmtCacheConn).stmts)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return n
}

// A statement's text read again while its first rows are still open runs unprepared beside them:
// both result sets are whole.
func TestStmtCacheNestedSameText(t *testing.T) {
	s := openCacheTestDB(t)
	ctx := context.Background()
	const q = `SELECT k, v FROM kv WHERE k >= ? ORDER BY k`
	err := s.Write(ctx, func(tx *Tx) error {
		rows, err := tx.tx.QueryContext(ctx, q, 1)
		if err != nil {
			return err
		}
		defer rows.Close()
		var outer []int
		for rows.Next() {
			var k int
			var v string
			if err := rows.Scan(&k, &v); err != nil {
				return err
			}
			outer = append(outer, k)
			var inner []struct {
				K int    `db:"k"`
				V string `db:"v"`
			}
			if err := tx.Select(ctx, &inner, q, k); err != nil {
				return err
			}
			if len(inner) != 6-k || inner[0].K != k || inner[0].V != fmt.Sprintf("v%d", k) {
				return fmt.Errorf("inner read from %d: %+v", k, inner)
			}
		}
		if err := rows.Err(); err != nil {
			return err
		}
		if fmt.Sprint(outer) != "[1 2 3 4 5]" {
			return fmt.Errorf("outer read %v", outer)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	// Once the outer rows closed, the text is reused prepared: the same answers again.
	var got []int
	if err := s.Reader().Select(ctx, &got, `SELECT k FROM kv WHERE k >= ? ORDER BY k`, 4); err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(got) != "[4 5]" {
		t.Fatalf("reread %v", got)
	}
}

// Statements with arguments are kept, up to the bound; texts without arguments are not.
func TestStmtCacheBound(t *testing.T) {
	s := openCacheTestDB(t)
	ctx := context.Background()
	base := cachedCount(t, s)
	if base != 1 { // the INSERT of the setup
		t.Fatalf("after setup %d statements cached, want 1", base)
	}
	var v string
	for round := 0; round < 2; round++ {
		if err := s.Write(ctx, func(tx *Tx) error { return tx.Get(ctx, &v, `SELECT v FROM kv WHERE k = ?`, 2) }); err != nil {
			t.Fatal(err)
		}
	}
	if v != "v2" || cachedCount(t, s) != 2 {
		t.Fatalf("v=%q cached=%d, want v2 and 2", v, cachedCount(t, s))
	}
	if err := s.Write(ctx, func(tx *Tx) error { return tx.Get(ctx, &v, `SELECT v FROM kv WHERE k = 3`) }); err != nil {
		t.Fatal(err)
	}
	if v != "v3" || cachedCount(t, s) != 2 {
		t.Fatalf("argument-free text: v=%q cached=%d, want v3 and 2", v, cachedCount(t, s))
	}
	for i := 0; i < stmtCacheSize+50; i++ {
		q := fmt.Sprintf(`SELECT v FROM kv WHERE k = ? AND %d = %d`, i, i)
		if err := s.Write(ctx, func(tx *Tx) error { return tx.Get(ctx, &v, q, 1) }); err != nil {
			t.Fatal(err)
		}
		if v != "v1" {
			t.Fatalf("text %d read %q", i, v)
		}
	}
	if n := cachedCount(t, s); n != stmtCacheSize {
		t.Fatalf("cached %d statements, want the bound %d", n, stmtCacheSize)
	}
	// A prepared statement whose execution fails stays usable.
	err := s.Write(ctx, func(tx *Tx) error {
		_, err := tx.Exec(ctx, `INSERT INTO kv (k, v) VALUES (?, ?)`, 1, "dup")
		return err
	})
	if err == nil {
		t.Fatal("duplicate key inserted")
	}
	if err := s.Write(ctx, func(tx *Tx) error {
		_, err := tx.Exec(ctx, `INSERT INTO kv (k, v) VALUES (?, ?)`, 9, "v9")
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if err := s.Reader().Get(ctx, &v, `SELECT v FROM kv WHERE k = ?`, 9); err != nil || v != "v9" {
		t.Fatalf("after a failed execution: %q %v", v, err)
	}
}
