package cli

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/nexuskernel/nexus/core/store/storetest"
	"github.com/nexuskernel/nexus/sdk/client"
)

// memoryScript writes a plan into workspace memory, reads it back and answers with it.
const memoryScript = `!mock
round 1
call memory_write {"path":"workspace/plan.md","content":"ship on Friday"}
round 2
call memory_read {"path":"workspace/plan.md"}
round 3
say The plan: {{last_result}}
`

// askScript asks a question, then answers with what the person said.
const askScript = `!mock
round 1
call ask {"prompt":"Which database?","options":["staging","production"]}
round 2
say Using {{last_result}}.
`

// writeScript makes one memory write, which approval mode ask holds.
const writeScript = `!mock
round 1
call memory_write {"path":"workspace/held.md","content":"x"}
round 2
say {{last_result}}
`

// TestRunCommands drives the kernel's main flow from the command line against a real server: a
// run that uses memory and its answer, a run that asks and its answer, a held call approved and
// one denied, show, list and stop.
func TestRunCommands(t *testing.T) {
	t.Parallel()
	for _, d := range storetest.Dialects() {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			ls := startServer(t, d)
			ctx := context.Background()
			admin := client.New(ls.url, ls.admin)

			// A run with the mock that uses memory; --watch prints its answer.
			out := ls.withStdin(t, memoryScript, "run", "create", "--watch", "--kernel-tool", "nexus.memory.write,nexus.memory.read", "--prompt-file", "-")
			if out != "The plan: ship on Friday\n" {
				t.Fatalf("run create --watch printed %q", out)
			}
			doc, err := admin.MemoryShow(ctx, "default", "workspace/plan.md")
			if err != nil || doc.Memory.Content == nil || *doc.Memory.Content != "ship on Friday" {
				t.Fatalf("the run's memory write: %+v, %v", doc, err)
			}

			// A run that asks: watch stops at the question and says how to answer it.
			run := strings.TrimSpace(ls.withStdin(t, askScript, "run", "create", "-q", "--kernel-tool", "nexus.human.ask", "--prompt-file", "-"))
			out, errs := ls.exits(t, nil, exitWaiting, "run", "watch", run)
			want := "run " + run + " waits for a person:\n  ask r2t0-ask-1: Which database?\n    answer: nexus ask answer " + run + " r2t0-ask-1 TEXT\n"
			if out != want || errs != "" {
				t.Fatalf("run watch on an ask printed\n%s\nwant\n%s", out, want)
			}
			out = ls.nexus(t, nil, "inbox")
			if !regexp.MustCompile(`(?m)^ask\s+` + run + `\s+r2t0-ask-1\s+Which database\? \[staging \| production\]$`).MatchString(out) {
				t.Fatalf("inbox:\n%s", out)
			}
			if out := ls.nexus(t, nil, "inbox", "--json"); !strings.Contains(out, `"call_key":"r2t0"`) {
				t.Fatalf("inbox --json:\n%s", out)
			}
			out = ls.nexus(t, nil, "ask", "answer", run, "r2t0", "staging")
			if !strings.HasPrefix(out, "answered r2t0-ask-1;") {
				t.Fatalf("ask answer printed %q", out)
			}
			if out := ls.nexus(t, nil, "run", "watch", run); out != "Using <answer task=\"r2t0-ask-1\">staging</answer>.\n" {
				t.Fatalf("run watch after the answer printed %q", out)
			}
			ls.refused(t, nil, "was already settled (completed): this answer changed nothing", "ask", "answer", run, "r2t0", "production")
			if out := ls.nexus(t, nil, "inbox"); out != "nothing waits for you\n" {
				t.Fatalf("inbox after the answer:\n%s", out)
			}
			ls.refused(t, nil, "await_not_resolvable (409)", "ask", "answer", run, "r2", "x")

			// run show: the summary and the tasks.
			out = ls.nexus(t, nil, "run", "show", run)
			for _, re := range []string{`(?m)^status\s+completed$`, `(?m)^answer\s+Using `, `(?m)^r2t0\s+tool_task\s+completed\s+ask\s+-$`, `(?m)^r2t0-ask-1\s+await_task\s+completed\s+-\s+-$`} {
				if !regexp.MustCompile(re).MatchString(out) {
					t.Fatalf("run show lacks %s:\n%s", re, out)
				}
			}
			res, err := admin.Run(ctx, "default", run)
			if err != nil {
				t.Fatal(err)
			}
			if out := ls.nexus(t, nil, "run", "show", run, "--json"); out != string(res.Raw) {
				t.Fatalf("run show --json is not the API's body:\n%s", out)
			}
			ls.refused(t, nil, "not_found (404)", "run", "show", "01900000-0000-7000-8000-000000000000", "-w", "default")

			// Approval mode ask holds the write; approve runs it, deny refuses it.
			held := strings.TrimSpace(ls.withStdin(t, writeScript, "run", "create", "-q", "--approval-mode", "ask", "--kernel-tool", "nexus.memory.write", "--prompt-file", "-"))
			out, _ = ls.exits(t, nil, exitWaiting, "run", "watch", held)
			if !strings.Contains(out, "  approval r2t0: memory_write {\"path\":\"workspace/held.md\",\"content\":\"x\"}\n    decide: nexus approve "+held+" r2t0") {
				t.Fatalf("run watch on a held call:\n%s", out)
			}
			if out := ls.nexus(t, nil, "approve", held, "r2t0"); out != "approved r2t0 memory_write: running\n" {
				t.Fatalf("approve printed %q", out)
			}
			if out := ls.nexus(t, nil, "run", "watch", held); !strings.HasPrefix(out, "Wrote workspace/held.md") {
				t.Fatalf("run watch after approval printed %q", out)
			}
			ls.refused(t, nil, "not_adjudicable (409)", "approve", held, "r2t0")
			denied := strings.TrimSpace(ls.withStdin(t, writeScript, "run", "create", "-q", "--approval-mode", "ask", "--kernel-tool", "nexus.memory.write", "--prompt-file", "-"))
			ls.exits(t, nil, exitWaiting, "run", "watch", denied)
			if out := ls.nexus(t, nil, "deny", denied, "r2t0", "--reason", "not today"); out != "denied r2t0 memory_write: failed\n" {
				t.Fatalf("deny printed %q", out)
			}
			if out := ls.nexus(t, nil, "run", "watch", denied); !strings.Contains(out, "approval_denied") || !strings.Contains(out, "not today") {
				t.Fatalf("run watch after a denial printed %q", out)
			}

			// A model step without --model runs on the default; a tool step nobody serves is
			// refused with the API's word; --json prints the create body.
			out = ls.nexus(t, nil, "run", "create", "--prompt", "hello", "--json")
			var created client.RunCreated
			if err := json.Unmarshal([]byte(out), &created); err != nil || created.Run.PublicID == "" {
				t.Fatalf("run create --json: %s", out)
			}
			if out := ls.nexus(t, nil, "run", "watch", created.Run.PublicID); out != "echo: hello\n" {
				t.Fatalf("the echo run answered %q", out)
			}
			ls.refused(t, nil, "tool_not_served (422)", "run", "create", "--tool", "fetch")
			ls.refused(t, nil, "unknown_model (422)", "run", "create", "--prompt", "x", "--model", "mock/none")
			out = ls.withStdin(t, `{"approval_mode":"bypass","steps":[{"model":{"prompt":"from a file"}}]}`, "run", "create", "--file", "-", "--watch")
			if out != "echo: from a file\n" {
				t.Fatalf("run create --file printed %q", out)
			}

			// list and stop.
			pending := strings.TrimSpace(ls.withStdin(t, `{"approval_mode":"bypass","start":false,"steps":[{"model":{"prompt":"later"}}]}`, "run", "create", "--file", "-", "-q"))
			if out := ls.nexus(t, nil, "run", "list", "--status", "pending"); !regexp.MustCompile(`(?m)^` + pending + `\s+pending\s+`).MatchString(out) {
				t.Fatalf("run list --status pending:\n%s", out)
			}
			if out := ls.nexus(t, nil, "run", "stop", pending); !regexp.MustCompile(`(?m)^status\s+canceled$`).MatchString(out) {
				t.Fatalf("run stop:\n%s", out)
			}
			ls.refused(t, nil, "already_terminal (409)", "run", "stop", pending)
			if _, errs := ls.exits(t, nil, exitCanceled, "run", "watch", pending); !strings.Contains(errs, "run "+pending+" was canceled") {
				t.Fatalf("run watch on a canceled run: %s", errs)
			}

			// With several workspaces, a run is found in whichever holds it.
			ls.nexus(t, nil, "workspace", "create", "beta")
			if out := ls.nexus(t, nil, "run", "show", run); !regexp.MustCompile(`(?m)^workspace\s+default$`).MatchString(out) {
				t.Fatalf("run show with two workspaces:\n%s", out)
			}
			ls.refused(t, nil, "no run 01900000-0000-7000-8000-000000000000 in any of your workspaces", "run", "show", "01900000-0000-7000-8000-000000000000")
		})
	}
}

// TestConversationCommands: a conversation with two turns, the second read from the first
// turn's script, and its history.
func TestConversationCommands(t *testing.T) {
	t.Parallel()
	for _, d := range storetest.Dialects() {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			ls := startServer(t, d)
			ls.nexus(t, nil, "agent", "create", "helper", "-q")
			conv := strings.TrimSpace(ls.nexus(t, nil, "conversation", "create", "--agent", "helper", "--title", "Plans", "-q"))
			first := "!mock\nround 1\nsay Hello.\nround 2\nsay Turn two, from the first turn's script."
			if out := ls.nexus(t, nil, "conversation", "send", conv, first); out != "Hello.\n" {
				t.Fatalf("first send printed %q", out)
			}
			if out := ls.nexus(t, nil, "conversation", "send", conv, "And now?"); out != "Turn two, from the first turn's script.\n" {
				t.Fatalf("second send printed %q", out)
			}
			out := ls.nexus(t, nil, "conversation", "history", conv)
			want := "turn 1 (completed, mock/scripted)\n  message: !mock\n           round 1\n           say Hello.\n           round 2\n" +
				"           say Turn two, from the first turn's script.\n  answer:  Hello.\n" +
				"turn 2 (completed, mock/scripted)\n  message: And now?\n  answer:  Turn two, from the first turn's script.\n"
			if out != want {
				t.Fatalf("history:\n%s\nwant\n%s", out, want)
			}
			out = ls.nexus(t, nil, "conversation", "send", conv, "queued", "--no-wait")
			if !regexp.MustCompile(`(?m)^position\s+3$`).MatchString(out) {
				t.Fatalf("send --no-wait:\n%s", out)
			}
			out = ls.withStdin(t, "!mock\nround 1\nsay from stdin", "conversation", "send", conv, "--file", "-", "--json")
			var turn client.Turn
			if err := json.Unmarshal([]byte(out), &turn); err != nil || turn.Position != 4 || turn.Answer == nil || turn.Answer.Text != "from stdin" {
				t.Fatalf("send --json: %s", out)
			}
			ls.refused(t, nil, "no member \"nobody\"", "conversation", "create", "--agent", "nobody")
			ls.refused(t, nil, "validation_failed (422)", "conversation", "create")
			ls.refused(t, nil, "not_found (404)", "conversation", "send", "01900000-0000-7000-8000-000000000000", "x")
		})
	}
}

// TestRunnerCommands: a runner serving a tool from the command line, waited for, called by a
// tool step and by a model.
func TestRunnerCommands(t *testing.T) {
	t.Parallel()
	for _, d := range storetest.Dialects() {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			ls := startServer(t, d)
			tok := strings.TrimSpace(ls.nexus(t, nil, "executor", "create", "laptop", "-q"))
			tools := filepath.Join(t.TempDir(), "tools.json")
			spec := `{"tools":[{"name":"disk_usage","description":"Disk usage of the machine.","input_schema":{"type":"object"},
				"effect_profile":{"kind":"read_only","destructive":false,"effect_scope":"closed","idempotency":"intrinsic","reconciliation":"none"},
				"timeout_ms":30000,"command":["echo","42% used"]}]}`
			if err := os.WriteFile(tools, []byte(spec), 0o600); err != nil {
				t.Fatal(err)
			}
			ls.refused(t, nil, "does not announce", "run", "create", "--runner", "laptop", "--function", "disk_usage", "--prompt", "x")
			ls.refused(t, nil, "did not announce disk_usage within 200ms", "executor", "wait", "laptop", "--tool", "disk_usage", "--timeout", "200ms")

			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan int, 1)
			go func() {
				errf, _ := os.CreateTemp(t.TempDir(), "runner")
				e := &env{getenv: func(k string) string { return map[string]string{EnvExecutorToken: tok, EnvAddr: ls.url}[k] },
					stdout: &strings.Builder{}, stderr: errf,
					signals: func(context.Context) (context.Context, context.CancelFunc) { return ctx, func() {} }}
				done <- run(e, []string{"runner", "--tools", tools})
			}()
			t.Cleanup(func() {
				cancel()
				if code := <-done; code != 0 {
					t.Errorf("nexus runner exited %d", code)
				}
			})
			out := ls.nexus(t, nil, "executor", "wait", "laptop", "--tool", "disk_usage")
			if !regexp.MustCompile(`(?m)^serves\s+disk_usage$`).MatchString(out) {
				t.Fatalf("executor wait:\n%s", out)
			}
			if out := ls.nexus(t, nil, "run", "create", "--tool", "disk_usage", "--runner", "laptop", "--watch"); out != "42% used\n" {
				t.Fatalf("a tool step on the runner answered %q", out)
			}
			out = ls.withStdin(t, "!mock\nround 1\ncall disk_usage {}\nround 2\nsay The disk: {{last_result}}", "run", "create", "--runner", "laptop", "--function", "disk_usage", "--prompt-file", "-", "--watch")
			if out != "The disk: 42% used\n" {
				t.Fatalf("a model calling the runner's tool answered %q", out)
			}
			ls.refused(t, nil, "no active runner \"desktop\"", "run", "create", "--tool", "disk_usage", "--runner", "desktop")
			if _, errs, code := ls.run(t, nil, "run", "create", "--tool", "disk_usage", "--model", "mock/scripted"); code != exitUsage || !strings.Contains(errs, "--model belongs to a model step") {
				t.Fatalf("--tool with --model: exit %d, %s", code, errs)
			}
		})
	}
}

// TestCommandLineErrors: argument errors print the usage line (exit 2), a refused connection
// says the server may not be running, an executor token on a member command says which routes
// it opens, member add takes a handle and version --json is JSON.
func TestCommandLineErrors(t *testing.T) {
	t.Parallel()
	usage := func(want string, args ...string) {
		t.Helper()
		_, errs, code := inProcess(t, nil, args...)
		if code != exitUsage || !strings.Contains(errs, "\n"+want+"\n") {
			t.Errorf("nexus %s: exit %d, stderr %q; want exit 2 and %q", strings.Join(args, " "), code, errs, want)
		}
	}
	usage("usage: nexus member add USER [--role member|owner] [flags]", "member", "add")
	usage("usage: nexus run watch RUN [--timeout D] [--follow] [flags]", "run", "watch", "a", "b")
	usage("usage: nexus ask answer RUN KEY TEXT [--decline] [--structured JSON] [flags]", "ask", "answer", "r", "k")
	usage("usage: nexus run create (--prompt TEXT | --prompt-file FILE | --tool NAME | --file FILE) [flags]", "run", "create", "--nope")
	usage("usage: nexus COMMAND [flags]", "nope")
	// An unknown command in any group is a usage error naming the group's commands; a bare group
	// prints its help.
	for _, group := range [][]string{{"run"}, {"agent"}, {"conversation"}, {"task"}, {"upload"}, {"policy"}, {"token"}, {"memory", "override"}, {"plugins"}} {
		path := strings.Join(group, " ")
		_, errs, code := inProcess(t, nil, append(group, "nope")...)
		if code != exitUsage || !strings.Contains(errs, `unknown command "nope" for "nexus `+path+`"`) ||
			!strings.Contains(errs, "\nusage: nexus "+path+" COMMAND [flags]\ncommands: ") {
			t.Errorf("nexus %s nope: exit %d, stderr %q", path, code, errs)
		}
		out, errs, code := inProcess(t, nil, group...)
		if code != 0 || !strings.Contains(out, "Available Commands:") || errs != "" {
			t.Errorf("nexus %s: exit %d, stdout %q, stderr %q", path, code, out, errs)
		}
	}
	if _, errs, _ := inProcess(t, nil, "run", "nope"); !strings.Contains(errs, "\ncommands: append, create, list, show, stop, watch\n") {
		t.Errorf("nexus run nope lists %q", errs)
	}
	usage("usage: nexus run create (--prompt TEXT | --prompt-file FILE | --tool NAME | --file FILE) [flags]", "run", "create", "--server", "127.0.0.1:1", "--token", "nxm_"+strings.Repeat("a", 43))

	_, errs, code := inProcess(t, nil, "tools", "--server", "127.0.0.1:1", "--token", "nxm_"+strings.Repeat("a", 43))
	if code != 1 || !strings.Contains(errs, `no server answers at 127.0.0.1:1 (connection refused): is "nexus serve" running there?`) {
		t.Errorf("refused connection: exit %d, stderr %q", code, errs)
	}
	_, errs, code = inProcess(t, nil, "inbox", "--token", "nxe_"+strings.Repeat("a", 43))
	if code != 1 || !strings.Contains(errs, "this is an executor token (nxe_…): it opens only the executor plane, /agent_api/v1/executor and the routes below it") {
		t.Errorf("executor token: exit %d, stderr %q", code, errs)
	}
	out, _, code := inProcess(t, nil, "version", "--json")
	var v map[string]string
	if code != 0 || json.Unmarshal([]byte(out), &v) != nil || v["version"] != Version || v["go"] == "" || v["os"] == "" || v["arch"] == "" {
		t.Errorf("version --json: exit %d, %q", code, out)
	}

	ls := startServer(t, storetest.Dialects()[0])
	ls.nexus(t, nil, "workspace", "create", "acme")
	ls.nexus(t, nil, "user", "create", "dana", "-w", "acme", "-q")
	out = ls.nexus(t, nil, "member", "add", "dana", "-w", "default")
	if !regexp.MustCompile(`(?m)^member\s+dana$`).MatchString(out) {
		t.Fatalf("member add by handle:\n%s", out)
	}
	ls.refused(t, nil, `no user "erin" in any of your workspaces`, "member", "add", "erin", "-w", "default")
	// Outputs name workspaces by handle, also when the command was given a public id.
	acme, err := client.New(ls.url, ls.admin).Workspace(context.Background(), "acme")
	if err != nil {
		t.Fatal(err)
	}
	if out := ls.nexus(t, nil, "agent", "create", "scout", "-w", acme.Workspace.PublicID); !regexp.MustCompile(`(?m)^workspace\s+acme$`).MatchString(out) ||
		!regexp.MustCompile(`(?m)^steward\s+admin$`).MatchString(out) {
		t.Fatalf("agent create -w PUBLIC_ID:\n%s", out)
	}
	if out := ls.nexus(t, nil, "executor", "create", "builder", "-w", acme.Workspace.PublicID); !regexp.MustCompile(`(?m)^workspace\s+acme$`).MatchString(out) {
		t.Fatalf("executor create:\n%s", out)
	}
	if out := ls.nexus(t, nil, "executor", "list"); !regexp.MustCompile(`(?m)^builder\s+runner\s+.*\sacme$`).MatchString(out) {
		t.Fatalf("executor list:\n%s", out)
	}
	acmeRun := strings.TrimSpace(ls.nexus(t, nil, "run", "create", "-q", "--prompt", "hi", "-w", acme.Workspace.PublicID))
	if out := ls.nexus(t, nil, "run", "show", acmeRun, "-w", strings.ToUpper(acme.Workspace.PublicID)); !regexp.MustCompile(`(?m)^workspace\s+acme$`).MatchString(out) {
		t.Fatalf("run show -w PUBLIC_ID:\n%s", out)
	}
	// The server itself says which routes a token of the other plane opens.
	exTok := strings.TrimSpace(ls.nexus(t, nil, "executor", "create", "box", "-w", "default", "-q"))
	_, err = client.New(ls.url, exTok).Me(context.Background())
	var ce *client.Error
	if !errors.As(err, &ce) || ce.Status != 401 || ce.Code != "unauthorized" || !strings.Contains(ce.Message, "opens only /agent_api/v1/executor") {
		t.Fatalf("executor token on GET /me: %v", err)
	}
}
