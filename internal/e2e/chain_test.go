package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/nexuskernel/nexus/core/store/storetest"
	"github.com/nexuskernel/nexus/internal/testserver"
	"github.com/nexuskernel/nexus/sdk/announce"
	"github.com/nexuskernel/nexus/sdk/client"
	"github.com/nexuskernel/nexus/sdk/runner"
)

// chainKernelTools are the kernel tools the chained agent imports.
var chainKernelTools = []string{
	"nexus.tools.search", "nexus.tools.call", "nexus.skill.load",
	"nexus.graph.delegate_task", "nexus.human.ask",
	"nexus.conversation.spawn", "nexus.conversation.send", "nexus.conversation.read",
}

// chainBranchBrief is the delegated branch's prompt: it loads a skill and answers.
const chainBranchBrief = "Read the release notes skill.\n!mock\nround 1\ncall skill {\"name\":\"release-notes\"}\nround 2\nsay notes read"

// The spawned child's brief and the message the parent then sends it: each a script of the
// child's own turn.
const (
	chainChildBrief   = "Draft the notes.\n!mock\nround 1\nsay notes drafted"
	chainChildMessage = "Polish the notes.\n!mock\nround 1\nsay notes polished"
)

// TestChainedKernelTools is the scenario that chains the kernel tools over real HTTP with the
// mock model, on each store: in one conversation turn the model searches for a Runner's deferred
// tool, calls it through tool_call (a real runner serves it), delegates a waited branch that
// loads a skill, asks the person a question that a member answers through the inbox, spawns a
// child conversation (waiting for its first reply) and messages it; in its next turn it reads
// the child's history with session_read.
func TestChainedKernelTools(t *testing.T) {
	t.Parallel()
	for _, d := range storetest.Dialects() {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			srv := testserver.Start(t, testserver.Options{Dialect: d})
			admin := srv.Client()
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()

			// A runner on a workstation serves deploy; it is only declared deferred.
			ex, err := admin.CreateExecutor(ctx, &client.CreateExecutorRequest{Kind: "runner", DisplayName: "Workstation", WorkspacePublicID: "default"})
			if err != nil {
				t.Fatal(err)
			}
			workstation := ex.Executor.PublicID
			deploy := announce.Tool{Name: "deploy", Description: ptrTo("Deploy the current build to an environment."),
				InputSchema:   json.RawMessage(`{"type":"object","properties":{"env":{"type":"string"}},"required":["env"]}`),
				EffectProfile: announce.Announced(announce.EffectReadOnly)}
			rn := &runner.Runner{Client: srv.ClientWith(ex.Token), Environment: json.RawMessage(`{"os":"linux"}`), Poll: 200 * time.Millisecond,
				Tools: []runner.Tool{{Announce: deploy, Handle: func(_ context.Context, call *runner.Call) (*client.Result, error) {
					var in struct {
						Env string `json:"env"`
					}
					if err := json.Unmarshal(call.Input, &in); err != nil {
						return nil, err
					}
					return &client.Result{Content: "deployed to " + in.Env}, nil
				}}}}
			if err := rn.Announce(ctx); err != nil {
				t.Fatal(err)
			}
			served := make(chan error, 1)
			go func() { served <- rn.Run(ctx) }()
			t.Cleanup(func() {
				cancel()
				<-served
			})

			desc := "How we write release notes."
			if _, err := admin.MemoryWrite(ctx, "default", &client.MemoryWriteRequest{Path: "workspace/skills/release-notes",
				Content: "# Release notes\nShort, in the past tense.\n", Description: &desc}); err != nil {
				t.Fatal(err)
			}
			agent, err := admin.CreateAgent(ctx, "default", &client.CreateAgentRequest{Handle: "lead", DisplayName: "Lead"})
			if err != nil {
				t.Fatal(err)
			}
			bot := srv.ClientWith(agent.Token)
			mode := "bypass"
			if _, err := bot.PutProfileConfiguration(ctx, &client.ProfileConfigurationRequest{Configuration: client.ProfileConfiguration{
				KernelTools: chainKernelTools, RunnerExecutorPublicIDs: []string{workstation}, ApprovalMode: &mode,
			}}); err != nil {
				t.Fatal(err)
			}
			conv, err := admin.CreateConversation(ctx, "default", map[string]any{"answering_agent_public_id": agent.Agent.PublicID,
				"default_runner_executor_public_id": workstation})
			if err != nil {
				t.Fatal(err)
			}
			script := mockScript("Ship the release.",
				line("tool_search", map[string]any{"query": "deploy"}),
				line("tool_call", map[string]any{"name": "deploy", "input": map[string]any{"env": "staging"}}),
				line("delegate_task", map[string]any{"prompt": chainBranchBrief, "wait": true}),
				line("ask", map[string]any{"prompt": "Ship to production?", "options": []string{"yes", "no"}}),
				line("spawn", map[string]any{"prompt": chainChildBrief, "label": "notes", "wait": true}),
				line("send", map[string]any{"to": "notes", "message": chainChildMessage}),
				"say shipped",
				// A reply that comes back after the turn ended opens a kernel-authored turn, which
				// counts on from this script.
				"say mail read")
			msg, err := admin.PostMessage(ctx, "default", conv.Conversation.PublicID, map[string]any{"text": script}, "")
			if err != nil {
				t.Fatal(err)
			}
			run := msg.Run.PublicID

			// The person answers the question from the inbox.
			row := inboxAsk(t, admin, run)
			if row["prompt"] != "Ship to production?" || row["call_key"] != "r5t0" {
				t.Fatalf("inbox row %v", row)
			}
			if res, err := admin.Resolve(ctx, "default", run, "r5t0", json.RawMessage(`{"content":"yes"}`)); err != nil || !res.Applied {
				t.Fatalf("answer: %v", err)
			}
			// The run ends once the reply its send is owed has come back.
			final := waitRun(t, admin, run, 60*time.Second)
			if final.Status != "completed" || deref(final.Answer) != "shipped" {
				t.Fatalf("run %s answer %q", final.Status, deref(final.Answer))
			}
			if asked := task(t, admin, run, "r5t0").Task; asked.Status != "completed" || deref(asked.Output) != `<answer task="r5t0-ask-1">yes</answer>` {
				t.Fatalf("ask %s: %q", asked.Status, deref(asked.Output))
			}

			// tool_search found the deferred tool with its route.
			search := task(t, admin, run, "r2t0").Task
			if search.Status != "completed" || !strings.Contains(deref(search.Output), `"name":"deploy"`) ||
				!strings.Contains(deref(search.Output), `"runner_executor_public_id":"`+workstation+`"`) {
				t.Fatalf("tool_search %s: %s", search.Status, deref(search.Output))
			}
			// tool_call's child was served by the runner, and the call mirrors its result.
			called := task(t, admin, run, "r3t0").Task
			if called.Status != "completed" || deref(called.Output) != "deployed to staging" {
				t.Fatalf("tool_call %s: %q", called.Status, deref(called.Output))
			}
			// The waited branch loaded the skill and its result reached the mainline.
			delegated := task(t, admin, run, "r4t0").Task
			if out := deref(delegated.Output); delegated.Status != "completed" || !strings.HasPrefix(out, `<task_result task="r4t0" status="completed">`+"\n<prompt>Read the release notes skill.") ||
				!strings.HasSuffix(out, "</prompt>\nnotes read\n</task_result>") {
				t.Fatalf("delegate_task %s: %q", delegated.Status, deref(delegated.Output))
			}
			skill := findTask(t, admin, run, func(tk *client.TaskResponse) bool {
				return tk.Task.ToolName == "skill"
			}, "r4t0-r2t0")
			if skill.Task.Status != "completed" || deref(skill.Task.Output) != "# Release notes\nShort, in the past tense.\n" {
				t.Fatalf("the branch's skill call %s", skill.Raw)
			}

			// The waited spawn's result is the child's first reply, which names the child; the send
			// was queued there.
			sp := task(t, admin, run, "r6t0").Task
			m := regexp.MustCompile(`^<task_result task="r6t0" status="completed" conversation="([0-9a-f-]{36})">`).FindStringSubmatch(deref(sp.Output))
			if m == nil {
				t.Fatalf("spawn output %q", deref(sp.Output))
			}
			child := m[1]
			if sp.Status != "completed" || deref(sp.Title) != "spawned notes" ||
				deref(sp.Output) != convReply("r6t0", child, chainChildBrief, "completed", "notes drafted") {
				t.Fatalf("spawn %s: %q", sp.Status, deref(sp.Output))
			}
			if sent := task(t, admin, run, "r7t0").Task; sent.Status != "completed" || deref(sent.Output) != "Sent to "+child+" (queued)." {
				t.Fatalf("send %s: %q", sent.Status, deref(sent.Output))
			}

			// Next turn: the model reads the child's history.
			readScript := mockScript("Read the notes conversation.",
				line("session_read", map[string]any{"session_id": child}), "say read")
			next, err := admin.PostMessage(ctx, "default", conv.Conversation.PublicID, map[string]any{"text": readScript}, "")
			if err != nil {
				t.Fatal(err)
			}
			if r := waitRun(t, admin, next.Run.PublicID, 60*time.Second); r.Status != "completed" || deref(r.Answer) != "read" {
				t.Fatalf("reading turn %s %q", r.Status, deref(r.Answer))
			}
			read := task(t, admin, next.Run.PublicID, "r2t0").Task
			var page struct {
				Conversation struct {
					PublicID string `json:"public_id"`
				} `json:"conversation"`
				Turns []struct {
					Position int64  `json:"position"`
					Role     string `json:"role"`
					Prompt   string `json:"prompt"`
					Content  string `json:"content"`
				} `json:"turns"`
			}
			if err := json.Unmarshal([]byte(deref(read.Output)), &page); err != nil || read.Status != "completed" || deref(read.Title) != "read conversation "+child {
				t.Fatalf("session_read %s %q: %v", read.Status, deref(read.Output), err)
			}
			if page.Conversation.PublicID != child || len(page.Turns) != 2 ||
				page.Turns[0].Position != 1 || page.Turns[0].Role != "agent" || page.Turns[0].Prompt != chainChildBrief || page.Turns[0].Content != "notes drafted" ||
				page.Turns[1].Position != 2 || page.Turns[1].Prompt != chainChildMessage || page.Turns[1].Content != "notes polished" {
				t.Fatalf("the child's history: %s", deref(read.Output))
			}
		})
	}
}

// findTask reads the tasks named keys and returns the first that match accepts.
func findTask(t *testing.T, c *client.Client, run string, match func(*client.TaskResponse) bool, keys ...string) *client.TaskResponse {
	t.Helper()
	var seen []string
	for _, k := range keys {
		tk, err := c.Task(context.Background(), "default", run, k)
		if err != nil {
			seen = append(seen, fmt.Sprintf("%s: %v", k, err))
			continue
		}
		if match(tk) {
			return tk
		}
		seen = append(seen, k+": "+string(tk.Raw))
	}
	t.Fatalf("no task matched among %v", seen)
	return nil
}
