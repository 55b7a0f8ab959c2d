package memorytest_test

import (
	"testing"

	"github.com/nexuskernel/nexus/sdk/memory"
	"github.com/nexuskernel/nexus/sdk/memory/memorytest"
)

func memStore(t *testing.T) memory.Provider { return memorytest.NewMemStore() }

// TestMemStore runs the kit on the reference store: the kit and the reference agree.
func TestMemStore(t *testing.T) {
	t.Parallel()
	memorytest.RunProvider(t, memStore)
	memorytest.RunTools(t, memStore)
}

// TestMemStoreOverGRPC runs both layers through the real shims: every case passes over the wire
// exactly as in process.
func TestMemStoreOverGRPC(t *testing.T) {
	t.Parallel()
	memorytest.RunProvider(t, memorytest.OverGRPC(memStore))
	memorytest.RunTools(t, memorytest.OverGRPC(memStore))
}
