package conversations_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/nexuskernel/nexus/core/conversations"
	"github.com/nexuskernel/nexus/core/model"
	"github.com/nexuskernel/nexus/core/refusal"
	"github.com/nexuskernel/nexus/core/runs"
	"github.com/nexuskernel/nexus/core/steps"
	"github.com/nexuskernel/nexus/core/store"
	"github.com/nexuskernel/nexus/core/store/storetest"
)

// TestConversationQueue: a turn posted while another is live queues, its run pending; the
// queue starts it when the live turn leaves running; a stop cancels a turn and moves on.
func TestConversationQueue(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		h, conv := conversationHarness(t, s, "")
		a := h.Post(conv, "!mock\nround 1\nsay one", "")
		b := h.Post(conv, "!mock\nround 1\nsay two", "")
		c := h.Post(conv, "!mock\nround 1\nsay three", "")
		if b.Turn.Status != runs.TurnQueued || b.Run.Status != runs.RunPending || b.Turn.Position != 2 {
			t.Fatalf("second turn %+v run %s", b.Turn, b.Run.Status)
		}
		d, _ := h.Conv.ReadConversation(h.Ctx, h.Actor, conv)
		if d.LiveTurnPublicID == nil || *d.LiveTurnPublicID != a.Turn.PublicID || d.QueuedTurns != 2 {
			t.Fatalf("conversation %+v", d)
		}
		if _, err := h.Conv.StartRun(h.Ctx, h.Actor, b.Run.PublicID); !isCode(err, conversations.CodeConversationHosted) {
			t.Fatalf("start a hosted run: %v", err)
		}
		if _, err := h.Conv.Append(h.Ctx, appendRequest(t, h.Actor, b.Run.PublicID, []byte(`{"steps":[{"model":{"model":"mock/scripted","prompt":"x"}}]}`), "")); !isCode(err, conversations.CodeConversationHosted) {
			t.Fatalf("append to a hosted run: %v", err)
		}
		if _, err := h.Conv.Archive(h.Ctx, h.Actor, conv); !isCode(err, conversations.CodeConversationBusy) {
			t.Fatalf("archive a busy conversation: %v", err)
		}
		// Stopping the live turn's run cancels its turn and starts the next.
		if _, err := h.Conv.StopRun(h.Ctx, h.Actor, a.Run.PublicID, true); err != nil {
			t.Fatal(err)
		}
		h.Drain()
		hist, _ := h.Conv.History(h.Ctx, h.Actor, conv, 0, 20)
		var got []string
		for _, tr := range hist.Turns {
			got = append(got, tr.Status)
		}
		if strings.Join(got, ",") != "canceled,completed,completed" {
			t.Fatalf("turns %v", got)
		}
		if hist.Turns[2].Answer == nil || hist.Turns[2].Answer.Text != "three" || c.Turn.Position != 3 {
			t.Fatalf("third turn %+v", hist.Turns[2])
		}
		page, _ := h.Conv.History(h.Ctx, h.Actor, conv, 3, 1)
		if len(page.Turns) != 1 || page.Turns[0].Position != 2 || !page.HasOlder || *page.NextBeforePosition != 2 {
			t.Fatalf("history page %+v", page)
		}
		arch, err := h.Conv.Archive(h.Ctx, h.Actor, conv)
		if err != nil || arch.Status != runs.ConversationArchived || arch.ArchivedAt == nil {
			t.Fatalf("archive: %+v %v", arch, err)
		}
		if again, err := h.Conv.Archive(h.Ctx, h.Actor, conv); err != nil || again.ArchivedAt == nil || *again.ArchivedAt != *arch.ArchivedAt {
			t.Fatalf("archive again: %+v %v", again, err)
		}
		_, err = h.Conv.PostMessage(h.Ctx, &conversations.PostMessageRequest{Actor: h.Actor, ConversationID: conv, Message: messageBody(`{"text":"x"}`), Replay: replayOf("", nil)})
		if !isCode(err, conversations.CodeConversationArchived) {
			t.Fatalf("post to archived: %v", err)
		}
	})
}

// TestConversationWords pins the post-message and create words.
func TestConversationWords(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		h, conv := conversationHarness(t, s, "")
		expect := func(name string, err error, code, path string) {
			t.Helper()
			r, ok := refusal.As(err)
			if !ok || r.Code != code {
				t.Errorf("%s: got %v, want %s", name, err, code)
				return
			}
			if p, _ := r.Get("path"); path != "" && p != path {
				t.Errorf("%s: path %v, want %s", name, p, path)
			}
		}
		post := func(msg string) error {
			_, err := h.Conv.PostMessage(h.Ctx, &conversations.PostMessageRequest{Actor: h.Actor, ConversationID: conv, Message: messageBody(msg), Replay: replayOf("", []byte(`{"message":`+msg+`}`))})
			return err
		}
		expect("empty text", post(`{"text":""}`), refusal.CodeValidationFailed, "message.text")
		expect("malformed attachment", post(`{"text":"x","attachments":["nope"]}`), refusal.CodeParameterInvalid, "message.attachments[0]")
		expect("unknown attachment", post(`{"text":"","attachments":["6f1b2c3d-0000-4000-8000-000000000001"]}`), runs.CodeUnknownInputUpload, "message.attachments[0]")
		expect("tool not declared", post(`{"text":"x","tool_names":["memory_read"]}`), runs.CodeToolNotDeclared, "message.tool_names[0]")
		expect("unknown model", post(`{"text":"x","model":"mock/none"}`), runs.CodeUnknownModel, "message.model")
		expect("unknown field", post(`{"text":"x","temperature":1}`), refusal.CodeValidationFailed, "message.temperature")
		_, err := h.Conv.ReadConversation(h.Ctx, h.Actor, "0193c2d4-5e6f-7a8b-9c0d-1e2f3a4b5c6d")
		expect("unknown conversation", err, refusal.CodeNotFound, "")
		_, err = h.Conv.CreateConversation(h.Ctx, h.Actor, conversationBody(`{}`))
		expect("user without an agent", err, refusal.CodeValidationFailed, "conversation.answering_agent_public_id")
		_, err = h.Conv.CreateConversation(h.Ctx, h.Actor, conversationBody(`{"answering_agent_public_id":"0193c2d4-5e6f-7a8b-9c0d-1e2f3a4b5c6d"}`))
		expect("foreign agent", err, refusal.CodeValidationFailed, "conversation.answering_agent_public_id")
		d, _ := h.Conv.ReadConversation(h.Ctx, h.Actor, conv)
		_, err = h.Conv.CreateConversation(h.Ctx, h.Actor, conversationBody(`{"answering_agent_public_id":"`+d.AnsweringAgentPublicID+`","title":"`+strings.Repeat("t", 257)+`"}`))
		expect("long title", err, refusal.CodeValidationFailed, "conversation.title")
		_, err = h.Conv.CreateConversation(h.Ctx, h.Actor, conversationBody(`{"answering_agent_public_id":"`+d.AnsweringAgentPublicID+`","default_runner_executor_public_id":"0193c2d4-5e6f-7a8b-9c0d-1e2f3a4b5c6d"}`))
		expect("runner", err, steps.CodeRunnerNotEligible, "conversation.default_runner_executor_public_id")
		// Sixteen queued turns are held; the seventeenth is refused.
		for i := 0; i < 1+conversations.MaxQueuedTurns; i++ {
			if err := post(`{"text":"hold"}`); err != nil {
				t.Fatalf("turn %d: %v", i+1, err)
			}
		}
		expect("queue full", post(`{"text":"one too many"}`), conversations.CodeInputQueueFull, "")
	})
}

// TestCapabilityUnavailable: a model without the tools capability refuses a declaration with
// tools.
func TestCapabilityUnavailable(t *testing.T) {
	t.Parallel()
	s := storetest.Open(t, store.SQLite)
	cat, err := model.NewCatalog(&model.Config{Providers: []model.ProviderConfig{{Name: "mock", Type: "mock"}},
		Models: []model.Model{{Ref: "mock/scripted", Capabilities: model.Capabilities{Tools: true}}, {Ref: "mock/plain"}}})
	if err != nil {
		t.Fatal(err)
	}
	h := newHarness(t, s, harnessOptions{models: cat})
	_, err = h.Conv.CreateRun(h.Ctx, createRequest(h.Actor, json.RawMessage(modelStep("x", memoryTools)), "", nil))
	if err != nil {
		t.Fatalf("tools model: %v", err)
	}
	run := strings.Replace(modelStep("x", memoryTools), "mock/scripted", "mock/plain", 1)
	_, err = h.Conv.CreateRun(h.Ctx, createRequest(h.Actor, json.RawMessage(run), "", nil))
	if !isCode(err, runs.CodeModelCapabilityUnavailable) {
		t.Fatalf("tools on a plain model: %v", err)
	}
	if _, err = h.Conv.CreateRun(h.Ctx, createRequest(h.Actor, json.RawMessage(strings.Replace(modelStep("x", ""), "mock/scripted", "mock/plain", 1)), "", nil)); err != nil {
		t.Fatalf("no tools on a plain model: %v", err)
	}
}

// TestPostedToolNames: a message's tool_names are stored on its turn as posted (an empty list
// stays an empty list) and a message without them stores none; the history reads them back.
func TestPostedToolNames(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		h, conv := conversationHarness(t, s, "")
		narrowed := h.Post(conv, "none of them", `"tool_names":[]`)
		if narrowed.Turn.ToolNames == nil || len(narrowed.Turn.ToolNames) != 0 {
			t.Fatalf("posted tool_names [] as %#v", narrowed.Turn.ToolNames)
		}
		plain := h.Post(conv, "all of them", "")
		if plain.Turn.ToolNames != nil {
			t.Fatalf("posted no tool_names as %#v", plain.Turn.ToolNames)
		}
		hist, err := h.Conv.History(h.Ctx, h.Actor, conv, 0, 20)
		if err != nil {
			t.Fatal(err)
		}
		if len(hist.Turns) != 2 || hist.Turns[0].ToolNames == nil || hist.Turns[1].ToolNames != nil {
			t.Fatalf("history tool_names %#v, %#v", hist.Turns[0].ToolNames, hist.Turns[1].ToolNames)
		}
	})
}
