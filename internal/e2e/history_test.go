package e2e

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/nexuskernel/nexus/core/store/storetest"
	"github.com/nexuskernel/nexus/internal/testserver"
	"github.com/nexuskernel/nexus/sdk/client"
)

// historyImports are the history tools a model declares to look back.
var historyImports = []string{"nexus.conversation.search", "nexus.conversation.read"}

// historyFixture is a server with an agent and a titled conversation it answered: three turns,
// each answered by the mock's echo.
type historyFixture struct {
	admin *client.Client
	agent *client.CreateAgentResponse
	conv  string
	turns []string
}

func newHistoryFixture(t *testing.T, srv *testserver.Instance) *historyFixture {
	t.Helper()
	ctx := context.Background()
	admin := srv.Client()
	agent, err := admin.CreateAgent(ctx, "default", &client.CreateAgentRequest{Handle: "archivist", DisplayName: "Archivist"})
	if err != nil {
		t.Fatal(err)
	}
	conv, err := admin.CreateConversation(ctx, "default", map[string]any{"answering_agent_public_id": agent.Agent.PublicID, "title": "Release planning"})
	if err != nil {
		t.Fatal(err)
	}
	f := &historyFixture{admin: admin, agent: agent, conv: conv.Conversation.PublicID}
	for _, text := range []string{"Can we ship Friday?", "What about the migration?", "Plan for Monday."} {
		msg, err := admin.PostMessage(ctx, "default", f.conv, map[string]any{"text": text}, "")
		if err != nil {
			t.Fatal(err)
		}
		f.turns = append(f.turns, msg.Turn.PublicID)
		if r := waitRun(t, admin, msg.Run.PublicID, 30*time.Second); r.Status != "completed" {
			t.Fatalf("history turn %q: %s", text, r.Status)
		}
	}
	return f
}

// TestSessionSearchOverHTTP drives session_search over real HTTP with the mock model on each
// store: a standalone run (its creator is the principal) searches the workspace's history, then
// reads around the hit with session_read; the search's page is pinned byte for byte.
func TestSessionSearchOverHTTP(t *testing.T) {
	t.Parallel()
	for _, d := range storetest.Dialects() {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			srv := testserver.Start(t, testserver.Options{Dialect: d})
			ctx := context.Background()
			f := newHistoryFixture(t, srv)
			script := mockScript("Look back.",
				line("session_search", map[string]any{"query": "SHIP friday"}),
				line("session_read", map[string]any{"session_id": f.conv, "around_turn_id": f.turns[0], "limit": 2}),
				"say found it")
			created, err := f.admin.CreateRun(ctx, "default", map[string]any{
				"steps":         []any{map[string]any{"model": map[string]any{"model": "mock/scripted", "prompt": script, "kernel_tools": historyImports}}},
				"approval_mode": "bypass",
			}, "")
			if err != nil {
				t.Fatal(err)
			}
			run := waitRun(t, f.admin, created.Run.PublicID, 30*time.Second)
			if run.Status != "completed" || deref(run.Answer) != "found it" {
				t.Fatalf("run %s %q", run.Status, deref(run.Answer))
			}
			search := task(t, f.admin, created.Run.PublicID, "r2t0")
			hit := func(field, excerpt string) string {
				return `{"conversation_public_id":"` + f.conv + `","title":"Release planning","turn_public_id":"` + f.turns[0] +
					`","variant_public_id":null,"position":1,"field":"` + field + `","inherited":false,"excerpt":"` + excerpt + `","truncated":false}`
			}
			want := `{"matches":[` + hit("content", "echo: Can we ship Friday?") + `,` + hit("prompt", "Can we ship Friday?") + `],"pagination":{"next_after":null}}`
			if search.Task.Status != "completed" || deref(search.Task.Output) != want || deref(search.Task.Title) != "searched history" ||
				search.Task.StructuredContent == nil || string(*search.Task.StructuredContent) != want {
				t.Fatalf("search task %s", search.Raw)
			}
			read := task(t, f.admin, created.Run.PublicID, "r3t0")
			var page struct {
				Conversation struct {
					PublicID string `json:"public_id"`
					Title    string `json:"title"`
				} `json:"conversation"`
				Turns []struct {
					PublicID   string `json:"public_id"`
					Position   int64  `json:"position"`
					Role       string `json:"role"`
					InProgress bool   `json:"in_progress"`
					Prompt     string `json:"prompt"`
					Content    string `json:"content"`
				} `json:"turns"`
				Pagination struct {
					HasOlder bool `json:"has_older"`
					HasNewer bool `json:"has_newer"`
				} `json:"pagination"`
			}
			if err := json.Unmarshal([]byte(deref(read.Task.Output)), &page); err != nil {
				t.Fatalf("read task %s: %v", read.Raw, err)
			}
			// Around turn 1 with a limit of 2: turn 1 and its newer neighbour.
			if deref(read.Task.Title) != "read conversation "+f.conv || page.Conversation.Title != "Release planning" || len(page.Turns) != 2 ||
				page.Turns[0].PublicID != f.turns[0] || page.Turns[1].PublicID != f.turns[1] || page.Turns[1].Content != "echo: What about the migration?" ||
				page.Turns[0].Role != "user" || page.Pagination.HasOlder || !page.Pagination.HasNewer {
				t.Fatalf("read task %s", read.Raw)
			}
		})
	}
}

// TestSessionReadOverHTTP drives session_read over real HTTP with the mock model on each store:
// a conversation's own answering agent reads its conversation while answering, so the page holds
// the unfinished turn with its execution so far; a refusal reaches the model as an error result.
func TestSessionReadOverHTTP(t *testing.T) {
	t.Parallel()
	for _, d := range storetest.Dialects() {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			srv := testserver.Start(t, testserver.Options{Dialect: d})
			ctx := context.Background()
			f := newHistoryFixture(t, srv)
			bot := srv.ClientWith(f.agent.Token)
			mode := "bypass"
			if _, err := bot.PutProfileConfiguration(ctx, &client.ProfileConfigurationRequest{Configuration: client.ProfileConfiguration{
				KernelTools: historyImports, ApprovalMode: &mode,
			}}); err != nil {
				t.Fatal(err)
			}
			script := mockScript("Check the history.",
				line("session_read", map[string]any{"session_id": f.conv, "limit": 2, "include_execution": true})+"\n"+
					line("session_read", map[string]any{"session_id": f.conv, "before_position": 2, "after_position": 1}),
				"say read")
			msg, err := f.admin.PostMessage(ctx, "default", f.conv, map[string]any{"text": script}, "")
			if err != nil {
				t.Fatal(err)
			}
			if r := waitRun(t, f.admin, msg.Run.PublicID, 30*time.Second); r.Status != "completed" || deref(r.Answer) != "read" {
				t.Fatalf("run %s %q", r.Status, deref(r.Answer))
			}
			read := task(t, f.admin, msg.Run.PublicID, "r2t0")
			var page struct {
				Turns []struct {
					PublicID   string  `json:"public_id"`
					Position   int64   `json:"position"`
					InProgress bool    `json:"in_progress"`
					Content    *string `json:"content"`
					Execution  struct {
						RunPublicID string `json:"run_public_id"`
						Status      string `json:"status"`
						Tasks       []struct {
							Key      string `json:"key"`
							Kind     string `json:"kind"`
							Status   string `json:"status"`
							ToolName string `json:"tool_name"`
						} `json:"tasks"`
						TasksOmitted int64 `json:"tasks_omitted"`
					} `json:"execution"`
				} `json:"turns"`
				Pagination struct {
					BeforePosition int64 `json:"before_position"`
					AfterPosition  int64 `json:"after_position"`
					HasOlder       bool  `json:"has_older"`
				} `json:"pagination"`
			}
			if err := json.Unmarshal([]byte(deref(read.Task.Output)), &page); err != nil {
				t.Fatalf("read task %s: %v", read.Raw, err)
			}
			if len(page.Turns) != 2 || page.Pagination.BeforePosition != 3 || page.Pagination.AfterPosition != 4 || !page.Pagination.HasOlder {
				t.Fatalf("read page %s", read.Raw)
			}
			done, live := page.Turns[0], page.Turns[1]
			if done.InProgress || deref(done.Content) != "echo: Plan for Monday." || done.Execution.Status != "completed" {
				t.Fatalf("finished turn %s", read.Raw)
			}
			// The calling turn is unfinished: its run is running, its first round is done and its
			// two calls are running (this one) or waiting their turn.
			if live.PublicID != msg.Turn.PublicID || !live.InProgress || live.Content != nil || live.Execution.RunPublicID != msg.Run.PublicID ||
				live.Execution.Status != "running" || len(live.Execution.Tasks) < 3 || live.Execution.Tasks[0].Key != "r1" ||
				live.Execution.Tasks[0].Status != "completed" || live.Execution.Tasks[1].ToolName != "session_read" {
				t.Fatalf("live turn %s", read.Raw)
			}
			refused := task(t, f.admin, msg.Run.PublicID, "r2t1")
			if want := "invalid_arguments: use at most one of around_turn_id, before_position and after_position."; deref(refused.Task.Output) != want ||
				deref(refused.Task.Title) != "session_read refused" {
				t.Fatalf("refused task %s", refused.Raw)
			}
		})
	}
}
