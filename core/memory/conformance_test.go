package memory_test

import (
	"context"
	"testing"

	"github.com/nexuskernel/nexus/core/memory"
	"github.com/nexuskernel/nexus/core/store"
	"github.com/nexuskernel/nexus/core/store/storetest"
	memsdk "github.com/nexuskernel/nexus/sdk/memory"
	"github.com/nexuskernel/nexus/sdk/memory/memorytest"
)

// reopenable is the kernel store over a database it can close and open again, as a restarted
// server would (memorytest.Reopener).
type reopenable struct {
	*memory.Store
	t   testing.TB
	db  *store.Store
	url string
}

var (
	_ memsdk.Provider     = (*memory.Store)(nil)
	_ memorytest.Reopener = (*reopenable)(nil)
)

func (r *reopenable) Reopen(ctx context.Context) (memsdk.Provider, error) {
	if err := r.db.Close(); err != nil {
		return nil, err
	}
	db, err := store.Open(ctx, r.url, store.Options{MaxReaders: 4})
	if err != nil {
		return nil, err
	}
	r.t.Cleanup(func() { _ = db.Close() })
	if _, err := db.Migrate(ctx); err != nil {
		return nil, err
	}
	return memory.New(db), nil
}

// openFresh opens a fresh migrated database of dialect d and the memory store over it.
func openFresh(t testing.TB, d store.Dialect) *reopenable {
	t.Helper()
	url := storetest.FreshURL(t, d)
	db, err := store.Open(context.Background(), url, store.Options{MaxReaders: 4})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	if _, err := db.Migrate(context.Background()); err != nil {
		t.Fatal(err)
	}
	return &reopenable{Store: memory.New(db), t: t, db: db, url: url}
}

// TestConformance runs the memory conformance kit, both layers, on every dialect: the kernel
// store must answer exactly as every other memory store does.
func TestConformance(t *testing.T) {
	t.Parallel()
	for _, d := range storetest.Dialects() {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			open := func(t *testing.T) memsdk.Provider { return openFresh(t, d) }
			memorytest.RunProvider(t, open)
			memorytest.RunTools(t, open)
		})
	}
}
