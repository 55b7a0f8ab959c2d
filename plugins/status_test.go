package plugins

import (
	"context"
	"encoding/json"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/nexuskernel/nexus/sdk/plugin"
)

// TestStatusJSON: a status serializes with exactly the keys docs/api.md#plugins lists and poll_found, the
// count of rows the inbox poll found that a wake-up should have announced.
func TestStatusJSON(t *testing.T) {
	t.Parallel()
	th := startHost(t, scenarioEntry(t, "memory-fs", plugin.KindMemory, "memory-inmem"))
	th.waitState(t, "memory-fs", StateReady, 10*time.Second)
	raw, err := json.Marshal(th.Status())
	if err != nil {
		t.Fatal(err)
	}
	var got []map[string]json.RawMessage
	if err := json.Unmarshal(raw, &got); err != nil || len(got) != 1 {
		t.Fatalf("%s", raw)
	}
	var keys []string
	for k := range got[0] {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	want := []string{"announcement", "breaker", "calls", "checksum_pinned", "command", "definition_digests", "enabled", "executor_public_id", "generation", "in_flight",
		"info", "kind", "last_error", "last_stderr", "name", "pid", "poll_found", "refusal", "restarts", "sha256", "started_at", "state", "tools"}
	if diff := cmp.Diff(want, keys); diff != "" {
		t.Errorf("status keys (-spec +got):\n%s", diff)
	}
	for key, want := range map[string]string{
		"state": `"ready"`, "kind": `"memory"`, "refusal": `null`, "last_error": `null`, "in_flight": `0`, "poll_found": `0`,
		"calls":   `{"completed":0,"errors":0,"failed":0,"replayed":0,"expired":0}`,
		"breaker": `{"state":"closed","failures":0,"open_until":null}`,
		"tools":   `["memory_delete","memory_edit","memory_grep","memory_ls","memory_read","memory_write"]`,
	} {
		if string(got[0][key]) != want {
			t.Errorf("%s = %s, want %s", key, got[0][key], want)
		}
	}
	// A memory plugin keeps no revisions: revision 0, written at load, nothing refused.
	var ann map[string]json.RawMessage
	_ = json.Unmarshal(got[0]["announcement"], &ann)
	if len(ann) != 3 || string(ann["revision"]) != "0" || string(ann["refusal"]) != "null" || len(ann["announced_at"]) < len(`"2006-01-02T15:04:05Z"`) {
		t.Errorf("announcement = %s", got[0]["announcement"])
	}
	var info map[string]any
	_ = json.Unmarshal(got[0]["info"], &info)
	if len(info) != 4 || info["protocol_minor"] != float64(plugin.ProtocolMinor) {
		t.Errorf("info = %s", got[0]["info"])
	}
}

// TestOnStateHearsEachChange: the host's OnState hears a plugin's state changes in order, each
// once: starting then ready at start, and the restart's way back to ready.
func TestOnStateHearsEachChange(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var heard []State
	th := startHostConfig(t, Config{Catalog: &Catalog{Entries: []Entry{scenarioEntry(t, "tools", plugin.KindToolProvider, "tools-example")}},
		Plane: newPlane(), Timings: fastTimings, OnState: func(name string, st State) {
			if name != "tools" {
				t.Errorf("a state of %q", name)
			}
			mu.Lock()
			heard = append(heard, st)
			mu.Unlock()
		}})
	th.waitState(t, "tools", StateReady, 10*time.Second)
	mu.Lock()
	got := slices.Clone(heard)
	mu.Unlock()
	if !slices.Equal(got, []State{StateStarting, StateReady}) {
		t.Fatalf("heard %v at start", got)
	}
	if err := th.Restart(context.Background(), "tools"); err != nil {
		t.Fatal(err)
	}
	th.waitState(t, "tools", StateReady, 10*time.Second)
	mu.Lock()
	got = slices.Clone(heard)
	mu.Unlock()
	if len(got) < 4 || got[len(got)-1] != StateReady || slices.Contains(got[2:len(got)-1], StateReady) {
		t.Fatalf("heard %v after a restart", got)
	}
	for i := 1; i < len(got); i++ {
		if got[i] == got[i-1] {
			t.Fatalf("heard %s twice in a row: %v", got[i], got)
		}
	}
}
