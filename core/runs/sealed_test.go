package runs_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/nexuskernel/nexus/core/store"
	"github.com/nexuskernel/nexus/core/store/storetest"
)

// TestSealedStorage pins docs/development.md#how-the-kernel-runs-work: every round's request is
// served byte for byte as sealed, a continuation's request extends its predecessor's, and the store
// for a 50-round run stays under three times its last request alone.
func TestSealedStorage(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		h := newHarness(t, s, harnessOptions{})
		var script strings.Builder
		script.WriteString("Fifty rounds.\n!mock\n")
		for i := 1; i < 50; i++ {
			fmt.Fprintf(&script, "round %d\ncall memory_write {\"path\":\"workspace/n%d.md\",\"content\":\"round %d\"}\n", i, i%8, i)
		}
		script.WriteString("round 50\nsay done")
		c := h.create(modelStep(script.String(), memoryTools))
		h.drain()
		r := h.run(c.Run.PublicID)
		if r.Status != "completed" || r.DeliverableTaskKey != "r50" {
			t.Fatalf("run %s deliverable %s", r.Status, r.DeliverableTaskKey)
		}
		var prev []json.RawMessage
		var last []byte
		for i := 1; i <= 50; i++ {
			key := fmt.Sprintf("r%d", i)
			if i == 1 {
				key = "s1-model-1"
			}
			b, err := h.conv.ReadRequest(h.ctx, h.actor, c.Run.PublicID, key)
			if err != nil {
				t.Fatal(err)
			}
			tk := h.task(c.Run.PublicID, key)
			if tk.RequestBytes == nil || *tk.RequestBytes != int64(len(b)) {
				t.Fatalf("%s: request_bytes %v, served %d", key, tk.RequestBytes, len(b))
			}
			var req struct {
				Request struct {
					Entries []json.RawMessage `json:"entries"`
				} `json:"request"`
			}
			if err := json.Unmarshal(b, &req); err != nil {
				t.Fatal(err)
			}
			for j := range prev {
				if string(prev[j]) != string(req.Request.Entries[j]) {
					t.Fatalf("%s: entry %d differs from the previous round's", key, j)
				}
			}
			if i > 1 && len(req.Request.Entries) != len(prev)+2 {
				t.Fatalf("%s: %d entries after %d", key, len(req.Request.Entries), len(prev))
			}
			prev = req.Request.Entries
			last = b
		}
		stored, err := store.SealedStorage(h.ctx, s.Reader())
		if err != nil {
			t.Fatal(err)
		}
		if stored >= 3*int64(len(last)) {
			t.Fatalf("stored %d bytes for 50 rounds; the last request alone is %d", stored, len(last))
		}
		t.Logf("50 rounds: %d bytes stored, last request %d bytes (%.2fx)", stored, len(last), float64(stored)/float64(len(last)))
	})
}
