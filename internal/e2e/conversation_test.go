package e2e

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/nexuskernel/nexus/core/store/storetest"
	"github.com/nexuskernel/nexus/internal/testserver"
	"github.com/nexuskernel/nexus/sdk/client"
)

// TestConversationOverHTTP drives a conversation on each store: an agent declares the memory
// tools on its profile, a person posts a message whose script makes several rounds of memory
// calls, then a second message; every task and every sealed request is read back over HTTP.
func TestConversationOverHTTP(t *testing.T) {
	t.Parallel()
	for _, d := range storetest.Dialects() {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			srv := testserver.Start(t, testserver.Options{Dialect: d})
			admin := srv.Client()
			ctx := context.Background()
			agent, err := admin.CreateAgent(ctx, "default", &client.CreateAgentRequest{Handle: "scribe", DisplayName: "Scribe"})
			if err != nil {
				t.Fatal(err)
			}
			bot := srv.ClientWith(agent.Token)
			mode := "rules"
			instructions := "You keep the team's notes."
			if _, err := bot.PutProfileConfiguration(ctx, &client.ProfileConfigurationRequest{Configuration: client.ProfileConfiguration{
				KernelTools:   memoryImports,
				ApprovalMode:  &mode,
				ApprovalRules: json.RawMessage(`[{"tool":"memory_*","verdict":"allow"}]`),
				Instructions:  &instructions,
			}}); err != nil {
				t.Fatal(err)
			}
			conv, err := admin.CreateConversation(ctx, "default", map[string]any{"answering_agent_public_id": agent.Agent.PublicID, "title": "Notes"})
			if err != nil {
				t.Fatal(err)
			}
			id := conv.Conversation.PublicID
			first, err := admin.PostMessage(ctx, "default", id, map[string]any{"text": rounds}, "msg-1")
			if err != nil {
				t.Fatal(err)
			}
			run := waitRun(t, admin, first.Run.PublicID, 30*time.Second)
			if run.Status != "completed" || !strings.Contains(deref(run.Answer), "workspace/plan.md  22 bytes") {
				t.Fatalf("first turn: %s %q", run.Status, deref(run.Answer))
			}
			if run.ApprovalMode != "rules" {
				t.Fatalf("frozen approval mode %s", run.ApprovalMode)
			}
			second, err := admin.PostMessage(ctx, "default", id, map[string]any{"text": "Anything else?\n!mock\nround 1\ncall memory_read {\"path\":\"conversation/none.md\"}\nround 2\nsay checked"}, "")
			if err != nil {
				t.Fatal(err)
			}
			run2 := waitRun(t, admin, second.Run.PublicID, 30*time.Second)
			if run2.Status != "completed" || deref(run2.Answer) != "checked" {
				t.Fatalf("second turn: %s %q", run2.Status, deref(run2.Answer))
			}
			var lastOfFirst []json.RawMessage
			for i, r := range []*client.Run{run, run2} {
				for _, tr := range r.Tasks {
					tk, err := admin.Task(ctx, "default", r.PublicID, tr.Key)
					if err != nil {
						t.Fatal(err)
					}
					if tk.Task.Status != "completed" || tk.Task.Output == nil {
						t.Fatalf("%s: %s", tr.Key, tk.Raw)
					}
					if tk.Task.Kind != "model_task" {
						continue
					}
					req, err := admin.SealedRequest(ctx, "default", r.PublicID, tr.Key)
					if err != nil {
						t.Fatal(err)
					}
					var sealed struct {
						Request struct {
							Entries []json.RawMessage `json:"entries"`
						} `json:"request"`
					}
					if err := json.Unmarshal(req, &sealed); err != nil {
						t.Fatal(err)
					}
					if !strings.HasPrefix(string(sealed.Request.Entries[0]), `{"role":"system","content":[{"type":"text","text":"You keep the team's notes."}]}`) {
						t.Fatalf("%s: first entry %s", tr.Key, sealed.Request.Entries[0])
					}
					if i == 0 {
						lastOfFirst = sealed.Request.Entries
					} else if tr.Key == "r1" {
						// The second turn opens with the first turn's last request and its answer.
						for j := range lastOfFirst {
							if string(lastOfFirst[j]) != string(sealed.Request.Entries[j]) {
								t.Fatalf("turn 2 entry %d differs from turn 1's", j)
							}
						}
					}
				}
			}
			hist, err := admin.History(ctx, "default", id, 0, 0)
			if err != nil || len(hist.Turns) != 2 || hist.Turns[0].Answer == nil || hist.Turns[1].Answer.Text != "checked" {
				t.Fatalf("history %s %v", hist.Raw, err)
			}
			again, err := admin.PostMessage(ctx, "default", id, map[string]any{"text": rounds}, "msg-1")
			if err != nil || !again.Replayed || again.Run.PublicID != first.Run.PublicID {
				t.Fatalf("replayed message: %+v %v", again, err)
			}
		})
	}
}
