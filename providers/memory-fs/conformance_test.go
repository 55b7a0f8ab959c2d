package memoryfs_test

import (
	"context"
	"testing"

	memoryfs "github.com/nexuskernel/nexus/providers/memory-fs"
	"github.com/nexuskernel/nexus/sdk/memory"
	"github.com/nexuskernel/nexus/sdk/memory/memorytest"
)

var (
	_ memory.Provider     = (*memoryfs.Store)(nil)
	_ memorytest.Reopener = (*memoryfs.Store)(nil)
)

// open returns a durable store (fsync on, the production setting) in a fresh directory.
func open(t *testing.T) memory.Provider {
	t.Helper()
	s, err := memoryfs.Open(context.Background(), memoryfs.Config{Root: t.TempDir()})
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
