package e2e

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/nexuskernel/nexus/core/store/storetest"
	"github.com/nexuskernel/nexus/sdk/client"
)

// askingConversation creates an agent that declares the orchestration tools and allows them by
// rule, and a conversation it answers; the owner then posts script there and gets its run.
func (p *plane) askingConversation(script string) string {
	p.t.Helper()
	agent, err := p.admin.CreateAgent(p.ctx, "default", &client.CreateAgentRequest{Handle: "lead", DisplayName: "Lead"})
	if err != nil {
		p.t.Fatal(err)
	}
	mode := "rules"
	if _, err := p.srv.ClientWith(agent.Token).PutProfileConfiguration(p.ctx, &client.ProfileConfigurationRequest{Configuration: client.ProfileConfiguration{
		KernelTools: graphImports, ApprovalMode: &mode, ApprovalRules: json.RawMessage(graphRules),
	}}); err != nil {
		p.t.Fatal(err)
	}
	conv, err := p.admin.CreateConversation(p.ctx, "default", map[string]any{"answering_agent_public_id": agent.Agent.PublicID})
	if err != nil {
		p.t.Fatal(err)
	}
	msg, err := p.admin.PostMessage(p.ctx, "default", conv.Conversation.PublicID, map[string]any{"text": script}, "")
	if err != nil {
		p.t.Fatal(err)
	}
	return msg.Run.PublicID
}

// graphRun starts a standalone run of one model step that declares the orchestration tools,
// allowed by rule.
func (p *plane) graphRun(script string) string {
	p.t.Helper()
	created, err := p.admin.CreateRun(p.ctx, "default", map[string]any{
		"steps":         []any{map[string]any{"model": map[string]any{"model": "mock/scripted", "prompt": script, "kernel_tools": graphImports}}},
		"approval_mode": "rules", "approval_rules": json.RawMessage(graphRules),
	}, "")
	if err != nil {
		p.t.Fatal(err)
	}
	return created.Run.PublicID
}

// resolve answers at the resolution door with a verbatim body and returns the exact status, the
// answer read as the client reads it, and the refusal's code.
func (p *plane) resolve(run, key, body string) (int, *client.ResolutionResponse, string) {
	p.t.Helper()
	status, _, b := p.raw("POST", "/agent_api/v1/workspaces/default/runs/"+run+"/tasks/"+key+"/resolution", p.srv.AdminToken, []byte(body), map[string]string{"Content-Type": "application/json"})
	res := &client.ResolutionResponse{Raw: b}
	if status == 200 {
		if err := json.Unmarshal(b, res); err != nil {
			p.t.Fatalf("resolution answer %s: %v", b, err)
		}
	}
	return status, res, errorCode(b)
}

// toolEntry finds the sealed tool entry paired with a provider call id.
func toolEntry(t *testing.T, entries []json.RawMessage, callID string) string {
	t.Helper()
	for _, e := range entries {
		var head struct {
			Role       string `json:"role"`
			ToolCallID string `json:"tool_call_id"`
		}
		if json.Unmarshal(e, &head) == nil && head.Role == "tool" && head.ToolCallID == callID {
			return string(e)
		}
	}
	t.Fatalf("no tool entry for %s in %s", callID, entries)
	return ""
}

// userText is the sealed user entry of one text part.
func userText(text string) string {
	return `{"role":"user","content":[{"type":"text","text":` + rawJSON(text) + `}]}`
}

// rawJSON is a JSON string as the sealed request writes it: no HTML escaping.
func rawJSON(s string) string {
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(s); err != nil {
		panic(err)
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// promptHead is the <prompt> head of a model source: the first 80 characters, … when cut.
func promptHead(prompt string) string {
	if r := []rune(prompt); len(r) > 80 {
		return string(r[:80]) + "…"
	}
	return prompt
}

// TestGoldenPathWithImage's mock/text-only case is scenario 5 (unreadable media becomes an index
// line, and a non-media link is canonical JSON in the tool entry and in output); see golden_test.go.

// askScript asks with options in round 1, and waits on that ask in the same round, so the run
// holds both an ask await (r2t0-ask-1) and a wait await (r2t1-wait-1).
var askScript = mockScript("Ask the person.",
	line("ask", map[string]any{"prompt": "Which database?", "options": []string{"staging", "production"}})+"\n"+
		line("wait", map[string]any{"task": "r2t0"}),
	"say answered")

// TestAsk is scenario 19: an ask is awaiting_input on the author's member inbox with the run
// awaiting_human; the author's answer applies once and the continuation pairs the call with the
// <answer>; a second answer is idle; a wait await is not resolvable.
func TestAsk(t *testing.T) {
	t.Parallel()
	for _, d := range storetest.Dialects() {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			p := newPlane(t, d)
			run := p.askingConversation(askScript)
			ask := p.waitTask(run, "r2t0-ask-1", "awaiting_input")
			if ask.Task.Kind != "await_task" || ask.Task.Mainline {
				t.Fatalf("ask await %s", ask.Raw)
			}
			row := inboxAsk(t, p.admin, run)
			if row["task_key"] != "r2t0-ask-1" || row["call_key"] != "r2t0" || row["prompt"] != "Which database?" {
				t.Fatalf("inbox row %v", row)
			}
			if opts, _ := json.Marshal(row["options"]); string(opts) != `["staging","production"]` {
				t.Fatalf("inbox options %s", opts)
			}
			r, err := p.admin.Run(p.ctx, "default", run)
			if err != nil || r.Run.Status != "running" || len(r.Run.Attention) != 1 || r.Run.Attention[0].Reason != "awaiting_human" ||
				!contains(r.Run.Attention[0].TaskKeys, "r2t0-ask-1") {
				t.Fatalf("run while asking: %s %v", r.Raw, err)
			}

			// A wait await is held by the kernel: no door resolves it.
			p.waitTask(run, "r2t1-wait-1", "dispatched")
			for _, key := range []string{"r2t1-wait-1", "r2t1"} {
				if status, _, code := p.resolve(run, key, `{"content":"staging"}`); status != 409 || code != "await_not_resolvable" {
					t.Fatalf("resolving the wait at %s: %d %s", key, status, code)
				}
			}
			if tk := p.task(run, "r2t1-wait-1"); tk.Task.Status != "dispatched" {
				t.Fatalf("wait await after a refused resolution %s", tk.Raw)
			}

			status, res, _ := p.resolve(run, "r2t0-ask-1", `{"content":"staging"}`)
			if status != 200 || !res.Applied || res.Task.Key != "r2t0-ask-1" || res.Task.Status != "completed" {
				t.Fatalf("answer: %d %s", status, res.Raw)
			}
			status, again, _ := p.resolve(run, "r2t0-ask-1", `{"content":"production"}`)
			if status != 200 || again.Applied || again.Task.Status != "completed" || deref(again.Task.Output) != "staging" {
				t.Fatalf("second answer: %d %s", status, again.Raw)
			}
			done := p.waitRunStatus(run, "completed")
			if deref(done.Answer) != "answered" {
				t.Fatalf("answer %q", deref(done.Answer))
			}
			entries := p.sealedEntries(run, "r2")
			want := `{"role":"tool","tool_call_id":"mock_r1_0","name":"ask","is_error":false,"content":[{"type":"text","text":"<answer task=\"r2t0-ask-1\">staging</answer>"}]}`
			if got := toolEntry(t, entries, "mock_r1_0"); got != want {
				t.Fatalf("r2t0's tool entry %s\nwant %s", got, want)
			}
			if call := p.task(run, "r2t0"); call.Task.Status != "completed" || deref(call.Task.Output) != `<answer task="r2t0-ask-1">staging</answer>` {
				t.Fatalf("ask call %s", call.Raw)
			}
		})
	}
}

// TestResultUnstorableAtTheAskDoor is scenario 16's second half: the \u0000 text a commit door
// turns into a failed row is refused 422 result_unstorable at an ask's resolution door, where
// the park stands for a person to answer again.
func TestResultUnstorableAtTheAskDoor(t *testing.T) {
	t.Parallel()
	for _, d := range storetest.Dialects() {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			p := newPlane(t, d)
			run := p.askingConversation(askScript)
			before := p.waitTask(run, "r2t0-ask-1", "awaiting_input")
			for _, key := range []string{"r2t0-ask-1", "r2t0"} {
				if status, _, code := p.resolve(run, key, `{"content":"nul \u0000 here"}`); status != 422 || code != "result_unstorable" {
					t.Fatalf("unstorable answer at %s: %d %s", key, status, code)
				}
				after := p.task(run, "r2t0-ask-1")
				if after.Task.Status != "awaiting_input" || after.Task.Error != nil || after.Task.Output != nil ||
					deref(after.Task.DeadlineAt) != deref(before.Task.DeadlineAt) {
					t.Fatalf("ask after the refusal at %s: %s", key, after.Raw)
				}
			}
			if call := p.task(run, "r2t0"); call.Task.Status != "running" {
				t.Fatalf("ask call after the refusal %s", call.Raw)
			}
			r, err := p.admin.Run(p.ctx, "default", run)
			if err != nil || r.Run.Status != "running" || len(r.Run.Attention) != 1 || r.Run.Attention[0].Reason != "awaiting_human" {
				t.Fatalf("run after the refusal: %s %v", r.Raw, err)
			}
			inboxAsk(t, p.admin, run) // still on the author's inbox
			res, err := p.admin.Resolve(p.ctx, "default", run, "r2t0-ask-1", json.RawMessage(`{"content":"staging"}`))
			if err != nil || !res.Applied || res.Task.Status != "completed" {
				t.Fatalf("the answer after the refusal: %v %s", err, res.Raw)
			}
			p.waitRunStatus(run, "completed")
		})
	}
}

// branchBrief is a background branch's prompt: its round 1 tries to delegate again (born
// unknown_tool, since branches cannot delegate) and asks, so the test decides when it settles.
const branchBrief = "Look into the flaky build and report what you find there.\n!mock\nround 1\n" +
	`call delegate_task {"prompt":"deeper"}` + "\n" + `call ask {"prompt":"Go on?"}` + "\nround 2\nsay branch done"

// TestBackgroundBranch is scenario 25: a detached delegate_task completes at once with its
// receipt; its branch runs off the mainline, cannot delegate, and its settled result is read by
// the next mainline round as a <task_result>; a canceled branch is read as canceled.
func TestBackgroundBranch(t *testing.T) {
	t.Parallel()
	for _, d := range storetest.Dialects() {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			p := newPlane(t, d)
			script := mockScript("Delegate.", line("delegate_task", map[string]any{"prompt": branchBrief}), "say main done", "say woke")
			run := p.graphRun(script)

			call := p.waitTask(run, "r2t0", "completed")
			receipt := `Task r2t0 started in the background. Its result will reach you later as a <task_result task="r2t0"> message, which is not from the person.` +
				"\n" + `Task reference: run_public_id="` + run + `", task="r2t0"`
			if deref(call.Task.Output) != receipt || deref(call.Task.IsError) || deref(call.Task.Title) != "delegated task r2t0" ||
				call.Task.StructuredContent == nil || string(*call.Task.StructuredContent) != `{"run_public_id":"`+run+`","task":"r2t0"}` {
				t.Fatalf("delegate_task call %s", call.Raw)
			}
			branch := p.waitTask(run, "r2t0-model-1", "completed")
			if branch.Task.Mainline || branch.Task.Kind != "model_task" || branch.Task.Origin != "kernel" {
				t.Fatalf("branch %s", branch.Raw)
			}
			// The branch's own delegate_task is born unknown_tool.
			inner := p.waitTask(run, "r2t0-r2t0", "failed")
			if inner.Task.Error == nil || inner.Task.Error.Key != "unknown_tool" {
				t.Fatalf("the branch's delegate_task %s", inner.Raw)
			}
			var decl []map[string]any
			_ = json.Unmarshal(branch.Task.ToolDefinitions, &decl)
			if strings.Contains(string(branch.Task.ToolDefinitions), `"name":"delegate_task"`) || len(decl) == 0 {
				t.Fatalf("branch declaration %s", branch.Task.ToolDefinitions)
			}
			// The mainline's final round answers while the branch waits on its question.
			eventually(t, 30*time.Second, "the mainline's round 2", func() bool {
				return deref(p.task(run, "r2").Task.Output) == "main done"
			})
			if r, _ := p.admin.Run(p.ctx, "default", run); r.Run.Status != "running" {
				t.Fatalf("run with an unsettled turn-lifetime branch: %s", r.Run.Status)
			}
			p.waitTask(run, "r2t0-r2t1-ask-1", "awaiting_input")
			if _, err := p.admin.Resolve(p.ctx, "default", run, "r2t0-r2t1", json.RawMessage(`{"content":"yes"}`)); err != nil {
				t.Fatal(err)
			}
			done := p.waitRunStatus(run, "completed")
			if deref(done.Answer) != "woke" || done.DeliverableTaskKey != "r3" {
				t.Fatalf("run %s %q", done.DeliverableTaskKey, deref(done.Answer))
			}
			// The branch's round 2 read its refused delegation.
			if es := p.sealedEntries(run, "r2t0-r2"); !strings.Contains(toolEntry(t, es, "mock_r1_0"), `"is_error":true,"content":[{"type":"text","text":"<tool_use_error>The tool call could not run. (unknown_tool)`) {
				t.Fatalf("the branch read %s", toolEntry(t, es, "mock_r1_0"))
			}
			entries := p.sealedEntries(run, "r3")
			result := "<task_result task=\"r2t0\" status=\"completed\">\n<prompt>" + promptHead(branchBrief) + "</prompt>\nbranch done\n</task_result>"
			if got := string(entries[len(entries)-1]); got != userText(result) {
				t.Fatalf("r3's last entry %s\nwant %s", got, userText(result))
			}

			// A second run: cancelling r2t0 cancels the branch; the mainline reads it canceled.
			second := p.graphRun(mockScript("Delegate.", line("delegate_task", map[string]any{"prompt": askBrief}), "say main done", "say woke"))
			p.waitTask(second, "r2t0-r2t0-ask-1", "awaiting_input")
			first, err := p.admin.CancelBranch(p.ctx, "default", second, "r2t0")
			if err != nil || first.Task.Key != "r2t0-model-1" {
				t.Fatalf("cancel: %v %s", err, first.Raw)
			}
			for _, key := range []string{"r2t0-r2", "r2t0-r2t0", "r2t0-r2t0-ask-1"} {
				if tk := p.task(second, key); tk.Task.Status != "canceled" || tk.Task.Error == nil || tk.Task.Error.Key != "task_canceled" {
					t.Fatalf("%s after the cancel: %s", key, tk.Raw)
				}
			}
			p.waitRunStatus(second, "completed")
			entries = p.sealedEntries(second, "r3")
			canceled := envelope("r2t0", "canceled", askBrief, "error: task_canceled")
			if got := string(entries[len(entries)-1]); got != userText(canceled) {
				t.Fatalf("r3's last entry %s\nwant %s", got, userText(canceled))
			}
		})
	}
}
