package storetest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/url"
	"os"
	"path/filepath"
	"testing"

	"github.com/jmoiron/sqlx"
	_ "github.com/lib/pq"

	"github.com/nexuskernel/nexus/core/store"
)

// PostgresEnv names the environment variable holding the PostgreSQL test database URL.
const PostgresEnv = "NEXUS_TEST_POSTGRES_URL"

// PostgresURL returns the PostgreSQL test database URL, or "" when PostgreSQL tests are off.
func PostgresURL() string { return os.Getenv(PostgresEnv) }

// Dialects lists the dialects this test run exercises.
func Dialects() []store.Dialect {
	if PostgresURL() != "" {
		return []store.Dialect{store.SQLite, store.Postgres}
	}
	return []store.Dialect{store.SQLite}
}

// Each runs fn as one subtest per dialect, named after it, each with a fresh migrated store.
func Each(t *testing.T, fn func(t *testing.T, s *store.Store)) {
	t.Helper()
	for _, d := range Dialects() {
		t.Run(string(d), func(t *testing.T) {
			fn(t, Open(t, d))
		})
	}
}

// Postgres returns a fresh migrated PostgreSQL store, closed when the test ends, and false when
// this run has no PostgreSQL (PostgresEnv unset): for behaviour only PostgreSQL has, such as
// notifications.
func Postgres(t testing.TB) (*store.Store, bool) {
	t.Helper()
	if PostgresURL() == "" {
		return nil, false
	}
	return Open(t, store.Postgres), true
}

// Open returns a fresh migrated store of dialect d, closed when the test ends.
func Open(t testing.TB, d store.Dialect) *store.Store {
	t.Helper()
	s := OpenUnmigrated(t, d)
	if _, err := s.Migrate(context.Background()); err != nil {
		t.Fatalf("migrate %s: %v", d, err)
	}
	return s
}

// OpenUnmigrated returns a fresh empty store of dialect d, closed when the test ends.
func OpenUnmigrated(t testing.TB, d store.Dialect) *store.Store {
	t.Helper()
	s, err := store.Open(context.Background(), FreshURL(t, d), store.Options{MaxReaders: 4})
	if err != nil {
		t.Fatalf("open %s: %v", d, err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// FreshURL returns the URL of a new empty database of dialect d: a file in the test's temporary
// directory, or a new PostgreSQL schema selected through search_path. The schema is dropped when
// the test ends.
func FreshURL(t testing.TB, d store.Dialect) string {
	t.Helper()
	switch d {
	case store.SQLite:
		return filepath.Join(t.TempDir(), "nexus.db")
	case store.Postgres:
		base := PostgresURL()
		if base == "" {
			t.Fatalf("%s is not set", PostgresEnv)
		}
		return freshSchema(t, base)
	}
	t.Fatalf("unknown dialect %q", d)
	return ""
}

func freshSchema(t testing.TB, base string) string {
	t.Helper()
	var b [6]byte
	_, _ = rand.Read(b[:])
	schema := "t_" + hex.EncodeToString(b[:])
	admin, err := sqlx.Open("postgres", base)
	if err != nil {
		t.Fatalf("postgres: %v", err)
	}
	if _, err := admin.Exec(`CREATE SCHEMA ` + schema); err != nil {
		_ = admin.Close()
		t.Fatalf("postgres: create schema: %v", err)
	}
	t.Cleanup(func() {
		_, _ = admin.Exec(`DROP SCHEMA ` + schema + ` CASCADE`)
		_ = admin.Close()
	})
	u, err := url.Parse(base)
	if err != nil {
		t.Fatalf("postgres url: %v", err)
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	return u.String()
}
