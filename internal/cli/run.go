package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/nexuskernel/nexus/core/identity"
	"github.com/nexuskernel/nexus/sdk/client"
)

// runFlags are the flags of `nexus run create` and `nexus run append`: one step, model or tool,
// and the run's options.
type runFlags struct {
	prompt, promptFile, model, instructions string
	kernelTools, functions, attach          []string
	imports, eager                          []string
	toolsFile                               string
	tool, input                             string
	runner, approvalMode, file              string
	idempotencyKey                          string
	watch, follow                           bool
	timeout                                 time.Duration
	expectedRevision                        int64
}

// register adds the step's flags to fs; create adds the run's own (--approval-mode).
func (rf *runFlags) register(fs *pflag.FlagSet, create bool) {
	fs.StringVar(&rf.prompt, "prompt", "", "the model step's prompt")
	fs.StringVar(&rf.promptFile, "prompt-file", "", "read the prompt from FILE (- for standard input)")
	fs.StringVar(&rf.model, "model", "", "provider/model (default: the deployment's default_model)")
	fs.StringVar(&rf.instructions, "instructions", "", "the model step's system text")
	fs.StringSliceVar(&rf.kernelTools, "kernel-tool", nil, "a kernel tool to offer, canonical name (repeatable, or comma-separated)")
	fs.StringSliceVar(&rf.functions, "function", nil, "a function tool to offer by its served name (repeatable)")
	fs.StringSliceVar(&rf.imports, "import", nil, `the tool providers' tools to import: a name or a prefix with a trailing "*" (repeatable)`)
	fs.StringSliceVar(&rf.eager, "eager", nil, "an imported tool to offer eagerly rather than deferred (repeatable)")
	fs.StringVar(&rf.toolsFile, "tools", "", "a JSON file holding a declaration array to offer")
	fs.StringArrayVar(&rf.attach, "attach", nil, "upload FILE and attach it to the model step (repeatable)")
	fs.StringVar(&rf.tool, "tool", "", "a tool step instead: the tool's name")
	fs.StringVar(&rf.input, "input", "", "the tool step's input, a JSON object (default {})")
	fs.StringVar(&rf.idempotencyKey, "idempotency-key", "", "a key that makes a retried request answer the first one")
	fs.BoolVar(&rf.watch, "watch", false, "wait for the run and print its answer, with run watch's exit codes")
	fs.DurationVar(&rf.timeout, "timeout", 0, "with --watch: give up after this long (0: never)")
	if create {
		fs.BoolVar(&rf.follow, "follow", false, "with --watch: print the text as it streams and each tool call as it starts and settles")
		fs.StringVar(&rf.runner, "runner", "", "the run's default runner, public id or display name; it serves --tool and --function")
		fs.StringVar(&rf.approvalMode, "approval-mode", "bypass", "bypass, ask or rules")
		fs.StringVar(&rf.file, "file", "", "send the run object in FILE (- for standard input)")
		return
	}
	fs.StringVar(&rf.runner, "runner", "", "the runner that serves --tool or --function, public id or display name")
	fs.StringVar(&rf.file, "file", "", "send the steps in FILE (- for standard input): a JSON array, or {\"steps\", \"expected_revision\"}")
	fs.Int64Var(&rf.expectedRevision, "expected-revision", 0, "refuse (stale_revision) unless the run is at this revision")
}

func newRun(e *env, g *globals) *cobra.Command {
	f := &adminFlags{}
	cmd := &cobra.Command{Use: "run", Short: "Create, show, watch, list and stop standalone runs"}
	f.register(cmd)

	rf := &runFlags{}
	create := &cobra.Command{
		Use:   "create (--prompt TEXT | --prompt-file FILE | --tool NAME | --file FILE) [flags]",
		Short: "Create a run of one model step or one tool step, or from a JSON file",
		Long: `Create a standalone run and start it.

A model step: --prompt TEXT (or --prompt-file FILE, - for standard input), on --model (default:
the deployment's default_model), with the tools of --kernel-tool (canonical names such as
nexus.memory.read), --function (a function tool by name, served by --runner, or without --runner
by the workspace's tool providers), --import (the tool providers' tools by name or pattern,
'fs_*' for every tool whose name starts with fs_, deferred unless named by --eager) and --tools
(a JSON file holding a declaration array).
--attach FILE uploads a file and attaches it for the model to read (repeatable).

A tool step: --tool NAME with --input JSON, served by --runner (a runner's public id or display
name) or by the workspace's tool providers.

--file FILE (- for standard input) sends the run object written there instead (docs/api.md,
"Runs"). --approval-mode is bypass unless set. --watch waits for the run as "nexus run watch"
does, prints its answer and exits with its exit codes; otherwise the run's id and status are
printed (--quiet: the id only).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := rf.check(cmd, true); err != nil {
				return err
			}
			c, ws, err := e.connect(cmd, g, f)
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			run, err := e.runObject(ctx, c, ws, rf)
			if err != nil {
				return err
			}
			var fl *follower
			if rf.watch && rf.follow && !f.json {
				// Opened before the create, so that the run's first events are not missed.
				if fl, err = e.openFollow(ctx, c, ws, client.MemberEventOptions{}); err != nil {
					return err
				}
			}
			res, err := c.CreateRun(ctx, ws, run, rf.idempotencyKey)
			if err != nil {
				if fl != nil {
					fl.stop("")
				}
				return apiError(err)
			}
			if rf.watch {
				return e.watchAndReport(ctx, c, f, ws, res.Run.PublicID, rf.timeout, fl)
			}
			switch {
			case f.json:
				return e.raw(res.Raw)
			case f.quiet:
				_, err := fmt.Fprintln(e.stdout, res.Run.PublicID)
				return err
			}
			r := res.Run
			return fields(e.stdout, "run", r.PublicID, "status", r.Status, "deliverable", r.DeliverableTaskKey,
				"next", "nexus run watch "+r.PublicID)
		},
	}
	rf.register(create.Flags(), true)
	f.registerWorkspace(create)
	f.registerQuiet(create, "the run's public id")

	show := &cobra.Command{
		Use:   "show RUN",
		Short: "Show a run: its status, answer, what it waits for, and its tasks",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			_, ws, res, err := e.connectRun(cmd, g, f, args[0])
			if err != nil {
				return err
			}
			if f.json {
				return e.raw(res.Raw)
			}
			return e.printRun(ws, &res.Run)
		},
	}
	f.registerWorkspace(show)

	var timeout time.Duration
	var follow bool
	watch := &cobra.Command{
		Use:   "watch RUN [--timeout D] [--follow]",
		Short: "Wait until a run ends or waits for a person, then print its answer or what it waits for",
		Long: `Wait until a run completes (its answer is printed; exit 0), waits for a person (the asks and
approvals are printed with the command that answers each, exit 3; run watch again afterwards),
needs attention (exit 4: append a repair with "nexus run append", or stop it) or is canceled
(exit 5). --timeout gives up after that long (exit 6; the run goes on). Any other error exits 1,
a wrong command line 2. --json prints the run's body instead, with the same exit codes.
--follow prints the run as it goes: the text its model streams, "[call NAME]" as a tool call
begins and "[NAME completed]" (or its failure) as it settles; a completed run's answer, already
shown, is not printed again.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, ws, _, err := e.connectRun(cmd, g, f, args[0])
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			var fl *follower
			if follow && !f.json {
				if fl, err = e.openFollow(ctx, c, ws, client.MemberEventOptions{RunPublicID: args[0]}); err != nil {
					return err
				}
			}
			return e.watchAndReport(ctx, c, f, ws, args[0], timeout, fl)
		},
	}
	watch.Flags().DurationVar(&timeout, "timeout", 0, "give up after this long (0: never)")
	watch.Flags().BoolVar(&follow, "follow", false, "print the text as it streams and each tool call as it starts and settles")
	f.registerWorkspace(watch)

	var status string
	var limit int
	list := &cobra.Command{
		Use:   "list [--status S] [--limit N]",
		Short: "List a workspace's runs, newest first",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, ws, err := e.connect(cmd, g, f)
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			res, err := c.Runs(ctx, ws, status, "", limit)
			if err != nil {
				return apiError(err)
			}
			if f.json {
				return e.raw(res.Raw)
			}
			rows := make([][]string, 0, len(res.Runs))
			for _, r := range res.Runs {
				conv := "-"
				if r.ConversationPublicID != nil {
					conv = *r.ConversationPublicID
				}
				rows = append(rows, []string{r.PublicID, r.Status, r.CreatedAt, conv})
			}
			return table(e.stdout, "RUN\tSTATUS\tCREATED\tCONVERSATION", rows)
		},
	}
	list.Flags().StringVar(&status, "status", "", "only runs of this status")
	list.Flags().IntVar(&limit, "limit", 0, "at most this many (1..100; default 20)")
	f.registerWorkspace(list)

	var graceful bool
	stop := &cobra.Command{
		Use:   "stop RUN [--graceful]",
		Short: "Stop a run: cancel its work (--graceful lets claimed work finish)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, ws, _, err := e.connectRun(cmd, g, f, args[0])
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			res, err := c.StopRun(ctx, ws, args[0], !graceful)
			if err != nil {
				return apiError(err)
			}
			if f.json {
				return e.raw(res.Raw)
			}
			return fields(e.stdout, "run", res.Run.PublicID, "status", res.Run.Status)
		},
	}
	stop.Flags().BoolVar(&graceful, "graceful", false, "let claimed work finish before the run is canceled")
	f.registerWorkspace(stop)

	cmd.AddCommand(create, show, watch, list, stop, newRunAppend(e, g, f))
	return cmd
}

func newRunAppend(e *env, g *globals, f *adminFlags) *cobra.Command {
	rf := &runFlags{}
	cmd := &cobra.Command{
		Use:   "append RUN (--prompt TEXT | --prompt-file FILE | --tool NAME | --file STEPS) [flags]",
		Short: "Append steps to a standalone run: the way on from needs_attention",
		Long: `Append steps to a standalone run (docs/api.md, "Runs"): the first waits on the run's current
deliverable, or reads it when it has settled, so that a repair step sees the failure; the last
becomes the run's deliverable. A run that needs attention (a halt step failed, or its deliverable
did not complete) runs again: this is how it goes on, short of stopping it with "nexus run stop".

One step from flags, as "nexus run create" takes them: a model step (--prompt or --prompt-file,
--model, --instructions, --kernel-tool, --function, --tools, --attach) or a tool step (--tool,
--input), --runner serving --tool or --function. Or --file STEPS (- for standard input): a JSON
array of steps in the create's grammar, or {"steps": […], "expected_revision": N}.
--expected-revision refuses the append (stale_revision) when the run moved on since you read it.
The accepted keys are printed; --watch waits for the run as "nexus run watch" does, with its exit
codes.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := rf.check(cmd, false); err != nil {
				return err
			}
			c, ws, _, err := e.connectRun(cmd, g, f, args[0])
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			body, err := e.appendBody(ctx, cmd, c, ws, rf)
			if err != nil {
				return err
			}
			res, err := c.AppendSteps(ctx, ws, args[0], body, rf.idempotencyKey)
			if err != nil {
				return apiError(err)
			}
			if rf.watch {
				return e.watchAndReport(ctx, c, f, ws, args[0], rf.timeout, nil)
			}
			if f.json {
				return e.raw(res.Raw)
			}
			r := res.Receipt
			return fields(e.stdout, "run", args[0], "accepted", strings.Join(r.AcceptedTaskKeys, ", "),
				"deliverable", r.DeliverableTaskKey, "revision", fmt.Sprint(r.Revision), "next", "nexus run watch "+args[0])
		},
	}
	rf.register(cmd.Flags(), false)
	f.registerWorkspace(cmd)
	return cmd
}

// appendBody builds the append door's body from the checked flags.
func (e *env) appendBody(ctx context.Context, cmd *cobra.Command, c *client.Client, ws string, rf *runFlags) (any, error) {
	if rf.file != "" {
		b, err := e.readInput(rf.file)
		if err != nil {
			return nil, err
		}
		var steps []json.RawMessage
		if json.Unmarshal(b, &steps) == nil {
			return map[string]any{"steps": steps}, nil
		}
		var obj map[string]json.RawMessage
		if err := json.Unmarshal(b, &obj); err != nil || obj == nil {
			return nil, fmt.Errorf("%s must hold a JSON array of steps, or an object with \"steps\"", rf.file)
		}
		return json.RawMessage(b), nil
	}
	runner, err := runnerID(ctx, c, ws, rf.runner)
	if err != nil {
		return nil, err
	}
	step, err := e.stepObject(ctx, c, ws, rf, runner)
	if err != nil {
		return nil, err
	}
	body := map[string]any{"steps": []any{step}}
	if cmd.Flags().Changed("expected-revision") {
		body["expected_revision"] = rf.expectedRevision
	}
	return body, nil
}

// check refuses flag combinations that make no run or step, before anything is sent.
func (rf *runFlags) check(cmd *cobra.Command, create bool) error {
	fl := cmd.Flags()
	if rf.file != "" {
		what := "the whole run"
		if !create {
			what = "the steps"
		}
		for _, name := range []string{"prompt", "prompt-file", "model", "instructions", "kernel-tool", "function", "import", "eager", "tools", "attach", "tool", "input", "runner", "approval-mode", "expected-revision"} {
			if fl.Changed(name) {
				return usageErrorf("--file carries %s; --%s cannot be added to it", what, name)
			}
		}
		return nil
	}
	hasPrompt := fl.Changed("prompt") || fl.Changed("prompt-file")
	switch {
	case fl.Changed("prompt") && fl.Changed("prompt-file"):
		return usageErrorf("pass one of --prompt and --prompt-file")
	case hasPrompt && rf.tool != "":
		return usageErrorf("a run of one step: pass --prompt (a model step) or --tool (a tool step), not both")
	case !hasPrompt && rf.tool == "":
		return usageErrorf("pass --prompt or --prompt-file (a model step), --tool (a tool step) or --file")
	case rf.tool != "":
		for _, name := range []string{"model", "instructions", "kernel-tool", "function", "import", "eager", "tools", "attach"} {
			if fl.Changed(name) {
				return usageErrorf("--%s belongs to a model step; a tool step takes --input and --runner", name)
			}
		}
	case fl.Changed("input"):
		return usageErrorf("--input belongs to a tool step (--tool)")
	}
	return nil
}

// runObject builds the run object of `nexus run create` from its checked flags.
func (e *env) runObject(ctx context.Context, c *client.Client, ws string, rf *runFlags) (any, error) {
	if rf.file != "" {
		b, err := e.readInput(rf.file)
		if err != nil {
			return nil, err
		}
		if !json.Valid(b) {
			return nil, fmt.Errorf("%s is not JSON", rf.file)
		}
		return json.RawMessage(b), nil
	}
	run := map[string]any{"approval_mode": rf.approvalMode}
	runner, err := runnerID(ctx, c, ws, rf.runner)
	if err != nil {
		return nil, err
	}
	if runner != "" {
		run["default_runner_executor_public_id"] = runner
	}
	step, err := e.stepObject(ctx, c, ws, rf, runner)
	if err != nil {
		return nil, err
	}
	run["steps"] = []any{step}
	return run, nil
}

// runnerID is resolveRunner for an optional reference: "" for none.
func runnerID(ctx context.Context, c *client.Client, ws, ref string) (string, error) {
	if ref == "" {
		return "", nil
	}
	return resolveRunner(ctx, c, ws, ref)
}

// stepObject builds the one step of the flags: a tool step, routed to runner when one is given,
// or a model step whose --function tools runner serves (the tool providers without one), its
// --attach files uploaded.
func (e *env) stepObject(ctx context.Context, c *client.Client, ws string, rf *runFlags, runner string) (any, error) {
	if rf.tool != "" {
		step := map[string]any{"name": rf.tool}
		if rf.input != "" {
			var in map[string]json.RawMessage
			if err := json.Unmarshal([]byte(rf.input), &in); err != nil || in == nil {
				return nil, fmt.Errorf("--input must be a JSON object: %s", rf.input)
			}
			step["input"] = json.RawMessage(rf.input)
		}
		if runner != "" {
			step["route"] = map[string]string{"kind": "runner", "runner_executor_public_id": runner}
		}
		return map[string]any{"tool": step}, nil
	}
	prompt := rf.prompt
	if rf.promptFile != "" {
		b, err := e.readInput(rf.promptFile)
		if err != nil {
			return nil, err
		}
		prompt = string(b)
	}
	step := map[string]any{"prompt": prompt}
	if rf.model != "" {
		step["model"] = rf.model
	}
	if rf.instructions != "" {
		step["instructions"] = rf.instructions
	}
	if len(rf.kernelTools) > 0 {
		step["kernel_tools"] = rf.kernelTools
	}
	if len(rf.imports) > 0 {
		step["tool_provider_tools"] = rf.imports
	}
	if len(rf.eager) > 0 {
		step["eager_tool_names"] = rf.eager
	}
	var tools []json.RawMessage
	if rf.toolsFile != "" {
		b, err := e.readInput(rf.toolsFile)
		if err != nil {
			return nil, err
		}
		if err := json.Unmarshal(b, &tools); err != nil {
			return nil, fmt.Errorf("%s must hold a JSON array of tool declarations: %w", rf.toolsFile, err)
		}
	}
	for _, name := range rf.functions {
		entry, err := servedFunction(ctx, c, ws, runner, name)
		if err != nil {
			return nil, err
		}
		tools = append(tools, entry)
	}
	if len(tools) > 0 {
		step["tools"] = tools
	}
	if len(rf.attach) > 0 {
		ids, err := e.attachAll(ctx, c, rf.attach)
		if err != nil {
			return nil, err
		}
		step["attachments"] = ids
	}
	return map[string]any{"model": step}, nil
}

// servedFunction declares the tool an executor of ws serves under name as a function tool, with
// the description and input schema it announces: routed to runner when one is given, else
// served by the workspace's tool providers.
func servedFunction(ctx context.Context, c *client.Client, ws, runner, name string) (json.RawMessage, error) {
	kind := "tool_provider"
	if runner != "" {
		kind = "runner"
	}
	res, err := c.Executors(ctx, &client.ListExecutorsRequest{Kind: kind, Workspace: ws})
	if err != nil {
		return nil, apiError(err)
	}
	for _, x := range res.Executors {
		if runner != "" && x.PublicID != runner {
			continue
		}
		for _, raw := range x.ServedTools {
			var t struct {
				Name        string          `json:"name"`
				Description string          `json:"description"`
				InputSchema json.RawMessage `json:"input_schema"`
			}
			if json.Unmarshal(raw, &t) != nil || t.Name != name {
				continue
			}
			entry := map[string]any{"type": "function", "name": name, "description": t.Description}
			if len(t.InputSchema) > 0 {
				entry["parameters"] = t.InputSchema
			}
			if runner != "" {
				entry["route"] = map[string]string{"kind": "runner", "runner_executor_public_id": runner, "tool_name": name}
			}
			return json.Marshal(entry)
		}
	}
	if runner != "" {
		return nil, fmt.Errorf("runner %s does not announce a tool %q (has it started? nexus executor wait)", runner, name)
	}
	return nil, fmt.Errorf("no tool provider of workspace %s announces a tool %q (nexus executor list --kind tool_provider)", ws, name)
}

// resolveRunner finds an active runner of ws by public id or display name.
func resolveRunner(ctx context.Context, c *client.Client, ws, ref string) (string, error) {
	if identity.IsUUID(ref) {
		return strings.ToLower(ref), nil
	}
	res, err := c.Executors(ctx, &client.ListExecutorsRequest{Kind: "runner", Workspace: ws})
	if err != nil {
		return "", apiError(err)
	}
	var found []string
	for _, x := range res.Executors {
		if x.DisplayName == ref {
			found = append(found, x.PublicID)
		}
	}
	switch len(found) {
	case 1:
		return found[0], nil
	case 0:
		return "", fmt.Errorf("no active runner %q in workspace %s (nexus executor list --kind runner)", ref, ws)
	}
	return "", fmt.Errorf("%d active runners are called %q in workspace %s: pass a public id", len(found), ref, ws)
}

// findRun reads a run: in the workspace --workspace or the environment names, else in the
// caller's only workspace, else in whichever of the caller's workspaces holds it.
func (e *env) findRun(ctx context.Context, cmd *cobra.Command, c *client.Client, f *adminFlags, run string) (string, *client.RunResponse, error) {
	if ref := e.workspaceRef(cmd, f); ref != "" {
		ws, err := workspaceHandle(ctx, c, ref)
		if err != nil {
			return "", nil, err
		}
		res, err := c.Run(ctx, ws, run)
		if err != nil {
			return "", nil, apiError(err)
		}
		return ws, res, nil
	}
	ws, err := c.Workspaces(ctx)
	if err != nil {
		return "", nil, apiError(err)
	}
	for _, w := range ws.Workspaces {
		res, err := c.Run(ctx, w.Handle, run)
		if isNotFound(err) && len(ws.Workspaces) > 1 {
			continue
		}
		if err != nil {
			return "", nil, apiError(err)
		}
		return w.Handle, res, nil
	}
	return "", nil, fmt.Errorf("no run %s in any of your workspaces", run)
}

// printRun writes a run's summary and its tasks.
func (e *env) printRun(ws string, r *client.Run) error {
	answer := "-"
	if r.Answer != nil {
		answer = *r.Answer
	}
	pairs := []string{"run", r.PublicID, "workspace", ws, "status", r.Status}
	if r.ConversationPublicID != nil {
		pairs = append(pairs, "conversation", *r.ConversationPublicID)
	}
	pairs = append(pairs, "answer", answer)
	for _, a := range r.Attention {
		pairs = append(pairs, "attention", a.Reason+": "+strings.Join(a.TaskKeys, ", "))
	}
	if err := fields(e.stdout, pairs...); err != nil {
		return err
	}
	if len(r.Tasks) == 0 {
		return nil
	}
	fmt.Fprintln(e.stdout)
	rows := make([][]string, 0, len(r.Tasks))
	for _, t := range r.Tasks {
		what := t.Model
		if t.ToolName != "" {
			what = t.ToolName
		}
		if what == "" {
			what = "-"
		}
		problem := "-"
		if t.Error != nil {
			problem = t.Error.Key
			if t.Error.Detail != "" {
				problem += ": " + oneLine(t.Error.Detail)
			}
		}
		rows = append(rows, []string{t.Key, t.Kind, t.Status, what, problem})
	}
	return table(e.stdout, "TASK\tKIND\tSTATUS\tMODEL OR TOOL\tERROR", rows)
}
