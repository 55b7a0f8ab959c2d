package runs_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/nexuskernel/nexus/core/conversations"
	"github.com/nexuskernel/nexus/core/model"
	"github.com/nexuskernel/nexus/core/runs"
	"github.com/nexuskernel/nexus/core/store"
	"github.com/nexuskernel/nexus/core/store/storetest"
)

// memoryProfile is an agent profile that imports the memory tools.
const memoryProfile = `{"kernel_tools":["nexus.memory.ls","nexus.memory.read","nexus.memory.write","nexus.memory.edit","nexus.memory.grep","nexus.memory.delete"],` +
	`"approval_mode":"bypass","approval_rules":[],"instructions":"You keep notes."}`

// TestConversationRounds drives a conversation through several rounds of memory calls on each
// store, then a second turn whose first request begins with the first turn's last request and
// its answer (docs/development.md#how-the-kernel-runs-work).
func TestConversationRounds(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		h, conv := conversationHarness(t, s, memoryProfile)
		first := h.post(conv, "Take notes.\n!mock\nround 1\ncall memory_write {\"path\":\"conversation/notes.md\",\"content\":\"alpha\\n\"}\ncall memory_write {\"path\":\"workspace/shared.md\",\"content\":\"beta\"}\nround 2\ncall memory_edit {\"path\":\"conversation/notes.md\",\"old_text\":\"alpha\",\"new_text\":\"gamma\"}\nround 3\ncall memory_read {\"path\":\"conversation/notes.md\"}\nround 4\nsay {{last_result}}", "")
		if first.Turn.Status != runs.TurnRunning || first.Run.Status != runs.RunRunning || first.Turn.Position != 1 {
			t.Fatalf("first turn %+v run %s", first.Turn, first.Run.Status)
		}
		h.drain()
		hist, err := h.conv.History(h.ctx, h.actor, conv, 0, 20)
		if err != nil || len(hist.Turns) != 1 {
			t.Fatalf("history %+v %v", hist, err)
		}
		turn := hist.Turns[0]
		if turn.Status != runs.TurnCompleted || turn.Answer == nil || turn.Answer.TaskKey != "r4" || turn.Answer.Text != "gamma\n" {
			t.Fatalf("turn %+v answer %+v", turn, turn.Answer)
		}
		r := h.run(first.Run.PublicID)
		if r.Status != runs.RunCompleted || r.ConversationPublicID == nil || *r.ConversationPublicID != conv {
			t.Fatalf("run %s", r.Status)
		}
		last, err := h.conv.ReadRequest(h.ctx, h.actor, first.Run.PublicID, "r4")
		if err != nil {
			t.Fatal(err)
		}
		second := h.post(conv, "And now?", "")
		h.drain()
		req, err := h.conv.ReadRequest(h.ctx, h.actor, second.Run.PublicID, "r1")
		if err != nil {
			t.Fatal(err)
		}
		lastEntries := entriesOf(t, last)
		nextEntries := entriesOf(t, req)
		if len(nextEntries) != len(lastEntries)+2 {
			t.Fatalf("turn 2 opens with %d entries; turn 1 ended with %d", len(nextEntries), len(lastEntries))
		}
		for i := range lastEntries {
			if string(lastEntries[i]) != string(nextEntries[i]) {
				t.Fatalf("entry %d of turn 2 is not turn 1's: %s vs %s", i, nextEntries[i], lastEntries[i])
			}
		}
		if string(nextEntries[len(lastEntries)]) != `{"role":"assistant","content":[{"type":"text","text":"gamma\n"}]}` {
			t.Fatalf("turn 1's answer entry: %s", nextEntries[len(lastEntries)])
		}
		// The mock finds turn 1's script in history and counts on from it; either way the turn
		// completes and the conversation is idle.
		d, err := h.conv.ReadConversation(h.ctx, h.actor, conv)
		if err != nil || d.LiveTurnPublicID != nil || d.QueuedTurns != 0 {
			t.Fatalf("conversation %+v %v", d, err)
		}
	})
}

func entriesOf(t *testing.T, req []byte) []json.RawMessage {
	t.Helper()
	var v struct {
		Request struct {
			Entries []json.RawMessage `json:"entries"`
		} `json:"request"`
	}
	if err := json.Unmarshal(req, &v); err != nil {
		t.Fatal(err)
	}
	return v.Request.Entries
}

// TestHistoryBudget: when history does not fit the model's window less its output, the oldest
// whole turns are dropped; a turn that alone does not fit fails context_overflow.
func TestHistoryBudget(t *testing.T) {
	t.Parallel()
	window, out := int64(3000), int64(1000) // 2,000 tokens: about 8,000 bytes of entries
	cat, err := model.NewCatalog(&model.Config{Providers: []model.ProviderConfig{{Name: "mock", Type: "mock"}},
		Models: []model.Model{{Ref: "mock/small", Capabilities: model.Capabilities{Tools: true, ContextWindow: &window, MaxOutputTokens: &out}}}})
	if err != nil {
		t.Fatal(err)
	}
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		h := newHarness(t, s, harnessOptions{models: cat})
		a := &store.Agent{PublicID: store.NewPublicID(), WorkspaceID: h.actor.WorkspaceID, Handle: "bot", DisplayName: "Bot", StewardUserID: h.actor.ID}
		if err := s.Write(h.ctx, func(tx *store.Tx) error { return store.InsertAgent(h.ctx, tx, a) }); err != nil {
			t.Fatal(err)
		}
		c, err := h.conv.CreateConversation(h.ctx, h.actor, conversationBody(`{"answering_agent_public_id":"`+a.PublicID+`"}`))
		if err != nil {
			t.Fatal(err)
		}
		var posted []*conversations.Posted
		for i := 0; i < 4; i++ {
			posted = append(posted, h.post(c.PublicID, fmt.Sprintf("turn %d %s", i, strings.Repeat("w", 2500)), ""))
			h.drain()
		}
		req, err := h.conv.ReadRequest(h.ctx, h.actor, posted[3].Run.PublicID, "r1")
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(req), "turn 0 ") || !strings.Contains(string(req), "turn 2 ") {
			t.Fatalf("turn 4's request should keep turn 3 and drop turn 1: %d bytes", len(req))
		}
		big := h.post(c.PublicID, strings.Repeat("x", 9000), "")
		h.drain()
		hist, _ := h.conv.History(h.ctx, h.actor, c.PublicID, 0, 20)
		last := hist.Turns[len(hist.Turns)-1]
		if last.PublicID != big.Turn.PublicID || last.Status != runs.TurnFailed || last.Failure == nil || last.Failure.Key != "context_overflow" {
			t.Fatalf("oversized turn: %+v %+v", last, last.Failure)
		}
	})
}
