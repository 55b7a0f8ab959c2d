package plugins

import (
	"context"
	"testing"
	"time"

	"github.com/nexuskernel/nexus/sdk/memory"
	"github.com/nexuskernel/nexus/sdk/memory/memorytest"
	"github.com/nexuskernel/nexus/sdk/plugin"
)

// TestMemoryProvider: the host answers a ready memory plugin's store with the minor it reported,
// the store the plugin's executor serves; a tool provider, an unknown name and a stopped memory
// plugin answer none, the last still known as a memory plugin.
func TestMemoryProvider(t *testing.T) {
	t.Parallel()
	th := startHost(t, scenarioEntry(t, "mem", plugin.KindMemory, "memory-inmem"), scenarioEntry(t, "tools", plugin.KindToolProvider, "tools-example"))
	th.waitState(t, "mem", StateReady, 10*time.Second)
	th.waitState(t, "tools", StateReady, 10*time.Second)

	ms, isMemory := th.MemoryProvider("mem")
	if !isMemory || ms == nil || ms.ProtocolMinor != plugin.ProtocolMinor {
		t.Fatalf("a ready memory plugin: %+v %v", ms, isMemory)
	}
	w, err := ms.Provider.Write(t.Context(), &memory.WriteRequest{Scope: memorytest.Workspace, Name: "a.md", Content: "x", WrittenAt: memorytest.T0})
	if err != nil || !w.Created || w.Entry.ID == "" {
		t.Fatalf("a write through the store: %+v %v", w, err)
	}
	if r, err := ms.Provider.Read(t.Context(), &memory.ReadRequest{Scope: memorytest.Workspace, Name: "a.md"}); err != nil || r.Content != "x" {
		t.Fatalf("read back: %+v %v", r, err)
	}
	for _, name := range []string{"tools", "nope"} {
		if ms, isMemory := th.MemoryProvider(name); ms != nil || isMemory {
			t.Errorf("%s: %+v %v", name, ms, isMemory)
		}
	}

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := th.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	if ms, isMemory := th.MemoryProvider("mem"); ms != nil || !isMemory {
		t.Errorf("a stopped memory plugin: %+v %v", ms, isMemory)
	}
}
