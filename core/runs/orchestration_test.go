package runs_test

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/nexuskernel/nexus/core/kernel"
	"github.com/nexuskernel/nexus/core/runs"
	"github.com/nexuskernel/nexus/core/runs/runstest"
	"github.com/nexuskernel/nexus/core/store"
	"github.com/nexuskernel/nexus/core/store/storetest"
)

// branchBrief is a branch's prompt: a short brief and the branch's own script. Nested scripts
// never use {{…}} substitutions, which the calling round's mock would expand.
const branchBrief = "Count notes.\n!mock\nround 1\ncall memory_ls {}\ncall delegate_task {\"prompt\":\"deeper\"}\nround 2\nsay done"

// TestWaitedDelegation: a waited delegate_task places C-model-1 off the mainline with an empty
// context and the caller's tools minus delegate_task; the branch numbers its own rounds and
// calls (C-r2, C-r2t0), a guessed delegate_task inside it fails unknown_tool, and the call
// settles in the branch's last round's transaction with the branch's envelope, framed with the
// call's key, which the continuation reads as the paired result.
func TestWaitedDelegation(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		h := newHarness(t, s, harnessOptions{})
		main := script("Delegate.",
			[]string{call("delegate_task", map[string]any{"prompt": branchBrief, "wait": true})},
			[]string{"say main read: {{last_result}}"})
		id := h.create(modelStep(main, graphTools)).Run.PublicID
		h.drain()
		r := h.run(id)
		var keys []string
		for _, tk := range r.Tasks {
			keys = append(keys, tk.Key)
		}
		want := []string{"s1-model-1", "r2t0", "r2", "r2t0-model-1", "r2t0-r2t0", "r2t0-r2t1", "r2t0-r2"}
		if diff := cmp.Diff(want, keys); diff != "" {
			t.Fatalf("keys (-want +got):\n%s", diff)
		}
		branch := h.task(id, "r2t0-model-1")
		if branch.Mainline || branch.Origin != runs.OriginKernel || branch.OnFailure != runs.OnFailureAbsorb ||
			branch.Visibility != runs.VisibilityVisible || branch.Detached || deref(branch.ParentKey) != "r2t0" ||
			branch.Lifetime != runs.LifetimeTurn || branch.Wake != runs.WakeAuto || deref(branch.Prompt) != branchBrief {
			t.Fatalf("branch row %+v", branch)
		}
		var defs []struct {
			Function struct {
				Name string `json:"name"`
			} `json:"function"`
		}
		if err := json.Unmarshal(branch.ToolDefinitions, &defs); err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, d := range defs {
			names = append(names, d.Function.Name)
		}
		if diff := cmp.Diff([]string{"ask", "memory_ls", "wait"}, names); diff != "" {
			t.Errorf("branch tools (-want +got):\n%s", diff)
		}
		req := readRequest(t, h, id, "r2t0-model-1")
		if len(req.Entries) != 1 || req.Entries[0].Role != "user" || req.Entries[0].Content[0].Text != branchBrief {
			t.Errorf("branch request is not an empty context: %+v", req.Entries)
		}
		if g := h.task(id, "r2t0-r2t1"); g.Status != runs.StatusFailed || g.Error.Key != runs.KeyUnknownTool {
			t.Errorf("a guessed delegate_task in a branch: %s %+v", g.Status, g.Error)
		}
		c := h.task(id, "r2t0")
		// The head quotes the brief's first 80 characters (it is ASCII), marked as cut.
		envelope := "<task_result task=\"r2t0\" status=\"completed\">\n<prompt>" + branchBrief[:80] + "…</prompt>\ndone\n</task_result>"
		if c.Status != runs.StatusCompleted || deref(c.Output) != envelope || deref(c.IsError) || deref(c.Title) != "delegated task r2t0" ||
			c.StructuredContent != nil || c.AwaitingChild != nil {
			t.Fatalf("waited call %+v output %q", c, deref(c.Output))
		}
		if r.Status != runs.RunCompleted || deref(r.Answer) != "main read: "+envelope {
			t.Fatalf("run %s answer %q", r.Status, deref(r.Answer))
		}
	})
}

// quickBrief is a branch that answers at once.
const quickBrief = "Work.\n!mock\nround 1\nsay branch result"

// quickEnvelope is quickBrief's result as its reader sees it under call key r2t0.
const quickEnvelope = "<task_result task=\"r2t0\" status=\"completed\">\n<prompt>" + quickBrief + "</prompt>\nbranch result\n</task_result>"

// TestDetachedDelegation: a detached delegate_task answers at once with its receipt and task
// reference; the branch's answer is an unpaired result. On a standalone run (turn lifetime) a
// result that settles after the mainline's final round plants a wake round r<n> that reads it
// and becomes the deliverable (auto), or leaves the answer as it is (passive); one that settles
// while the mainline still works is read by the next mainline round sealed after it.
func TestDetachedDelegation(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		h := newHarness(t, s, harnessOptions{})

		// Auto wake: r2 answers first (claim order), the branch after, and r3 wakes.
		main := script("Delegate.",
			[]string{call("delegate_task", map[string]any{"prompt": quickBrief})},
			[]string{"say main done"},
			[]string{"say woke: {{last_result}}"})
		id := h.create(modelStep(main, graphTools)).Run.PublicID
		h.drain()
		c := h.task(id, "r2t0")
		receipt := "Task r2t0 started in the background. Its result will reach you later as a <task_result task=\"r2t0\"> message, which is not from the person.\n" +
			"Task reference: run_public_id=\"" + id + "\", task=\"r2t0\""
		if c.Status != runs.StatusCompleted || deref(c.Output) != receipt || deref(c.IsError) || deref(c.Title) != "delegated task r2t0" ||
			string(deref(c.StructuredContent)) != `{"run_public_id":"`+id+`","task":"r2t0"}` {
			t.Fatalf("receipt %+v output %q structured %s", c, deref(c.Output), deref(c.StructuredContent))
		}
		if b := h.task(id, "r2t0-model-1"); !b.Detached || b.Lifetime != runs.LifetimeTurn || b.ResultDeliveredAt == nil {
			t.Fatalf("branch %+v", b)
		}
		wake := h.task(id, "r3")
		if !wake.Mainline || wake.Origin != runs.OriginKernel || wake.Prompt != nil || !cmp.Equal(wake.After, []string{"r2t0-model-1"}) {
			t.Fatalf("wake round %+v", wake)
		}
		r := h.run(id)
		if r.Status != runs.RunCompleted || r.DeliverableTaskKey != "r3" || deref(r.Answer) != "woke: "+quickEnvelope {
			t.Fatalf("run %s deliverable %s answer %q", r.Status, r.DeliverableTaskKey, deref(r.Answer))
		}
		req := readRequest(t, h, id, "r3")
		last := req.Entries[len(req.Entries)-1]
		prev := req.Entries[len(req.Entries)-2]
		if last.Role != "user" || last.Content[0].Text != quickEnvelope || prev.Role != "assistant" || prev.Content[0].Text != "main done" {
			t.Fatalf("wake request ends %+v, %+v", prev, last)
		}

		// Passive wake: nothing is planted, the run keeps its answer, the result stays readable.
		passive := script("Delegate.",
			[]string{call("delegate_task", map[string]any{"prompt": quickBrief, "wake": "passive"})},
			[]string{"say main done"})
		id = h.create(modelStep(passive, graphTools)).Run.PublicID
		h.drain()
		r = h.run(id)
		if r.Status != runs.RunCompleted || r.DeliverableTaskKey != "r2" || deref(r.Answer) != "main done" {
			t.Fatalf("passive: run %s deliverable %s answer %q", r.Status, r.DeliverableTaskKey, deref(r.Answer))
		}
		if b := h.task(id, "r2t0-model-1"); b.Status != runs.StatusCompleted || deref(b.Output) != "branch result" || b.ResultDeliveredAt != nil {
			t.Fatalf("passive branch %+v", b)
		}

		// Settled while the mainline works: r3 reads it after its own call's result.
		working := script("Delegate.",
			[]string{call("delegate_task", map[string]any{"prompt": quickBrief}), "call memory_ls {}"},
			[]string{"call memory_ls {}"},
			[]string{"say read: {{last_result}}"})
		id = h.create(modelStep(working, graphTools)).Run.PublicID
		h.drain()
		r = h.run(id)
		if r.Status != runs.RunCompleted || r.DeliverableTaskKey != "r3" || deref(r.Answer) != "read: "+quickEnvelope {
			t.Fatalf("working: run %s deliverable %s answer %q", r.Status, r.DeliverableTaskKey, deref(r.Answer))
		}
		req = readRequest(t, h, id, "r3")
		if n := len(req.Entries); req.Entries[n-1].Content[0].Text != quickEnvelope || req.Entries[n-2].Role != "tool" {
			t.Fatalf("r3 request ends %+v", req.Entries[n-2:])
		}
	})
}

const askBrief = runstest.AskBrief

// TestWaitTool: wait observes a task's final work without owning it: a branch still working
// is awaited through C-wait-1 (kernel-held, hidden, its spec on the task read) and the call
// settles with the branch's envelope in the branch's settling transaction; a settled target
// answers at once without an await; the refusals are error results; the wait's own deadline
// ends only the observation (timed_out, await_timeout), and the target's result is still
// delivered.
func TestWaitTool(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		h := newHarness(t, s, harnessOptions{})
		main := script("Delegate, then wait.",
			[]string{call("delegate_task", map[string]any{"prompt": quickBrief})},
			[]string{call("wait", map[string]any{"task": "r2t0"})},
			[]string{"say waited: {{last_result}}"})
		id := h.create(modelStep(main, graphTools)).Run.PublicID
		h.drain()
		w := h.task(id, "r3t0")
		if w.Status != runs.StatusCompleted || deref(w.Output) != quickEnvelope || deref(w.IsError) || deref(w.Title) != "wait for r2t0" {
			t.Fatalf("wait call %+v output %q", w, deref(w.Output))
		}
		aw := h.task(id, "r3t0-wait-1")
		if aw.Kind != runs.KindAwait || deref(aw.AwaitKind) != runs.AwaitWait || aw.Visibility != runs.VisibilityHidden ||
			aw.Status != runs.StatusCompleted || string(aw.Wait) != `{"run_public_id":"`+id+`","task":"r2t0","timeout_ms":3600000}` ||
			deref(aw.TimeoutMS) != 3600000 || string(aw.ResolvedBy) != `{"kind":"kernel"}` {
			t.Fatalf("wait await %+v wait %s resolved_by %s", aw, aw.Wait, aw.ResolvedBy)
		}
		if r := h.run(id); r.Status != runs.RunCompleted || deref(r.Answer) != "waited: "+quickEnvelope {
			t.Fatalf("run %s answer %q", r.Status, deref(r.Answer))
		}

		// The refusals: arguments in parameter order, then the target's checks.
		other := "01900000-0000-7000-8000-0000000000ff"
		calls := []string{
			call("wait", map[string]any{"task": "r2t0"}),
			call("wait", map[string]any{"task": "s1-model-1"}),
			call("wait", map[string]any{"task": "r2"}),
			call("wait", map[string]any{"task": "nope"}),
			call("wait", map[string]any{"task": "s1-model-1", "run_public_id": id}),
			call("wait", map[string]any{"task": "s1-model-1", "run_public_id": other}),
			call("wait", map[string]any{}),
			call("wait", map[string]any{"task": "  "}),
			call("wait", map[string]any{"task": "x", "run_public_id": "not-a-uuid"}),
			call("wait", map[string]any{"task": "x", "timeout_ms": 0}),
			call("wait", map[string]any{"task": "x", "timeout_ms": 604800001}),
			call("wait", map[string]any{"task": "x", "timeout_ms": "5"}),
		}
		refusals := script("Refusals.", calls, []string{"say done"})
		rid := h.create(modelStep(refusals, graphTools)).Run.PublicID
		h.drain()
		want := []struct{ word, detail string }{
			{"wait_cycle", `task "r2t0" is this call or one of its ancestors, so waiting on it could never end.`},
			{"wait_cycle", `task "s1-model-1" is this call or one of its ancestors, so waiting on it could never end.`},
			{"wait_cycle", `task "r2" is this call or one of its ancestors, so waiting on it could never end.`},
			{"wait_target_not_found", `no task "nope" in run ` + rid + ` that this run can observe.`},
			{"wait_target_not_found", `no task "s1-model-1" in run ` + id + ` that this run can observe.`},
			{"wait_target_not_found", `no task "s1-model-1" in run ` + other + ` that this run can observe.`},
			{"invalid_arguments", "task is required."},
			{"invalid_arguments", "task is empty."},
			{"invalid_arguments", "run_public_id must be a UUID."},
			{"invalid_arguments", "timeout_ms must be an integer from 1 to 604800000."},
			{"invalid_arguments", "timeout_ms must be an integer from 1 to 604800000."},
			{"invalid_arguments", "timeout_ms must be an integer from 1 to 604800000."},
		}
		for i, w := range want {
			k := "r2t" + strconv.Itoa(i)
			tk := h.task(rid, k)
			if tk.Status != runs.StatusCompleted || !deref(tk.IsError) || deref(tk.Output) != w.word+": "+w.detail ||
				deref(tk.Title) != "wait refused" || string(deref(tk.StructuredContent)) != errorStructured(w.word, w.detail) {
				t.Errorf("%s: %s %q title %q structured %s", k, tk.Status, deref(tk.Output), deref(tk.Title), deref(tk.StructuredContent))
			}
		}

		// A target already settled answers at once, without an await.
		done := script("Read, then wait.", []string{"call memory_ls {}"}, []string{call("wait", map[string]any{"task": "r2t0"})}, []string{"say ok"})
		did := h.create(modelStep(done, graphTools)).Run.PublicID
		h.drain()
		w = h.task(did, "r3t0")
		envelope := "<task_result task=\"r2t0\" status=\"completed\">\n<call>memory_ls {}</call>\nNo memory documents.\n</task_result>"
		if w.Status != runs.StatusCompleted || deref(w.Output) != envelope || deref(w.Title) != "wait for r2t0" || w.AwaitingChild != nil {
			t.Fatalf("wait on a settled target %+v output %q", w, deref(w.Output))
		}
		if _, err := h.conv.ReadTask(h.ctx, h.actor, did, "r3t0-wait-1"); !isCode(err, "not_found") {
			t.Fatalf("an await was placed for a settled target: %v", err)
		}
	})
}

// errorStructured is an error result's structured_content, keys in the documented order.
func errorStructured(word, detail string) string {
	b, err := json.Marshal(struct {
		Error struct {
			Key    string `json:"key"`
			Detail string `json:"detail"`
		} `json:"error"`
	}{Error: struct {
		Key    string `json:"key"`
		Detail string `json:"detail"`
	}{word, detail}})
	if err != nil {
		panic(err)
	}
	return string(b)
}

// TestWaitTimeout: a wait's own deadline ends only the observation. The await settles
// timed_out (await_timeout) with the sentence saying the target keeps running, the call
// carries it and the continuation reads it as a <tool_use_error>; the branch goes on, and once
// a person answers its question its result is still delivered, by a wake round.
func TestWaitTimeout(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		h := newHarness(t, s, harnessOptions{})
		main := script("Delegate, then wait briefly.",
			[]string{call("delegate_task", map[string]any{"prompt": askBrief})},
			[]string{call("wait", map[string]any{"task": "r2t0", "timeout_ms": 1000})},
			[]string{"say gave up: {{last_result}}"},
			[]string{"say late: {{last_result}}"})
		id := h.create(modelStep(main, graphTools)).Run.PublicID
		h.drain()
		if aw := h.task(id, "r3t0-wait-1"); aw.Status != runs.StatusDispatched || deref(aw.TimeoutMS) != 1000 {
			t.Fatalf("wait await %+v", aw)
		}
		h.clock.Advance(2 * time.Second)
		h.sweep()
		h.drain()
		detail := `stopped waiting for task "r2t0" after 1000 ms; it keeps running and its result is still delivered.`
		for _, k := range []string{"r3t0-wait-1", "r3t0"} {
			tk := h.task(id, k)
			if tk.Status != runs.StatusTimedOut || *tk.Error != (runs.TaskError{Key: runs.KeyAwaitTimeout, Detail: detail}) {
				t.Fatalf("%s: %s %+v", k, tk.Status, tk.Error)
			}
		}
		if r := h.task(id, "r3"); deref(r.Output) != "gave up: "+runs.ToolUseError(runs.KeyAwaitTimeout, detail) {
			t.Fatalf("r3 read %q", deref(r.Output))
		}
		if b := h.task(id, "r2t0-model-1"); b.Status != runs.StatusCompleted {
			t.Fatalf("the branch's first round %s", b.Status)
		}
		if r := h.run(id); r.Status != runs.RunRunning {
			t.Fatalf("run %s while its branch still asks", r.Status)
		}
		res := h.resolve(id, "r2t0-r2t0-ask-1", `{"content":"yes"}`)
		if !res.Applied {
			t.Fatal("the answer was not applied")
		}
		h.drain()
		if a := h.task(id, "r2t0-r2t0"); deref(a.Output) != `<answer task="r2t0-r2t0-ask-1">yes</answer>` {
			t.Fatalf("the branch's ask call %q", deref(a.Output))
		}
		late := "<task_result task=\"r2t0\" status=\"completed\">\n<prompt>" + askBrief + "</prompt>\nasked\n</task_result>"
		if r := h.run(id); r.Status != runs.RunCompleted || r.DeliverableTaskKey != "r4" || deref(r.Answer) != "late: "+late {
			t.Fatalf("run %s deliverable %s answer %q", r.Status, r.DeliverableTaskKey, deref(r.Answer))
		}
	})
}

// TestAskTool: ask parks one question addressed to the person the run acts for, listed on
// that member's inbox with its options; the run stays running with attention awaiting_human;
// the resolution door answers it by the await's key or the call's, and the call settles with
// the <answer> envelope in the answer's transaction. A second answer is idle.
func TestAskTool(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		h := newHarness(t, s, harnessOptions{})
		main := script("Ask.",
			[]string{call("ask", map[string]any{"prompt": "Which database?", "options": []string{"staging", "production"}})},
			[]string{"say {{last_result}}"})
		id := h.create(modelStep(main, graphTools)).Run.PublicID
		h.drain()
		c := h.task(id, "r2t0")
		if c.Status != runs.StatusRunning || deref(c.AwaitingChild) != "r2t0-ask-1" || deref(c.Title) != "question for the person" {
			t.Fatalf("ask call %+v", c)
		}
		aw := h.task(id, "r2t0-ask-1")
		deadline := h.clock.Now().Add(24 * time.Hour).UTC().Format("2006-01-02T15:04:05.000Z")
		if aw.Kind != runs.KindAwait || deref(aw.AwaitKind) != runs.AwaitAsk || aw.Status != runs.StatusAwaitingInput ||
			aw.Visibility != runs.VisibilityHidden || aw.OnFailure != runs.OnFailureAbsorb || deref(aw.Prompt) != "Which database?" ||
			string(aw.Options) != `["staging","production"]` || aw.Multi == nil || *aw.Multi || deref(aw.DeadlineAt) != deadline ||
			string(aw.AddressedTo) != `{"role":"member","member":{"kind":"user","public_id":"`+h.actor.PublicID+`"}}` {
			t.Fatalf("ask await %+v options %s addressed %s", aw, aw.Options, aw.AddressedTo)
		}
		r := h.run(id)
		if r.Status != runs.RunRunning || len(r.Attention) != 1 || r.Attention[0].Reason != runs.ReasonAwaitingHuman ||
			!cmp.Equal(r.Attention[0].TaskKeys, []string{"r2t0-ask-1"}) {
			t.Fatalf("run %s attention %+v", r.Status, r.Attention)
		}
		page, err := h.conv.Inbox(h.ctx, "user", h.actor.PublicID, "", 50)
		if err != nil {
			t.Fatal(err)
		}
		if len(page.Tasks) != 1 {
			t.Fatalf("inbox %+v", page.Tasks)
		}
		row, _ := json.Marshal(page.Tasks[0])
		wantRow := `{"kind":"ask","run_public_id":"` + id + `","workspace_public_id":"` + h.actor.WorkspacePublicID +
			`","conversation_public_id":null,"task_key":"r2t0-ask-1","call_key":"r2t0","prompt":"Which database?",` +
			`"options":["staging","production"],"multi":false,"created_at":"` + aw.CreatedAt + `","deadline_at":"` + deadline + `"}`
		if string(row) != wantRow {
			t.Fatalf("inbox row\n got %s\nwant %s", row, wantRow)
		}
		if other, _ := h.conv.Inbox(h.ctx, "user", h.member("li").PublicID, "", 50); len(other.Tasks) != 0 {
			t.Fatalf("another member's inbox lists %+v", other.Tasks)
		}

		res := h.resolve(id, "r2t0", `{"content":"Use <answer> staging.","structured_content":{"choice":"staging"}}`)
		if !res.Applied || res.Task.Key != "r2t0-ask-1" || res.Task.Status != runs.StatusCompleted ||
			string(res.Task.ResolvedBy) != `{"kind":"user","public_id":"`+h.actor.PublicID+`"}` ||
			string(deref(res.Task.StructuredContent)) != `{"choice":"staging"}` {
			t.Fatalf("resolution %+v", res.Task)
		}
		answer := `<answer task="r2t0-ask-1">Use &lt;answer> staging.</answer>`
		if c := h.task(id, "r2t0"); c.Status != runs.StatusCompleted || deref(c.Output) != answer || deref(c.IsError) {
			t.Fatalf("ask call after the answer %+v %q", c, deref(c.Output))
		}
		again := h.resolve(id, "r2t0-ask-1", `{"content":"production"}`)
		if again.Applied || deref(again.Task.Output) != "Use <answer> staging." {
			t.Fatalf("second answer %+v", again.Task)
		}
		h.drain()
		if r := h.run(id); r.Status != runs.RunCompleted || deref(r.Answer) != answer {
			t.Fatalf("run %s answer %q", r.Status, deref(r.Answer))
		}
		if page, _ := h.conv.Inbox(h.ctx, "user", h.actor.PublicID, "", 50); len(page.Tasks) != 0 {
			t.Fatalf("an answered ask is still listed: %+v", page.Tasks)
		}
	})
}

// TestAskExpiryAndDecline: an unanswered ask expires at 24 hours (the sweeper, or the door
// before it: the deadline wins and the late answer is discarded), and a declined one settles
// failed await_failed; the call carries the failure and the continuation reads it as a
// <tool_use_error>. The argument refusals are error results.
func TestAskExpiryAndDecline(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		h := newHarness(t, s, harnessOptions{})
		asking := script("Ask.", []string{call("ask", map[string]any{"prompt": "Ship?"})}, []string{"say {{last_result}}"})

		swept := h.create(modelStep(asking, graphTools)).Run.PublicID
		h.drain()
		h.clock.Advance(24 * time.Hour)
		h.sweep()
		h.drain()
		aw, c := h.task(swept, "r2t0-ask-1"), h.task(swept, "r2t0")
		if aw.Status != runs.StatusTimedOut || aw.Error.Key != runs.KeyAwaitTimeout || c.Status != runs.StatusTimedOut || *c.Error != *aw.Error {
			t.Fatalf("expired ask: await %s %+v, call %s %+v", aw.Status, aw.Error, c.Status, c.Error)
		}
		if r := h.run(swept); r.Status != runs.RunCompleted || deref(r.Answer) != runs.ToolUseError(runs.KeyAwaitTimeout, aw.Error.Detail) {
			t.Fatalf("run %s answer %q", r.Status, deref(r.Answer))
		}
		if res := h.resolve(swept, "r2t0-ask-1", `{"content":"late"}`); res.Applied || res.Task.Status != runs.StatusTimedOut {
			t.Fatalf("an answer after expiry %+v", res.Task)
		}

		late := h.create(modelStep(asking, graphTools)).Run.PublicID
		h.drain()
		h.clock.Advance(24 * time.Hour)
		if res := h.resolve(late, "r2t0", `{"content":"just in time?"}`); res.Applied || res.Task.Status != runs.StatusTimedOut ||
			res.Task.Error.Key != runs.KeyAwaitTimeout || deref(res.Task.Output) != "" {
			t.Fatalf("the door before the sweeper: %+v", res.Task)
		}

		declined := h.create(modelStep(asking, graphTools)).Run.PublicID
		h.drain()
		res := h.resolve(declined, "r2t0-ask-1", `{"content":"I would rather not say.","outcome":"failed"}`)
		if !res.Applied || res.Task.Status != runs.StatusFailed || *res.Task.Error != (runs.TaskError{Key: runs.KeyAwaitFailed, Detail: "I would rather not say."}) {
			t.Fatalf("declined %+v %+v", res.Task, res.Task.Error)
		}
		h.drain()
		if c := h.task(declined, "r2t0"); c.Status != runs.StatusFailed || c.Error.Key != runs.KeyAwaitFailed {
			t.Fatalf("declined call %s %+v", c.Status, c.Error)
		}

		calls := []string{
			call("ask", map[string]any{"question": "Deploy now?"}),
			call("ask", map[string]any{}),
			call("ask", map[string]any{"prompt": 5}),
			call("ask", map[string]any{"prompt": " "}),
			call("ask", map[string]any{"prompt": "Which?", "options": "a"}),
			call("ask", map[string]any{"prompt": "Which?", "options": []any{"a", 1}}),
			call("ask", map[string]any{"prompt": "Which?", "multi": "yes"}),
			call("ask", map[string]any{"prompt": "Open?", "options": []string{}, "multi": true}),
		}
		id := h.create(modelStep(script("Refusals.", calls, []string{"say done"}), graphTools)).Run.PublicID
		h.drain()
		sentences := []string{
			"question is not a parameter; the parameters are prompt, options, multi.",
			"prompt is required.",
			"prompt must be a string.",
			"prompt is empty.",
			"options must be an array of strings.",
			"options must be an array of strings.",
			"multi must be true or false.",
		}
		for i, sentence := range sentences {
			tk := h.task(id, "r2t"+strconv.Itoa(i))
			if !deref(tk.IsError) || deref(tk.Output) != "invalid_arguments: "+sentence || deref(tk.Title) != "ask refused" ||
				string(deref(tk.StructuredContent)) != errorStructured("invalid_arguments", sentence) {
				t.Errorf("r2t%d: %q %q %s", i, deref(tk.Output), deref(tk.Title), deref(tk.StructuredContent))
			}
		}
		open := h.task(id, "r2t7-ask-1")
		if open.Options != nil || open.Multi == nil || !*open.Multi || open.Status != runs.StatusAwaitingInput {
			t.Fatalf("an open question with [] options: %+v %s", open, open.Options)
		}
	})
}

// graphProfile is an agent profile that declares the orchestration tools.
const graphProfile = `{"kernel_tools":["nexus.graph.delegate_task","nexus.graph.wait","nexus.human.ask","nexus.memory.ls"],"approval_mode":"bypass","approval_rules":[]}`

func graphConversation(t *testing.T, s *store.Store) (*harness, string) {
	t.Helper()
	return conversationHarness(t, s, graphProfile)
}

// TestConversationLifetimeDelivery: on a conversation-hosted turn a delegation defaults to
// conversation lifetime and auto wake. The turn completes as soon as its mainline answers,
// while its run stays running for the branch; the branch's late result is posted as a turn
// authored by the kernel whose input is the envelope, and that turn's round reads it.
func TestConversationLifetimeDelivery(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		h, conv := graphConversation(t, s)
		msg := script("Delegate.",
			[]string{call("delegate_task", map[string]any{"prompt": quickBrief})},
			[]string{"say turn one done"},
			[]string{"say kernel turn read: {{last_result}}"})
		first := h.post(conv, msg, "")
		h.drain()
		turns := h.turns(conv)
		if len(turns) != 2 {
			t.Fatalf("%d turns, want the message's and the kernel's", len(turns))
		}
		one, two := turns[0], turns[1]
		if one.Status != runs.TurnCompleted || one.Answer == nil || one.Answer.Text != "turn one done" || one.Answer.TaskKey != "r2" {
			t.Fatalf("first turn %+v", one)
		}
		branch := h.task(first.Run.PublicID, "r2t0-model-1")
		if branch.Lifetime != runs.LifetimeConversation || branch.Wake != runs.WakeAuto || !branch.Detached {
			t.Fatalf("branch lifetime %s wake %s detached %v", branch.Lifetime, branch.Wake, branch.Detached)
		}
		if two.Author.Kind != "kernel" || two.Author.PublicID != "" || two.Input.Text != quickEnvelope || two.Status != runs.TurnCompleted {
			t.Fatalf("kernel turn %+v", two)
		}
		if two.Answer == nil || two.Answer.Text != "kernel turn read: "+quickEnvelope {
			t.Fatalf("kernel turn answer %+v", two.Answer)
		}
		if r := h.run(first.Run.PublicID); r.Status != runs.RunCompleted || deref(r.Answer) != "turn one done" {
			t.Fatalf("first run %s answer %q", r.Status, deref(r.Answer))
		}
		kr := h.run(two.RunPublicID)
		if kr.CreatedBy.Kind != "kernel" || kr.Status != runs.RunCompleted {
			t.Fatalf("kernel turn's run %+v", kr)
		}
	})
}

// TestPassiveAndArchivedHolds: a conversation-lifetime result with passive wake, or one that
// settles after its conversation was archived, is held: no turn is posted, and the next turn's
// first round reads it before its own input. A question in a branch stays answerable on the
// originating run after its turn completed.
func TestPassiveAndArchivedHolds(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		h, conv := graphConversation(t, s)
		msg := script("Delegate quietly.",
			[]string{call("delegate_task", map[string]any{"prompt": quickBrief, "wake": "passive"})},
			[]string{"say quiet done"})
		first := h.post(conv, msg, "")
		h.drain()
		if turns := h.turns(conv); len(turns) != 1 || turns[0].Status != runs.TurnCompleted {
			t.Fatalf("turns after a passive delivery: %+v", turns)
		}
		if b := h.task(first.Run.PublicID, "r2t0-model-1"); b.Status != runs.StatusCompleted || b.ResultDeliveredAt != nil {
			t.Fatalf("held branch %+v", b)
		}
		next := h.post(conv, script("Next.", []string{"say next read: {{last_result}}"}), "")
		h.drain()
		if r := h.run(next.Run.PublicID); r.Status != runs.RunCompleted || deref(r.Answer) != "next read: "+quickEnvelope {
			t.Fatalf("next turn's run %s answer %q", r.Status, deref(r.Answer))
		}
		req := readRequest(t, h, next.Run.PublicID, "r1")
		n := len(req.Entries)
		if req.Entries[n-2].Content[0].Text != quickEnvelope || req.Entries[n-1].Content[0].Text != script("Next.", []string{"say next read: {{last_result}}"}) {
			t.Fatalf("the held delivery is not before the input: %+v", req.Entries[n-2:])
		}
		if b := h.task(first.Run.PublicID, "r2t0-model-1"); b.ResultDeliveredAt == nil {
			t.Fatal("the held delivery was not marked delivered")
		}

		// Archived meanwhile: the branch asks, the turn completes, the conversation is archived,
		// the person answers on the originating run, and the result is held.
		conv2 := h.conversation()
		msg = script("Delegate a question.",
			[]string{call("delegate_task", map[string]any{"prompt": askBrief})},
			[]string{"say asked in the background"})
		p := h.post(conv2, msg, "")
		h.drain()
		if turns := h.turns(conv2); turns[0].Status != runs.TurnCompleted {
			t.Fatalf("turn with a pending question: %s", turns[0].Status)
		}
		if r := h.run(p.Run.PublicID); r.Status != runs.RunRunning || r.Attention[0].Reason != runs.ReasonAwaitingHuman {
			t.Fatalf("run %s attention %+v", r.Status, r.Attention)
		}
		if _, err := h.conv.Archive(h.ctx, h.actor, conv2); err != nil {
			t.Fatal(err)
		}
		h.resolve(p.Run.PublicID, "r2t0-r2t0-ask-1", `{"content":"yes"}`)
		h.drain()
		if turns := h.turns(conv2); len(turns) != 1 {
			t.Fatalf("a turn was posted into an archived conversation: %+v", turns)
		}
		if r := h.run(p.Run.PublicID); r.Status != runs.RunCompleted {
			t.Fatalf("run %s", r.Status)
		}
		if b := h.task(p.Run.PublicID, "r2t0-r2"); b.Status != runs.StatusCompleted || b.ResultDeliveredAt != nil {
			t.Fatalf("held final round %+v", b)
		}
	})
}

// step claims and evaluates one runnable kernel row and returns its key.
func (h *harness) step() string {
	h.t.Helper()
	c, err := h.e.ClaimKernel(h.ctx)
	if err != nil || c == nil {
		h.t.Fatalf("step: %v %v", c, err)
	}
	if err := h.e.Evaluate(h.ctx, c); err != nil {
		h.t.Fatalf("evaluate %s: %v", c.Key, err)
	}
	return c.Key
}

// TestWaitedDelegationsInOneAnswer: several waited calls in one answer run concurrently and
// are each paired with their own branch, read in call order; an explicit model adds the
// [model: …] line naming the model the branch's final round ran on, or "not started" for a
// branch canceled before it ran.
func TestWaitedDelegationsInOneAnswer(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		h := newHarness(t, s, harnessOptions{})
		second := "Other.\n!mock\nround 1\nsay other result"
		main := script("Two at once.",
			[]string{call("delegate_task", map[string]any{"prompt": quickBrief, "wait": true, "model": "mock/text-only"}),
				call("delegate_task", map[string]any{"prompt": second, "wait": true})},
			[]string{"say {{last_result}}"})
		id := h.create(modelStep(main, graphTools)).Run.PublicID
		h.drain()
		one := quickEnvelope[:len(quickEnvelope)-len("\n</task_result>")] + "\n[model: requested mock/text-only, ran on mock/text-only]\n</task_result>"
		two := "<task_result task=\"r2t1\" status=\"completed\">\n<prompt>" + second + "</prompt>\nother result\n</task_result>"
		if c := h.task(id, "r2t0"); deref(c.Output) != one {
			t.Fatalf("first waited call %q", deref(c.Output))
		}
		if b := h.task(id, "r2t0-model-1"); deref(b.Model) != "mock/text-only" {
			t.Fatalf("the branch ran on %q", deref(b.Model))
		}
		if r := h.run(id); deref(r.Answer) != two {
			t.Fatalf("the continuation's last result is %q, want the second call's", deref(r.Answer))
		}
		req := readRequest(t, h, id, "r2")
		n := len(req.Entries)
		if req.Entries[n-2].Role != "tool" || req.Entries[n-2].Content[0].Text != one || req.Entries[n-1].Content[0].Text != two {
			t.Fatalf("tool entries out of call order: %+v", req.Entries[n-2:])
		}

		// Canceled before its first round was claimed: not started.
		early := script("Delegate.", []string{call("delegate_task", map[string]any{"prompt": quickBrief, "wait": true, "model": "mock/scripted"})},
			[]string{"say {{last_result}}"})
		id = h.create(modelStep(early, graphTools)).Run.PublicID
		if k := h.step(); k != "s1-model-1" {
			t.Fatalf("stepped %s", k)
		}
		if k := h.step(); k != "r2t0" {
			t.Fatalf("stepped %s", k)
		}
		if _, err := h.conv.CancelBranch(h.ctx, h.actor, id, "r2t0-model-1"); err != nil {
			t.Fatal(err)
		}
		want := "<task_result task=\"r2t0\" status=\"canceled\">\n<prompt>" + quickBrief + "</prompt>\nerror: task_canceled\n[model: requested mock/scripted, not started]\n</task_result>"
		if c := h.task(id, "r2t0"); c.Status != runs.StatusCompleted || !deref(c.IsError) || deref(c.Output) != want {
			t.Fatalf("call of a branch that never started: %s %q", c.Status, deref(c.Output))
		}
	})
}

// TestStopEndsObservations: a stop cancels the branches and awaits with the rest; a wait says
// that only its observation ended. A wait's clock is clamped to 24 hours while the task read
// keeps the authored timeout_ms.
func TestStopEndsObservations(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		h := newHarness(t, s, harnessOptions{})
		main := script("Delegate and wait long.",
			[]string{call("delegate_task", map[string]any{"prompt": askBrief}), call("wait", map[string]any{"task": "r2t0", "timeout_ms": 604800000})},
			[]string{"say done"})
		id := h.create(modelStep(main, graphTools)).Run.PublicID
		h.drain()
		aw := h.task(id, "r2t1-wait-1")
		deadline := h.clock.Now().Add(24 * time.Hour).UTC().Format("2006-01-02T15:04:05.000Z")
		if deref(aw.TimeoutMS) != 86400000 || deref(aw.DeadlineAt) != deadline || !strings.Contains(string(aw.Wait), `"timeout_ms":604800000`) {
			t.Fatalf("clamped wait %+v %s", aw, aw.Wait)
		}
		if _, err := h.conv.StopRun(h.ctx, h.actor, id, true); err != nil {
			t.Fatal(err)
		}
		detail := kernel.WaitCanceledDetail("r2t0")
		for _, k := range []string{"r2t1", "r2t1-wait-1"} {
			if tk := h.task(id, k); tk.Status != runs.StatusCanceled || *tk.Error != (runs.TaskError{Key: runs.KeyRunCanceled, Detail: detail}) {
				t.Errorf("%s: %s %+v", k, tk.Status, tk.Error)
			}
		}
		for _, k := range []string{"r2t0-r2t0", "r2t0-r2t0-ask-1", "r2t0-r2"} {
			if tk := h.task(id, k); tk.Status != runs.StatusCanceled || tk.Error.Key != runs.KeyRunCanceled {
				t.Errorf("%s: %s %+v", k, tk.Status, tk.Error)
			}
		}
		if r := h.run(id); r.Status != runs.RunCanceled || len(r.Attention) != 0 {
			t.Fatalf("run %s attention %+v", r.Status, r.Attention)
		}
	})
}

// TestAskAddressee: a run an agent created asks the agent's steward; the steward's inbox lists
// the question and so does the agent's, which lists every ask of the runs it created or
// answers; the inbox pages with an opaque cursor.
func TestAskAddressee(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		h := newHarness(t, s, harnessOptions{})
		steward := h.member("li")
		a := &store.Agent{PublicID: store.NewPublicID(), WorkspaceID: h.actor.WorkspaceID, Handle: "bot", DisplayName: "Bot", StewardUserID: steward.ID}
		if err := s.Write(h.ctx, func(tx *store.Tx) error { return store.InsertAgent(h.ctx, tx, a) }); err != nil {
			t.Fatal(err)
		}
		bot := &runs.Actor{Kind: "agent", ID: a.ID, PublicID: a.PublicID, Role: "agent", WorkspaceID: h.actor.WorkspaceID,
			WorkspacePublicID: h.actor.WorkspacePublicID}
		asking := script("Ask twice.", []string{call("ask", map[string]any{"prompt": "One?"}), call("ask", map[string]any{"prompt": "Two?"})},
			[]string{"say done"})
		body := modelStep(asking, graphTools)
		created, err := h.conv.CreateRun(h.ctx, createRequest(bot, json.RawMessage(body), "", []byte(`{"run":`+body+`}`)))
		if err != nil {
			t.Fatal(err)
		}
		h.drain()
		id := created.Run.PublicID
		if aw := h.task(id, "r2t0-ask-1"); string(aw.AddressedTo) != `{"role":"member","member":{"kind":"user","public_id":"`+steward.PublicID+`"}}` {
			t.Fatalf("addressed to %s", aw.AddressedTo)
		}
		for _, who := range []*runs.Actor{steward, bot} {
			page, err := h.conv.Inbox(h.ctx, who.Kind, who.PublicID, "", 1)
			if err != nil {
				t.Fatal(err)
			}
			if len(page.Tasks) != 1 || page.Tasks[0].TaskKey != "r2t0-ask-1" || page.NextAfter == nil {
				t.Fatalf("%s's first page %+v", who.Kind, page)
			}
			next, err := h.conv.Inbox(h.ctx, who.Kind, who.PublicID, *page.NextAfter, 1)
			if err != nil {
				t.Fatal(err)
			}
			if len(next.Tasks) != 1 || next.Tasks[0].TaskKey != "r2t1-ask-1" || next.Tasks[0].Prompt != "Two?" {
				t.Fatalf("%s's second page %+v", who.Kind, next)
			}
		}
		if page, _ := h.conv.Inbox(h.ctx, "user", h.actor.PublicID, "", 50); len(page.Tasks) != 0 {
			t.Fatalf("the owner is not the addressee, yet lists %+v", page.Tasks)
		}
		// Any member with write standing answers: the owner here.
		if res := h.resolve(id, "r2t1", `{"content":"two"}`); !res.Applied {
			t.Fatal("the owner's answer was not applied")
		}
	})
}

// TestWaitAcrossRuns: on a conversation a wait may observe another run of it. Its target's
// settle never takes the observer's lock: the sweeper settles the observer afterwards. A
// target collected while observed (no path collects tasks in this version; the row is removed
// by hand here) answers the error result wait_target_not_found with its structured_content.
func TestWaitAcrossRuns(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		h, conv := graphConversation(t, s)
		first := h.post(conv, script("Delegate quietly.",
			[]string{call("delegate_task", map[string]any{"prompt": askBrief, "wake": "passive"})}, []string{"say started"}), "")
		h.drain()
		run1 := first.Run.PublicID
		waiting := func(task string) string {
			p := h.post(conv, script("Wait.", []string{call("wait", map[string]any{"task": task, "run_public_id": run1})},
				[]string{"say {{last_result}}"}), "")
			h.drain()
			if aw := h.task(p.Run.PublicID, "r2t0-wait-1"); aw.Status != runs.StatusDispatched {
				t.Fatalf("cross-run wait %s", aw.Status)
			}
			return p.Run.PublicID
		}
		run2 := waiting("r2t0")
		h.resolve(run1, "r2t0-r2t0-ask-1", `{"content":"yes"}`)
		h.drain()
		if c := h.task(run2, "r2t0"); c.Status != runs.StatusRunning {
			t.Fatalf("the observer settled under the target's lock: %s", c.Status)
		}
		h.sweep()
		h.drain()
		want := "<task_result task=\"r2t0\" status=\"completed\">\n<prompt>" + askBrief + "</prompt>\nasked\n</task_result>"
		if r := h.run(run2); r.Status != runs.RunCompleted || deref(r.Answer) != want {
			t.Fatalf("observer %s %q", r.Status, deref(r.Answer))
		}

		// Collected while observed.
		third := h.post(conv, script("Delegate quietly.",
			[]string{call("delegate_task", map[string]any{"prompt": askBrief, "wake": "passive"})}, []string{"say started"}), "")
		h.drain()
		run1 = third.Run.PublicID
		run4 := waiting("r2t0-r2t0")
		err := s.Write(h.ctx, func(tx *store.Tx) error {
			_, err := tx.Exec(h.ctx, `DELETE FROM tasks WHERE task_key = ? AND run_id = (SELECT id FROM runs WHERE public_id = ?)`, "r2t0-r2t0", run1)
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		h.sweep()
		detail := `task "r2t0-r2t0" is no longer available.`
		c := h.task(run4, "r2t0")
		if c.Status != runs.StatusCompleted || !deref(c.IsError) || deref(c.Output) != "wait_target_not_found: "+detail ||
			deref(c.Title) != "wait refused" ||
			string(deref(c.StructuredContent)) != `{"status":"unavailable","error":{"key":"wait_target_not_found","detail":"task \"r2t0-r2t0\" is no longer available."}}` {
			t.Fatalf("collected target: %+v %q %s", c, deref(c.Output), deref(c.StructuredContent))
		}
	})
}
