package conversations_test

import (
	"strings"
	"testing"

	"github.com/nexuskernel/nexus/core/conversations"
	"github.com/nexuskernel/nexus/core/refusal"
	"github.com/nexuskernel/nexus/core/runs"
	"github.com/nexuskernel/nexus/core/runs/runstest"
	"github.com/nexuskernel/nexus/core/store"
	"github.com/nexuskernel/nexus/core/store/storetest"
)

const askBrief = runstest.AskBrief

// TestResolutionDoor: the door's checks in order (not_found, not_authorized,
// parameter_invalid, await_not_resolvable, then the result grammar and result_unstorable
// against a live ask only), each refusal leaving the ask standing.
func TestResolutionDoor(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		h := newHarness(t, s, harnessOptions{})
		main := script("Ask and wait.",
			[]string{call("ask", map[string]any{"prompt": "Ship?"}), call("delegate_task", map[string]any{"prompt": askBrief}), "call memory_ls {}",
				call("wait", map[string]any{"task": "r2t1"})},
			[]string{"say done"})
		id := h.Create(modelStep(main, graphTools)).Run.PublicID
		h.Drain()
		outsider := h.Member("li")
		cases := []struct {
			name      string
			actor     *runs.Actor
			run, key  string
			body      string
			code      string
			kind      refusal.Kind
			violation string
		}{
			{"unknown run", h.Actor, "0190a5e2-0000-7000-8000-000000000001", "r2t0", `{}`, refusal.CodeNotFound, refusal.NotFound, ""},
			{"unknown key", h.Actor, id, "r9t9", `{}`, refusal.CodeNotFound, refusal.NotFound, ""},
			{"no standing", outsider, id, "r2t0", `{"content":"x"}`, refusal.CodeNotAuthorized, refusal.Forbidden, ""},
			{"body not an object", h.Actor, id, "r2t0", `["x"]`, refusal.CodeParameterInvalid, refusal.BadRequest, ""},
			{"a model round", h.Actor, id, "s1-model-1", `{}`, conversations.CodeAwaitNotResolvable, refusal.Conflict, ""},
			{"a plain tool call", h.Actor, id, "r2t2", `{}`, conversations.CodeAwaitNotResolvable, refusal.Conflict, ""},
			{"a wait await", h.Actor, id, "r2t3-wait-1", `{}`, conversations.CodeAwaitNotResolvable, refusal.Conflict, ""},
			{"a wait call", h.Actor, id, "r2t3", `{}`, conversations.CodeAwaitNotResolvable, refusal.Conflict, ""},
			{"a branch", h.Actor, id, "r2t1-model-1", `{}`, conversations.CodeAwaitNotResolvable, refusal.Conflict, ""},
			{"bad outcome", h.Actor, id, "r2t0", `{"content":"x","outcome":"maybe"}`, "invalid_outcome", refusal.Unprocessable, "outcome"},
			{"bad block", h.Actor, id, "r2t0-ask-1", `{"content":[{"type":"image","data":"x"}]}`, "unsupported_content_kind", refusal.Unprocessable, "content[0].type"},
			{"not the member's upload", h.Actor, id, "r2t0", `{"content":[{"type":"resource_link","uri":"nexus://uploads/0190a5e2-0000-7000-8000-0000000000aa","name":"x.png"}]}`, "unknown_result_upload", refusal.Unprocessable, ""},
			{"unstorable", h.Actor, id, "r2t0", `{"content":"a\u0000b"}`, "result_unstorable", refusal.Unprocessable, "content"},
		}
		for _, c := range cases {
			_, err := h.Conv.Resolve(h.Ctx, resolveRequest(t, c.actor, c.run, c.key, []byte(c.body)))
			r, ok := refusal.As(err)
			if !ok || r.Code != c.code || r.Kind != c.kind {
				t.Errorf("%s: %v, want %s", c.name, err, c.code)
				continue
			}
			if p, _ := r.Get("path"); c.violation != "" && p != c.violation {
				t.Errorf("%s: path %v, want %s", c.name, p, c.violation)
			}
		}
		if aw := h.Task(id, "r2t0-ask-1"); aw.Status != runs.StatusAwaitingInput {
			t.Fatalf("a refused answer moved the ask: %s", aw.Status)
		}
		if res := h.Resolve(id, "r2t0-ask-1", ``); !res.Applied || deref(res.Task.Output) != "" {
			t.Fatalf("an empty answer %+v", res.Task)
		}
		if c := h.Task(id, "r2t0"); deref(c.Output) != `<answer task="r2t0-ask-1"></answer>` {
			t.Fatalf("the empty answer reads %q", deref(c.Output))
		}
	})
}

// TestBranchCancel: branch cancel by the call's key or any round of the branch settles every
// live row of it canceled (task_canceled, failure_resolution canceled) and nothing outside it;
// the waited call reads a canceled envelope, and a detached branch's result is delivered as
// canceled. Its words: not_found, not_authorized, not_a_branch (a mainline round, a plain
// call, a delegate_task call that placed no branch, an await), already_terminal.
func TestBranchCancel(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		h := newHarness(t, s, harnessOptions{})
		main := script("Delegate twice.",
			[]string{call("delegate_task", map[string]any{"prompt": askBrief}), call("delegate_task", map[string]any{"prompt": askBrief, "wait": true}),
				"call memory_ls {}", call("delegate_task", map[string]any{"prompt": ""})},
			[]string{"say {{last_result}}"})
		id := h.Create(modelStep(main, graphTools)).Run.PublicID
		h.Drain()
		outsider := h.Member("li")
		cases := []struct {
			name  string
			actor *runs.Actor
			key   string
			code  string
		}{
			{"unknown key", h.Actor, "r9", refusal.CodeNotFound},
			{"no standing", outsider, "r2t1", refusal.CodeNotAuthorized},
			{"a mainline round", h.Actor, "s1-model-1", runs.CodeNotABranch},
			{"a plain call", h.Actor, "r2t2", runs.CodeNotABranch},
			{"a delegate_task that placed nothing", h.Actor, "r2t3", runs.CodeNotABranch},
			{"an await", h.Actor, "r2t0-r2t0-ask-1", runs.CodeNotABranch},
		}
		for _, c := range cases {
			if _, err := h.Conv.CancelBranch(h.Ctx, c.actor, id, c.key); !isCode(err, c.code) {
				t.Errorf("%s: %v, want %s", c.name, err, c.code)
			}
		}
		doc, err := h.Conv.CancelBranch(h.Ctx, h.Actor, id, "r2t1")
		if err != nil {
			t.Fatal(err)
		}
		if doc.Key != "r2t1-model-1" {
			t.Fatalf("answered %s, want the branch's first round", doc.Key)
		}
		for _, k := range []string{"r2t1-r2t0", "r2t1-r2t0-ask-1", "r2t1-r2"} {
			tk := h.Task(id, k)
			if tk.Status != runs.StatusCanceled || deref(tk.FailureResolution) != runs.StatusCanceled || tk.Error.Key != runs.KeyTaskCanceled {
				t.Errorf("%s: %s %v %+v", k, tk.Status, tk.FailureResolution, tk.Error)
			}
		}
		if first := h.Task(id, "r2t1-model-1"); first.Status != runs.StatusCompleted || first.FailureResolution != nil {
			t.Errorf("the settled first round was touched: %+v", first)
		}
		if ask := h.Task(id, "r2t0-r2t0-ask-1"); ask.Status != runs.StatusAwaitingInput {
			t.Errorf("the other branch was touched: %s", ask.Status)
		}
		canceled := "<task_result task=\"r2t1\" status=\"canceled\">\n<prompt>" + askBrief + "</prompt>\nerror: task_canceled\n</task_result>"
		if c := h.Task(id, "r2t1"); c.Status != runs.StatusCompleted || !deref(c.IsError) || deref(c.Output) != canceled {
			t.Fatalf("waited call after the cancel: %s %q", c.Status, deref(c.Output))
		}
		if _, err := h.Conv.CancelBranch(h.Ctx, h.Actor, id, "r2t1-model-1"); !isCode(err, runs.CodeAlreadyTerminal) {
			t.Fatalf("second cancel: %v", err)
		}
		if _, err := h.Conv.CancelBranch(h.Ctx, h.Actor, id, "r2t0-r2"); err != nil {
			t.Fatal(err)
		}
		h.Drain()
		delivered := strings.Replace(canceled, `task="r2t1"`, `task="r2t0"`, 1)
		if r := h.Run(id); r.Status != runs.RunCompleted || deref(r.Answer) != delivered {
			t.Fatalf("run %s answer %q", r.Status, deref(r.Answer))
		}
	})
}
