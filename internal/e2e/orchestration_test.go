package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/nexuskernel/nexus/core/store/storetest"
	"github.com/nexuskernel/nexus/internal/testserver"
	"github.com/nexuskernel/nexus/sdk/client"
)

// graphImports are the orchestration tools an agent declares, and a memory tool its branches
// call.
var graphImports = []string{"nexus.graph.delegate_task", "nexus.graph.wait", "nexus.human.ask", "nexus.memory.ls"}

// graphRules allow the orchestration tools by rule, as agents commonly do.
const graphRules = `[{"tool":"delegate_task","verdict":"allow"},{"tool":"wait","verdict":"allow"},{"tool":"ask","verdict":"allow"},{"tool":"memory_*","verdict":"allow"}]`

// line is one script directive calling name with args as one line of JSON.
func line(name string, args map[string]any) string {
	b, err := json.Marshal(args)
	if err != nil {
		panic(err)
	}
	return "call " + name + " " + string(b)
}

// mockScript is a brief with a mock script; rounds[i] holds round i+1's directives.
func mockScript(brief string, rounds ...string) string {
	s := brief + "\n!mock"
	for i, r := range rounds {
		s += "\nround " + string(rune('1'+i)) + "\n" + r
	}
	return s
}

// Branch briefs. Nested scripts never use {{…}}, which the calling round would expand.
const (
	countBrief = "Count.\n!mock\nround 1\ncall memory_ls {}\nround 2\nsay counted"
	askBrief   = "Ask.\n!mock\nround 1\ncall ask {\"prompt\":\"Ship?\"}\nround 2\nsay asked"
)

func envelope(key, status, prompt, body string) string {
	return "<task_result task=\"" + key + "\" status=\"" + status + "\">\n<prompt>" + prompt + "</prompt>\n" + body + "\n</task_result>"
}

// eventually polls cond until it holds or within passes.
func eventually(t *testing.T, within time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %v", what, within)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func task(t *testing.T, c *client.Client, run, key string) *client.TaskResponse {
	t.Helper()
	tk, err := c.Task(context.Background(), "default", run, key)
	if err != nil {
		t.Fatalf("task %s: %v", key, err)
	}
	return tk
}

func code(err error) string {
	var e *client.Error
	if errors.As(err, &e) {
		return e.Code
	}
	return ""
}

// inboxAsk waits for the ask of run on c's inbox and returns it.
func inboxAsk(t *testing.T, c *client.Client, run string) map[string]any {
	t.Helper()
	var found map[string]any
	eventually(t, 30*time.Second, "the ask on the inbox", func() bool {
		page, err := c.Inbox(context.Background(), "", 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, raw := range page.Tasks {
			var row map[string]any
			if err := json.Unmarshal(raw, &row); err != nil {
				t.Fatal(err)
			}
			if row["kind"] == "ask" && row["run_public_id"] == run {
				found = row
				return true
			}
		}
		return false
	})
	return found
}

// TestOrchestrationOverHTTP drives delegate_task, wait and ask over real HTTP with the mock
// model on each store: a person answers an agent's question through the inbox and the
// resolution door; a waited and a detached delegation, the detached one woken by a wake round;
// a branch canceled at its door; a conversation-lifetime branch delivered as a kernel-authored
// turn; and a wait across the turns of a conversation.
func TestOrchestrationOverHTTP(t *testing.T) {
	t.Parallel()
	for _, d := range storetest.Dialects() {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			srv := testserver.Start(t, testserver.Options{Dialect: d})
			admin := srv.Client()
			ctx := context.Background()
			agent, err := admin.CreateAgent(ctx, "default", &client.CreateAgentRequest{Handle: "lead", DisplayName: "Lead"})
			if err != nil {
				t.Fatal(err)
			}
			bot := srv.ClientWith(agent.Token)
			mode := "rules"
			if _, err := bot.PutProfileConfiguration(ctx, &client.ProfileConfigurationRequest{Configuration: client.ProfileConfiguration{
				KernelTools: graphImports, ApprovalMode: &mode, ApprovalRules: json.RawMessage(graphRules),
			}}); err != nil {
				t.Fatal(err)
			}
			conversation := func() string {
				conv, err := admin.CreateConversation(ctx, "default", map[string]any{"answering_agent_public_id": agent.Agent.PublicID})
				if err != nil {
					t.Fatal(err)
				}
				return conv.Conversation.PublicID
			}
			standalone := func(script string) string {
				created, err := admin.CreateRun(ctx, "default", map[string]any{
					"steps":         []any{map[string]any{"model": map[string]any{"model": "mock/scripted", "prompt": script, "kernel_tools": graphImports}}},
					"approval_mode": "rules", "approval_rules": json.RawMessage(graphRules),
				}, "")
				if err != nil {
					t.Fatal(err)
				}
				return created.Run.PublicID
			}

			t.Run("ask", func(t *testing.T) {
				conv := conversation()
				msg, err := admin.PostMessage(ctx, "default", conv, map[string]any{"text": mockScript("Ask the person.",
					line("ask", map[string]any{"prompt": "Which database?", "options": []string{"staging", "production"}}),
					"say answered {{last_result}}")}, "")
				if err != nil {
					t.Fatal(err)
				}
				run := msg.Run.PublicID
				row := inboxAsk(t, admin, run)
				if row["task_key"] != "r2t0-ask-1" || row["call_key"] != "r2t0" || row["prompt"] != "Which database?" || row["multi"] != false ||
					row["conversation_public_id"] != conv {
					t.Fatalf("inbox row %v", row)
				}
				inboxAsk(t, bot, run) // the answering agent sees its runs' asks too
				r, err := admin.Run(ctx, "default", run)
				if err != nil || r.Run.Status != "running" || len(r.Run.Attention) != 1 || r.Run.Attention[0].Reason != "awaiting_human" {
					t.Fatalf("run while asking: %s %v", r.Raw, err)
				}
				if _, err := admin.Resolve(ctx, "default", run, "r1", json.RawMessage(`{"content":"x"}`)); code(err) != "await_not_resolvable" {
					t.Fatalf("resolving a model round: %v", err)
				}
				res, err := admin.Resolve(ctx, "default", run, "r2t0", json.RawMessage(`{"content":"staging"}`))
				if err != nil || !res.Applied || res.Task.Key != "r2t0-ask-1" || res.Task.Status != "completed" {
					t.Fatalf("answer: %s %v", res.Raw, err)
				}
				again, err := admin.Resolve(ctx, "default", run, "r2t0-ask-1", json.RawMessage(`{"content":"production"}`))
				if err != nil || again.Applied || deref(again.Task.Output) != "staging" {
					t.Fatalf("second answer: %s %v", again.Raw, err)
				}
				done := waitRun(t, admin, run, 30*time.Second)
				if done.Status != "completed" || deref(done.Answer) != `answered <answer task="r2t0-ask-1">staging</answer>` {
					t.Fatalf("run %s %q", done.Status, deref(done.Answer))
				}
			})

			t.Run("delegations", func(t *testing.T) {
				waited := standalone(mockScript("Delegate and wait.", line("delegate_task", map[string]any{"prompt": countBrief, "wait": true}), "say {{last_result}}"))
				run := waitRun(t, admin, waited, 30*time.Second)
				if want := envelope("r2t0", "completed", countBrief, "counted"); run.Status != "completed" || deref(run.Answer) != want {
					t.Fatalf("waited: %s %q", run.Status, deref(run.Answer))
				}
				if c := task(t, admin, waited, "r2t0"); deref(c.Task.Title) != "delegated task r2t0" || c.Task.StructuredContent != nil {
					t.Fatalf("waited call %s", c.Raw)
				}

				// Detached: the mainline answers while the branch waits on the person; the answer
				// wakes a round that reads the branch's result and becomes the deliverable.
				detached := standalone(mockScript("Delegate.", line("delegate_task", map[string]any{"prompt": askBrief}),
					"say main done", "say woke: {{last_result}}"))
				inboxAsk(t, admin, detached)
				receipt := task(t, admin, detached, "r2t0")
				if !strings.HasPrefix(deref(receipt.Task.Output), "Task r2t0 started in the background.") ||
					string(*receipt.Task.StructuredContent) != `{"run_public_id":"`+detached+`","task":"r2t0"}` {
					t.Fatalf("receipt %s", receipt.Raw)
				}
				eventually(t, 30*time.Second, "the mainline's final round", func() bool {
					return deref(task(t, admin, detached, "r2").Task.Output) == "main done"
				})
				if _, err := admin.Resolve(ctx, "default", detached, "r2t0-r2t0", json.RawMessage(`{"content":"yes"}`)); err != nil {
					t.Fatal(err)
				}
				run = waitRun(t, admin, detached, 30*time.Second)
				if want := "woke: " + envelope("r2t0", "completed", askBrief, "asked"); run.Status != "completed" || run.DeliverableTaskKey != "r3" || deref(run.Answer) != want {
					t.Fatalf("detached: %s %s %q", run.Status, run.DeliverableTaskKey, deref(run.Answer))
				}

				// Branch cancel at its door.
				canceled := standalone(mockScript("Delegate.", line("delegate_task", map[string]any{"prompt": askBrief}),
					"say main done", "say woke: {{last_result}}"))
				inboxAsk(t, admin, canceled)
				if _, err := admin.CancelBranch(ctx, "default", canceled, "s1-model-1"); code(err) != "not_a_branch" {
					t.Fatalf("cancel of a mainline round: %v", err)
				}
				tk, err := admin.CancelBranch(ctx, "default", canceled, "r2t0")
				if err != nil || tk.Task.Key != "r2t0-model-1" {
					t.Fatalf("cancel: %s %v", tk.Raw, err)
				}
				var e *client.Error
				if _, err := admin.CancelBranch(ctx, "default", canceled, "r2t0"); !errors.As(err, &e) || e.Status != http.StatusConflict || e.Code != "already_terminal" {
					t.Fatalf("second cancel: %v", err)
				}
				run = waitRun(t, admin, canceled, 30*time.Second)
				if want := "woke: " + envelope("r2t0", "canceled", askBrief, "error: task_canceled"); run.Status != "completed" || deref(run.Answer) != want {
					t.Fatalf("canceled branch: %s %q", run.Status, deref(run.Answer))
				}
			})

			t.Run("conversation lifetime", func(t *testing.T) {
				conv := conversation()
				msg, err := admin.PostMessage(ctx, "default", conv, map[string]any{"text": mockScript("Delegate.",
					line("delegate_task", map[string]any{"prompt": askBrief}), "say turn one done", "say kernel turn read: {{last_result}}")}, "")
				if err != nil {
					t.Fatal(err)
				}
				run := msg.Run.PublicID
				inboxAsk(t, admin, run)
				eventually(t, 30*time.Second, "the first turn completing before its branch", func() bool {
					h, err := admin.History(ctx, "default", conv, 0, 0)
					return err == nil && len(h.Turns) == 1 && h.Turns[0].Status == "completed"
				})
				if r, _ := admin.Run(ctx, "default", run); r.Run.Status != "running" {
					t.Fatalf("the first turn's run %s while its branch asks", r.Run.Status)
				}
				if _, err := admin.Resolve(ctx, "default", run, "r2t0-r2t0-ask-1", json.RawMessage(`{"content":"yes"}`)); err != nil {
					t.Fatal(err)
				}
				var h *client.HistoryResponse
				eventually(t, 30*time.Second, "the kernel turn answering", func() bool {
					h, err = admin.History(ctx, "default", conv, 0, 0)
					return err == nil && len(h.Turns) == 2 && h.Turns[1].Status == "completed"
				})
				var turns struct {
					Turns []struct {
						Author struct {
							Kind string `json:"kind"`
						} `json:"author"`
						Input struct {
							Text string `json:"text"`
						} `json:"input"`
					} `json:"turns"`
				}
				if err := json.Unmarshal(h.Raw, &turns); err != nil {
					t.Fatal(err)
				}
				result := envelope("r2t0", "completed", askBrief, "asked")
				if turns.Turns[1].Author.Kind != "kernel" || turns.Turns[1].Input.Text != result || h.Turns[1].Answer.Text != "kernel turn read: "+result {
					t.Fatalf("kernel turn %s", h.Raw)
				}
				waitRun(t, admin, run, 30*time.Second)
			})

			t.Run("wait across turns", func(t *testing.T) {
				conv := conversation()
				first, err := admin.PostMessage(ctx, "default", conv, map[string]any{"text": mockScript("Delegate quietly.",
					line("delegate_task", map[string]any{"prompt": askBrief, "wake": "passive"}), "say started")}, "")
				if err != nil {
					t.Fatal(err)
				}
				run1 := first.Run.PublicID
				inboxAsk(t, admin, run1)
				second, err := admin.PostMessage(ctx, "default", conv, map[string]any{"text": mockScript("Wait for it.",
					line("wait", map[string]any{"task": "r2t0", "run_public_id": run1}), "say waited: {{last_result}}")}, "")
				if err != nil {
					t.Fatal(err)
				}
				run2 := second.Run.PublicID
				eventually(t, 30*time.Second, "the cross-run wait placed", func() bool {
					tk, err := admin.Task(ctx, "default", run2, "r2t0-wait-1")
					return err == nil && tk.Task.Status == "dispatched"
				})
				if _, err := admin.Resolve(ctx, "default", run1, "r2t0-r2t0", json.RawMessage(`{"content":"yes"}`)); err != nil {
					t.Fatal(err)
				}
				run := waitRun(t, admin, run2, 30*time.Second)
				if want := "waited: " + envelope("r2t0", "completed", askBrief, "asked"); run.Status != "completed" || deref(run.Answer) != want {
					t.Fatalf("cross-run wait: %s %q", run.Status, deref(run.Answer))
				}
				var await struct {
					Task struct {
						Wait json.RawMessage `json:"wait"`
					} `json:"task"`
				}
				if err := json.Unmarshal(task(t, admin, run2, "r2t0-wait-1").Raw, &await); err != nil {
					t.Fatal(err)
				}
				if string(await.Task.Wait) != `{"run_public_id":"`+run1+`","task":"r2t0","timeout_ms":3600000}` {
					t.Fatalf("wait spec %s", await.Task.Wait)
				}
			})
		})
	}
}
