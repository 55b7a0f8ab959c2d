package runs_test

import (
	"strings"
	"testing"

	"github.com/nexuskernel/nexus/core/conversations"
	"github.com/nexuskernel/nexus/core/kernel"
	"github.com/nexuskernel/nexus/core/model"
	"github.com/nexuskernel/nexus/core/registry"
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
		req, err := h.conv.ReadRequest(h.ctx, h.actor, c.Run.PublicID, "r3")
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(req), `"role":"tool","tool_call_id":"mock_r2_0","name":"memory_read","is_error":false,"content":[{"type":"text","text":"ship it\n"}]`) {
			t.Fatalf("sealed r3: %s", req)
		}
	})
}

// TestNewRequiresToolTexts: an engine words the waits it settles even when it runs no kernel
// tools (one another instance's waits expire on), so one built without texts is refused.
func TestNewRequiresToolTexts(t *testing.T) {
	t.Parallel()
	s := storetest.Open(t, store.SQLite)
	base := runs.Options{Store: s, Models: model.MustBuiltin(), Registry: registry.New(), Conversations: conversations.Hosted{}}
	if _, err := runs.New(base); err == nil || !strings.Contains(err.Error(), "Texts") {
		t.Fatalf("New without Texts or Kernel = %v, want the refusal naming Texts", err)
	}
	withTexts := base
	withTexts.Texts = kernel.New(kernel.Options{})
	if _, err := runs.New(withTexts); err != nil {
		t.Fatalf("New with Texts: %v", err)
	}
	withKernel := base
	withKernel.Kernel = kernel.New(kernel.Options{})
	if _, err := runs.New(withKernel); err != nil {
		t.Fatalf("New with Kernel (its texts): %v", err)
	}
}

// TestNewRequiresConversations: an engine follows the turns of the runs a conversation hosts,
// which another instance or a door may have created, so one built without that side is refused.
func TestNewRequiresConversations(t *testing.T) {
	t.Parallel()
	s := storetest.Open(t, store.SQLite)
	o := runs.Options{Store: s, Models: model.MustBuiltin(), Registry: registry.New(), Texts: kernel.New(kernel.Options{})}
	if _, err := runs.New(o); err == nil || !strings.Contains(err.Error(), "Conversations") {
		t.Fatalf("New without Conversations = %v, want the refusal naming Conversations", err)
	}
}
