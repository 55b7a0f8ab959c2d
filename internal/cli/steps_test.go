package cli

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/nexuskernel/nexus/core/store/storetest"
	"github.com/nexuskernel/nexus/sdk/client"
)

// failScript fails its first round: a mainline round that halts the run.
const failScript = "!mock\nround 1\nerror provider_overloaded The provider is busy.\n"

// slowScript answers after three seconds.
const slowScript = "!mock\nround 1\nsleep 3000\nsay Slow.\n"

// TestWatchExitCodes: run watch, run create --watch, run append --watch and conversation send
// end with the exit code of how the run stands: 0 completed, 3 waits for a person, 4 needs
// attention, 5 canceled, 6 --timeout passed; a run that needs attention goes on with an append.
func TestWatchExitCodes(t *testing.T) {
	t.Parallel()
	for _, d := range storetest.Dialects() {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			ls := startServer(t, d)
			ctx := context.Background()

			// 4: the run needs attention; stderr says how it goes on.
			out, errs, code := ls.runStdin(t, nil, failScript, "run", "create", "--watch", "--prompt-file", "-")
			if code != exitNeedsAttention || out != "" {
				t.Fatalf("run create --watch on a failing round: exit %d, stdout %q, stderr %s", code, out, errs)
			}
			run := regexp.MustCompile(`run (\S+) needs attention`).FindStringSubmatch(errs)
			if run == nil || !strings.Contains(errs, "deliverable_unresolved: s1-model-1 (provider_overloaded: The provider is busy.)") ||
				!strings.Contains(errs, "nexus run append "+run[1]) || !strings.Contains(errs, "nexus run stop "+run[1]) {
				t.Fatalf("needs attention: %s", errs)
			}
			failed := run[1]
			if _, errs := ls.exits(t, nil, exitNeedsAttention, "run", "watch", failed); !strings.Contains(errs, "needs attention") {
				t.Fatalf("run watch on a run that needs attention: %s", errs)
			}
			out, _ = ls.exits(t, nil, exitNeedsAttention, "run", "watch", failed, "--json")
			var body client.RunResponse
			if err := json.Unmarshal([]byte(out), &body); err != nil || body.Run.Status != "needs_attention" {
				t.Fatalf("run watch --json prints the run: %s", out)
			}

			// The way on: an append whose model step reads the failure, --watch with its code.
			res, err := client.New(ls.url, ls.admin).Run(ctx, "default", failed)
			if err != nil {
				t.Fatal(err)
			}
			ls.refused(t, nil, "stale_revision (409)", "run", "append", failed, "--prompt", "x", "--expected-revision", "7")
			out = ls.nexus(t, nil, "run", "append", failed, "--prompt", "!mock\nround 1\nsay Repaired after {{last_result}}", "--expected-revision", "1")
			line(t, out, "accepted", "s2-model-1")
			line(t, out, "deliverable", "s2-model-1")
			line(t, out, "revision", "2")
			if res.Run.Revision != 1 {
				t.Fatalf("the failed run's revision %d", res.Run.Revision)
			}
			if out, _ := ls.exits(t, nil, 0, "run", "watch", failed); !strings.HasPrefix(out, "Repaired after ") {
				t.Fatalf("the repaired run answered %q", out)
			}
			ls.refused(t, nil, "run_not_appendable (409)", "run", "append", failed, "--prompt", "again")
			// Steps from a file, as an array or an object; --watch reports the new deliverable.
			watched := strings.TrimSpace(ls.withStdin(t, failScript, "run", "create", "-q", "--prompt-file", "-"))
			ls.exits(t, nil, exitNeedsAttention, "run", "watch", watched)
			if out, _ := ls.exits(t, nil, 0, "run", "append", watched, "--watch", "--prompt", "!mock\nround 1\nsay Watched."); out != "Watched.\n" {
				t.Fatalf("run append --watch printed %q", out)
			}
			again := strings.TrimSpace(ls.withStdin(t, failScript, "run", "create", "-q", "--prompt-file", "-"))
			ls.exits(t, nil, exitNeedsAttention, "run", "watch", again)
			steps := `[{"model":{"key":"fix","prompt":"!mock\nround 1\nsay Fixed from a file."}}]`
			if out := ls.withStdin(t, steps, "run", "append", again, "--file", "-", "--json"); !strings.Contains(out, `"accepted_task_keys":["fix"]`) {
				t.Fatalf("run append --file --json: %s", out)
			}
			if out, _ := ls.exits(t, nil, 0, "run", "watch", again); out != "Fixed from a file.\n" {
				t.Fatalf("the run repaired from a file answered %q", out)
			}
			pending := strings.TrimSpace(ls.withStdin(t, `{"approval_mode":"bypass","start":false,"steps":[{"model":{"key":"first","prompt":"x"}}]}`, "run", "create", "--file", "-", "-q"))
			keyed := writeTemp(t, `{"steps":[{"model":{"key":"fix","prompt":"x"}}]}`)
			ls.nexus(t, nil, "run", "append", pending, "--file", keyed)
			ls.refused(t, nil, "duplicate_task_key (409)", "run", "append", pending, "--file", keyed)
			for _, c := range []struct {
				want string
				args []string
			}{
				{"--file carries the steps; --prompt cannot be added to it", []string{"run", "append", again, "--file", "x.json", "--prompt", "x"}},
				{"pass --prompt or --prompt-file (a model step), --tool (a tool step) or --file", []string{"run", "append", again}},
				{"--attach belongs to a model step", []string{"run", "append", again, "--tool", "x", "--attach", "f"}},
				{"unknown flag: --approval-mode", []string{"run", "append", again, "--prompt", "x", "--approval-mode", "ask"}},
			} {
				if _, errs := ls.exits(t, nil, exitUsage, c.args...); !strings.Contains(errs, c.want) {
					t.Errorf("nexus %s: stderr %q lacks %q", strings.Join(c.args, " "), errs, c.want)
				}
			}

			// 3: the run waits for a person, quietly on stderr.
			asks := strings.TrimSpace(ls.withStdin(t, askScript, "run", "create", "-q", "--kernel-tool", "nexus.human.ask", "--prompt-file", "-"))
			out, errs = ls.exits(t, nil, exitWaiting, "run", "watch", asks)
			if !strings.HasPrefix(out, "run "+asks+" waits for a person:") || errs != "" {
				t.Fatalf("run watch on an ask: stdout %q, stderr %q", out, errs)
			}
			ls.exits(t, nil, exitWaiting, "run", "watch", asks, "--json")

			// 6: --timeout passed; the run goes on. 5: canceled.
			slow := strings.TrimSpace(ls.withStdin(t, slowScript, "run", "create", "-q", "--prompt-file", "-"))
			if _, errs := ls.exits(t, nil, exitTimeout, "run", "watch", slow, "--timeout", "100ms"); !strings.Contains(errs, "did not settle within --timeout 100ms; it goes on") {
				t.Fatalf("run watch --timeout: %s", errs)
			}
			ls.nexus(t, nil, "run", "stop", slow)
			ls.exits(t, nil, exitCanceled, "run", "watch", slow)
			ls.exits(t, nil, exitTimeout, "run", "create", "--watch", "--timeout", "100ms", "--prompt", slowScript)

			// Any other error is 1; a wrong command line 2.
			ls.refused(t, nil, "not_found (404)", "run", "watch", "01900000-0000-7000-8000-000000000000", "-w", "default")
			ls.exits(t, nil, exitUsage, "run", "watch")

			// conversation send: the same codes for its turn.
			ls.nexus(t, nil, "agent", "create", "helper", "-q")
			ls.nexus(t, nil, "agent", "configure", "helper", "--kernel-tool", "nexus.human.ask", "--approval-mode", "bypass")
			conv := strings.TrimSpace(ls.nexus(t, nil, "conversation", "create", "--agent", "helper", "-q"))
			if _, errs := ls.exits(t, nil, exitNeedsAttention, "conversation", "send", conv, failScript); !strings.Contains(errs, "turn 1 failed: provider_overloaded") {
				t.Fatalf("a failing turn: %s", errs)
			}
			out, _ = ls.exits(t, nil, exitWaiting, "conversation", "send", conv, askScript)
			if !strings.Contains(out, "waits for a person:") {
				t.Fatalf("a turn that asks:\n%s", out)
			}
		})
	}
}

// TestTaskShow: a task read whole from the command line, a model task's sealed request byte for
// byte, and the refusals.
func TestTaskShow(t *testing.T) {
	t.Parallel()
	for _, d := range storetest.Dialects() {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			ls := startServer(t, d)
			ctx := context.Background()
			admin := client.New(ls.url, ls.admin)
			run := strings.TrimSpace(ls.withStdin(t, memoryScript, "run", "create", "-q", "--kernel-tool", "nexus.memory.write,nexus.memory.read", "--prompt-file", "-"))
			ls.exits(t, nil, 0, "run", "watch", run)

			out := ls.nexus(t, nil, "task", "show", run, "r2t0")
			for _, want := range [][2]string{{"task", "r2t0"}, {"kind", "tool_task"}, {"status", "completed"}, {"origin", "model"},
				{"tool", "memory_write"}, {"input", `{"path":"workspace/plan.md","content":"ship on Friday"}`}, {"title", "wrote workspace/plan.md"}} {
				line(t, out, want[0], want[1])
			}
			for _, re := range []string{`(?m)^content\s+Wrote workspace/plan\.md \(14 bytes\)\.$`, `(?m)^completed\s+\d{4}-\d\d-\d\dT`, `(?m)^took\s+\S+ from created to completed$`} {
				if !regexp.MustCompile(re).MatchString(out) {
					t.Fatalf("task show of a tool task lacks %s:\n%s", re, out)
				}
			}
			// A model task: its prompt continues under its label, its calls, usage and cost.
			out = ls.nexus(t, nil, "task", "show", run, "s1-model-1")
			for _, re := range []string{`(?m)^model\s+mock/scripted$`, `(?m)^input\s+!mock\n\s+round 1\n`, `(?m)^call\s+r2t0 memory_write$`,
				`(?m)^usage\s+\d+ input tokens \(0 cached, 0 written to the cache\), \d+ output tokens$`, `(?m)^cost\s+0\.000000 USD$`} {
				if !regexp.MustCompile(re).MatchString(out) {
					t.Fatalf("task show of a model task lacks %s:\n%s", re, out)
				}
			}
			task, err := admin.Task(ctx, "default", run, "s1-model-1")
			if err != nil {
				t.Fatal(err)
			}
			if out := ls.nexus(t, nil, "task", "show", run, "s1-model-1", "--json"); out != string(task.Raw) {
				t.Fatalf("task show --json is not the API's body:\n%s", out)
			}
			sealed, err := admin.SealedRequest(ctx, "default", run, "s1-model-1")
			if err != nil {
				t.Fatal(err)
			}
			if out := ls.nexus(t, nil, "task", "show", run, "s1-model-1", "--request"); strings.TrimSuffix(out, "\n") != strings.TrimSuffix(string(sealed), "\n") ||
				!strings.Contains(out, `"model":"mock/scripted"`) {
				t.Fatalf("task show --request:\n%s\nthe API's:\n%s", out, sealed)
			}
			// A failed task names its error.
			failed := strings.TrimSpace(ls.withStdin(t, failScript, "run", "create", "-q", "--prompt-file", "-"))
			ls.exits(t, nil, exitNeedsAttention, "run", "watch", failed)
			line(t, ls.nexus(t, nil, "task", "show", failed, "s1-model-1"), "error", "provider_overloaded: The provider is busy.")

			// An answered ask: its question is the input, the answer's structured content is shown.
			asks := strings.TrimSpace(ls.withStdin(t, askScript, "run", "create", "-q", "--kernel-tool", "nexus.human.ask", "--prompt-file", "-"))
			ls.exits(t, nil, exitWaiting, "run", "watch", asks)
			ls.nexus(t, nil, "ask", "answer", asks, "r2t0", "staging", "--structured", `{"choice": "staging"}`)
			out = ls.nexus(t, nil, "task", "show", asks, "r2t0-ask-1")
			line(t, out, "input", "Which database?")
			line(t, out, "content", "staging")
			line(t, out, "structured", `{"choice":"staging"}`)

			ls.refused(t, nil, "request_not_sealed (404)", "task", "show", run, "r2t0", "--request")
			ls.refused(t, nil, "not_found (404)", "task", "show", run, "r9")
			ls.refused(t, nil, "not_found (404): No run 01900000-0000-7000-8000-000000000000", "task", "show", "01900000-0000-7000-8000-000000000000", "r1")
			ls.exits(t, nil, exitUsage, "task", "show", run)
		})
	}
}

// writeTemp writes content to a file of the test's and returns its path.
func writeTemp(t *testing.T, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}
