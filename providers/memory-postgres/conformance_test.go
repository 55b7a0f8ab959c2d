package memorypostgres_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"testing"

	"github.com/jmoiron/sqlx"
	_ "github.com/lib/pq"

	memorypostgres "github.com/nexuskernel/nexus/providers/memory-postgres"
	"github.com/nexuskernel/nexus/sdk/memory"
	"github.com/nexuskernel/nexus/sdk/memory/memorytest"
)

var (
	_ memory.Provider     = (*memorypostgres.Store)(nil)
	_ memorytest.Reopener = (*memorypostgres.Store)(nil)
)

// dsn is the test database, or skips the test with the reason.
func dsn(t testing.TB) string {
	t.Helper()
	url := os.Getenv("NEXUS_TEST_POSTGRES_URL")
	if url == "" {
		t.Skip("NEXUS_TEST_POSTGRES_URL is not set: the PostgreSQL store needs a real database")
	}
	return url
}

// freshSchema names a schema of its own for one test and drops it when the test ends.
func freshSchema(t testing.TB) string {
	t.Helper()
	url := dsn(t)
	var b [6]byte
	_, _ = rand.Read(b[:])
	schema := "nexus_memory_test_" + hex.EncodeToString(b[:])
	t.Cleanup(func() {
		db, err := sqlx.Open("postgres", url)
		if err != nil {
			t.Error(err)
			return
		}
		defer func() { _ = db.Close() }()
		if _, err := db.Exec(`DROP SCHEMA IF EXISTS ` + schema + ` CASCADE`); err != nil {
			t.Errorf("drop %s: %v", schema, err)
		}
	})
	return schema
}

// open returns a store in a fresh schema; the pool is small because the kit runs many stores.
func open(t *testing.T) memory.Provider {
	t.Helper()
	s, err := memorypostgres.Open(context.Background(), memorypostgres.Config{DSN: dsn(t), Schema: freshSchema(t), MaxOpenConns: 4})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func TestConformance(t *testing.T) {
	t.Parallel()
	memorytest.RunProvider(t, open)
	memorytest.RunTools(t, open)
}

func TestConformanceOverGRPC(t *testing.T) {
	t.Parallel()
	memorytest.RunProvider(t, memorytest.OverGRPC(open))
	memorytest.RunTools(t, memorytest.OverGRPC(open))
}
