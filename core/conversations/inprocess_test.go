package conversations_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/nexuskernel/nexus/core/approval"
	"github.com/nexuskernel/nexus/core/conversations"
	"github.com/nexuskernel/nexus/core/runs"
	"github.com/nexuskernel/nexus/core/steps"
	"github.com/nexuskernel/nexus/core/store"
	"github.com/nexuskernel/nexus/core/store/storetest"
)

// TestInProcessCaller: a caller inside the process (the MCP server, the console) creates a run,
// follows it to its answer, appends to it and posts a message with Go values alone; it writes no
// JSON. The run it builds is the run its JSON body makes, row for row, and a Go value the grammar
// refuses is refused with the body's words.
func TestInProcessCaller(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		h := newHarness(t, s, harnessOptions{config: runs.Config{Workers: 2, ModelTimeout: time.Minute, Poll: time.Hour}})
		if err := h.E.Start(h.Ctx); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(h.E.Stop)
		memory := []string{"nexus.memory.write", "nexus.memory.read"}
		script := "Take a note.\n!mock\nround 1\ncall memory_write {\"path\":\"workspace/note.md\",\"content\":\"kept\"}\n" +
			"round 2\ncall memory_read {\"path\":\"workspace/note.md\"}\nround 3\nsay {{last_result}}"
		start := false
		run := steps.Run{ApprovalMode: approval.ModeBypass, Start: &start, Steps: []steps.Step{
			{Model: &steps.Model{Key: "note", Model: "mock/scripted", Prompt: script, Declaration: steps.Declaration{KernelTools: memory}}},
		}}
		created, err := h.Conv.CreateRun(h.Ctx, &conversations.CreateRunRequest{Actor: h.Actor, Run: run})
		if err != nil || created.Run.Status != runs.RunPending {
			t.Fatalf("create %+v %v", created, err)
		}
		id := created.Run.PublicID
		// An append of Go values, reading the first step's result; then the run starts and is
		// followed to its answer.
		appended, err := h.Conv.Append(h.Ctx, &conversations.AppendRequest{Actor: h.Actor, RunID: id, Steps: []steps.Step{
			{Model: &steps.Model{Prompt: "Repeat it.\n!mock\nround 1\nsay again", Results: []string{"note"}}},
		}})
		if err != nil || appended.Receipt.Revision != 2 || appended.Receipt.DeliverableTaskKey != "s2-model-1" {
			t.Fatalf("append %+v %v", appended, err)
		}
		if _, err := h.Conv.StartRun(h.Ctx, h.Actor, id); err != nil {
			t.Fatal(err)
		}
		done := follow(t, h, id)
		second := h.Task(id, "s2-model-1")
		if deref(done.Answer) != "again" || done.Revision != 2 || h.Task(id, "note").Status != runs.StatusCompleted || string(second.Results) != `["note"]` {
			t.Fatalf("answer %q at revision %d, reading %s", deref(done.Answer), done.Revision, second.Results)
		}
		// The appended step read the note the first one wrote and read back through memory.
		if req := h.SealedRequest(id, "s2-model-1"); !strings.Contains(mustJSON(t, req), `\nkept\n\u003c/task_result\u003e`) {
			t.Fatalf("the appended step's request: %s", mustJSON(t, req))
		}

		// The same run from its JSON body makes the same rows.
		body := `{"steps":[{"model":{"key":"note","model":"mock/scripted","prompt":` + quote(script) +
			`,"kernel_tools":["nexus.memory.write","nexus.memory.read"]}}],"approval_mode":"bypass","start":false}`
		fromGo, err := h.Conv.CreateRun(h.Ctx, &conversations.CreateRunRequest{Actor: h.Actor, Run: run})
		if err != nil {
			t.Fatal(err)
		}
		fromJSON, err := h.Conv.CreateRun(h.Ctx, createRequest(h.Actor, json.RawMessage(body), "", nil))
		if err != nil {
			t.Fatal(err)
		}
		a, b := h.Task(fromGo.Run.PublicID, "note"), h.Task(fromJSON.Run.PublicID, "note")
		a.CreatedAt, b.CreatedAt = "", ""
		if ja, jb := mustJSON(t, a), mustJSON(t, b); ja != jb {
			t.Fatalf("rows differ:\n%s\n%s", ja, jb)
		}

		// A conversation and a message of Go values.
		agent := h.NewAgent("bot", "Bot")
		conv, err := h.Conv.CreateConversation(h.Ctx, h.Actor, &conversations.NewConversation{AnsweringAgentPublicID: agent.PublicID})
		if err != nil {
			t.Fatal(err)
		}
		posted, err := h.Conv.PostMessage(h.Ctx, &conversations.PostMessageRequest{Actor: h.Actor, ConversationID: conv.PublicID,
			Message: conversations.Message{Text: "Hello.\n!mock\nround 1\nsay hi", ToolNames: []string{}}})
		if err != nil {
			t.Fatal(err)
		}
		if done := follow(t, h, posted.Run.PublicID); deref(done.Answer) != "hi" {
			t.Fatalf("turn answer %q", deref(done.Answer))
		}

		// A Go value the grammar refuses is refused with the words a body gets.
		_, err = h.Conv.CreateRun(h.Ctx, &conversations.CreateRunRequest{Actor: h.Actor, Run: steps.Run{ApprovalMode: approval.ModeBypass,
			Steps: []steps.Step{{Tool: &steps.Tool{Name: "memory_read"}}, {Model: &steps.Model{Model: "mock/none", Prompt: "x"}}}}})
		_, jerr := h.Conv.CreateRun(h.Ctx, createRequest(h.Actor,
			json.RawMessage(`{"steps":[{"tool":{"name":"memory_read"}},{"model":{"model":"mock/none","prompt":"x"}}],"approval_mode":"bypass"}`), "", nil))
		if mustJSON(t, err) != mustJSON(t, jerr) || !isCode(err, steps.CodeReservedToolName) {
			t.Fatalf("refusals differ:\n%v\n%v", err, jerr)
		}
		if _, err := h.Conv.PostMessage(h.Ctx, &conversations.PostMessageRequest{Actor: h.Actor, ConversationID: conv.PublicID,
			Message: conversations.Message{Attachments: []string{"nope"}}}); !isCode(err, "parameter_invalid") {
			t.Fatalf("a malformed attachment: %v", err)
		}
	})
}

// follow reads the run as a member waits for it (ReadRunWaiting) until it stops running.
func follow(t *testing.T, h *harness, id string) *conversations.RunDoc {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); {
		d, err := h.Conv.ReadRunWaiting(h.Ctx, h.Actor, id, 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		if d.Status != runs.RunRunning {
			if d.Status != runs.RunCompleted {
				t.Fatalf("run %s: %s %+v", id, d.Status, d.Attention)
			}
			return d
		}
	}
	t.Fatalf("run %s did not finish", id)
	return nil
}

func quote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
