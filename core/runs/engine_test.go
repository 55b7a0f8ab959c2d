package runs_test

import (
	"strings"
	"testing"

	"github.com/nexuskernel/nexus/core/runs"
	"github.com/nexuskernel/nexus/core/store"
	"github.com/nexuskernel/nexus/core/store/storetest"
)

func TestMemoryRoundTrip(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		h := newHarness(t, s, harnessOptions{})
		c := h.create(modelStep("Remember.\n!mock\nround 1\ncall memory_write {\"path\":\"workspace/plan.md\",\"content\":\"ship it\\n\"}\nround 2\ncall memory_read {\"path\":\"workspace/plan.md\"}\nround 3\nsay {{last_result}}", memoryTools))
		h.drain()
		r := h.run(c.Run.PublicID)
		if r.Status != runs.RunCompleted {
			t.Fatalf("run status %s, want completed; tasks %+v", r.Status, r.Tasks)
		}
		if r.Answer == nil || *r.Answer != "ship it\n" {
			t.Fatalf("answer %v", r.Answer)
		}
		w := h.task(c.Run.PublicID, "r2t0")
		if w.Title == nil || *w.Title != "wrote workspace/plan.md" || *w.Output != "Wrote workspace/plan.md (8 bytes)." {
			t.Fatalf("write row: %+v", w)
		}
		req, err := h.e.ReadRequest(h.ctx, h.actor, c.Run.PublicID, "r3")
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(req), `"role":"tool","tool_call_id":"mock_r2_0","name":"memory_read","is_error":false,"content":[{"type":"text","text":"ship it\n"}]`) {
			t.Fatalf("sealed r3: %s", req)
		}
	})
}
