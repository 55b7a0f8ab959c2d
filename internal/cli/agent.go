package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/nexuskernel/nexus/sdk/client"
)

func newAgent(e *env, g *globals) *cobra.Command {
	f := &adminFlags{}
	cmd := &cobra.Command{Use: "agent", Short: "Create, list, configure and re-token a workspace's agents"}
	f.register(cmd)

	var displayName, steward string
	create := &cobra.Command{
		Use:   "create HANDLE [--display-name NAME] [--steward USER]",
		Short: "Create an agent (workspace owners); prints its token once",
		Long: `Create an agent in a workspace you own. Its steward (the person it acts for) is you unless
--steward names another user member of the workspace, by public id or handle.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := e.client(cmd, g, &f.clientFlags)
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			ws, err := e.resolveWorkspace(ctx, cmd, c, f)
			if err != nil {
				return err
			}
			req := &client.CreateAgentRequest{Handle: args[0], DisplayName: displayName}
			if req.DisplayName == "" {
				req.DisplayName = args[0]
			}
			if steward != "" {
				if req.StewardUserPublicID, err = resolveMember(ctx, c, ws, steward, "user"); err != nil {
					return err
				}
			}
			res, err := c.CreateAgent(ctx, ws, req)
			if err != nil {
				return apiError(err)
			}
			switch {
			case f.json:
				return e.raw(res.Raw)
			case f.quiet:
				_, err := fmt.Fprintln(e.stdout, res.Token)
				return err
			}
			people, err := memberHandles(ctx, c, ws)
			if err != nil {
				return err
			}
			a := res.Agent
			return fields(e.stdout, "agent", a.Handle, "display name", a.DisplayName, "public id", a.PublicID,
				"workspace", ws, "steward", people.of(a.StewardUserPublicID), "token", res.Token+"  "+shownOnce)
		},
	}
	create.Flags().StringVar(&displayName, "display-name", "", "the agent's display name (default: the handle)")
	create.Flags().StringVar(&steward, "steward", "", "the steward user, public id or handle (default: you)")
	f.registerWorkspace(create)
	f.registerQuiet(create, "the token")

	list := &cobra.Command{
		Use:   "list",
		Short: "List a workspace's agents",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, ws, err := e.connect(cmd, g, f)
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			res, err := c.Agents(ctx, ws)
			if err != nil {
				return apiError(err)
			}
			if f.json {
				return e.raw(res.Raw)
			}
			people, err := memberHandles(ctx, c, ws)
			if err != nil {
				return err
			}
			rows := make([][]string, 0, len(res.Agents))
			for _, a := range res.Agents {
				rows = append(rows, []string{a.Handle, a.DisplayName, a.PublicID, people.of(a.StewardUserPublicID), when(a.CreatedAt)})
			}
			return table(e.stdout, "HANDLE\tDISPLAY NAME\tPUBLIC ID\tSTEWARD\tCREATED", rows)
		},
	}
	f.registerWorkspace(list)

	show := &cobra.Command{
		Use:   "show AGENT",
		Short: "Show an agent's profile: instructions, default model, tools, approvals (its steward or an owner)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, ws, err := e.connect(cmd, g, f)
			if err != nil {
				return err
			}
			res, err := c.AgentProfileConfiguration(cmd.Context(), ws, args[0])
			if err != nil {
				return apiError(err)
			}
			return e.printProfile(cmd.Context(), c, f, ws, args[0], res)
		},
	}
	f.registerWorkspace(show)

	cmd.AddCommand(create, list, show, newAgentConfigure(e, g, f), newAgentToken(e, g, f))
	return cmd
}

// profileFlags are the flags of `nexus agent configure`: each given flag replaces its field of
// the profile; fields without a flag keep their value (or are cleared with --reset).
type profileFlags struct {
	file, instructions, instructionsFile, model  string
	kernelTools, functions, runners, runnerTools []string
	imports, eager                               []string
	toolsFile, approvalMode, rulesFile           string
	rules                                        []string
	reset, pin, repin, dryRun                    bool
	pack                                         string
}

// profileFieldFlags are the flags that set a profile field; --file excludes them all.
var profileFieldFlags = []string{"instructions", "instructions-file", "model", "kernel-tool", "function", "tools",
	"runner", "runner-tool", "import", "eager", "pin", "repin", "approval-mode", "rule", "rules-file", "reset", "pack"}

// declarationSources are the configuration fields an assembly reads.
var declarationSources = []string{"tool_definitions", "kernel_tools", "runner_executor_public_ids", "runner_tool_names",
	"tool_provider_tools", "eager_tool_names"}

func newAgentConfigure(e *env, g *globals, f *adminFlags) *cobra.Command {
	pf := &profileFlags{}
	cmd := &cobra.Command{
		Use:   "configure AGENT [flags]",
		Short: "Set an agent's instructions, default model, tools and approvals (its steward or an owner)",
		Long: `Change the profile an agent answers conversations with; every turn it answers after this
freezes the profile as it stands then (docs/api.md, "An agent's profile and tokens"). AGENT is
the agent's handle or public id. Its steward or an owner of its workspace may do this.

Each flag given replaces its field and the other fields keep their values; --reset starts from
the empty profile instead. A flag given an empty value empties its field: --model "" leaves the
agent on the deployment's default_model, --kernel-tool "" imports no kernel tool, --runner-tool ""
imports none of the runner's tools (--reset brings back the default, all of them).

  --instructions TEXT, --instructions-file FILE   the standing system instructions
  --model REF                                     the default model, provider/model
  --kernel-tool NAME                              kernel tools by canonical name (nexus.memory.read)
  --function NAME                                 a tool provider's tool, its description and schema
                                                  copied from the provider's announcement
  --tools FILE                                    declaration entries (a JSON array), with --function
                                                  the whole explicit declaration
  --runner RUNNER, --runner-tool NAME             runner imports: the candidate runners (public id or
                                                  display name) and the served names to import
                                                  (default: all of the selected runner's tools)
  --import NAME                                   the tool providers' tools to import: a name, or a
                                                  prefix with a trailing "*" ('fs_*'; '*' for all)
  --eager NAME                                    an imported tool offered eagerly, not deferred
  --pin, --repin                                  pin what the profile imports (--pin=false unpins);
                                                  --repin accepts the tools' current definitions
  --pack NAME                                     a shipped adaptation pack (` + strings.Join(client.ShippedPacks(), ", ") + `):
                                                  its aliases, rendered against the server's catalog,
                                                  replace the entries of their names
  --approval-mode bypass|ask|rules                required once the profile declares tools
  --rule TOOL=VERDICT, --rules-file FILE          approval rules: TOOL is a glob, VERDICT allow, ask
                                                  or deny; the file holds the rule list as JSON

--file FILE (- for standard input) sends a whole configuration object instead, as the API takes it.
The profile is printed afterwards (--json: the API's body). --dry-run changes nothing and prints
what the agent's new work would freeze with the flags applied: each imported tool, its source and
pin, and the import problems it would meet now.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			fl := cmd.Flags()
			given := false
			for _, name := range profileFieldFlags {
				if fl.Changed(name) {
					given = true
					if pf.file != "" {
						return usageErrorf("--file carries the whole configuration; --%s cannot be added to it", name)
					}
				}
			}
			switch {
			case pf.file == "" && !given && !pf.dryRun:
				return usageErrorf("give a field to change (see --help), or --file with a whole configuration")
			case fl.Changed("instructions") && fl.Changed("instructions-file"):
				return usageErrorf("pass one of --instructions and --instructions-file")
			case fl.Changed("rule") && fl.Changed("rules-file"):
				return usageErrorf("pass one of --rule and --rules-file")
			}
			c, ws, err := e.connect(cmd, g, f)
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			cfg, err := e.profileObject(ctx, cmd, c, ws, args[0], pf)
			if err != nil {
				return err
			}
			if pf.dryRun {
				return e.dryRun(ctx, cmd, c, f, ws, args[0], cfg)
			}
			res, err := c.PutAgentProfileConfiguration(ctx, ws, args[0], map[string]any{"configuration": cfg})
			if err != nil {
				return apiError(err)
			}
			return e.printProfile(ctx, c, f, ws, args[0], res)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&pf.file, "file", "", "send the configuration object in FILE (- for standard input)")
	fl.StringVar(&pf.instructions, "instructions", "", "the standing instructions (\"\" clears them)")
	fl.StringVar(&pf.instructionsFile, "instructions-file", "", "read the instructions from FILE (- for standard input)")
	fl.StringVar(&pf.model, "model", "", "the default model, provider/model (\"\" clears it)")
	fl.StringSliceVar(&pf.kernelTools, "kernel-tool", nil, "a kernel tool by canonical name (repeatable, or comma-separated)")
	fl.StringSliceVar(&pf.functions, "function", nil, "a tool provider's tool by its served name (repeatable)")
	fl.StringVar(&pf.toolsFile, "tools", "", "a JSON file holding declaration entries")
	fl.StringSliceVar(&pf.runners, "runner", nil, "a candidate runner, public id or display name (repeatable)")
	fl.StringSliceVar(&pf.runnerTools, "runner-tool", nil, "a runner tool to import by served name (repeatable; default: all)")
	fl.StringSliceVar(&pf.imports, "import", nil, `the tool providers' tools to import: a name, or a prefix and "*" (repeatable)`)
	fl.StringSliceVar(&pf.eager, "eager", nil, "an imported tool to offer eagerly (repeatable)")
	fl.BoolVar(&pf.pin, "pin", false, "pin the imported tools' definitions (--pin=false unpins)")
	fl.BoolVar(&pf.repin, "repin", false, "pin the imported tools' current definitions, replacing the recorded ones")
	fl.BoolVar(&pf.dryRun, "dry-run", false, "print what the agent's new work would freeze, changing nothing")
	fl.StringVar(&pf.approvalMode, "approval-mode", "", "bypass, ask or rules")
	fl.StringArrayVar(&pf.rules, "rule", nil, "an approval rule TOOL=VERDICT (repeatable)")
	fl.StringVar(&pf.rulesFile, "rules-file", "", "a JSON file holding the approval rule list")
	fl.BoolVar(&pf.reset, "reset", false, "start from the empty profile instead of the current one")
	fl.StringVar(&pf.pack, "pack", "", "add a shipped adaptation pack's aliases ("+strings.Join(client.ShippedPacks(), ", ")+")")
	f.registerWorkspace(cmd)
	return cmd
}

// profileObject builds the configuration object `nexus agent configure` sends: the file's, or
// the current profile (the empty one with --reset) with each given flag's field replaced.
func (e *env) profileObject(ctx context.Context, cmd *cobra.Command, c *client.Client, ws, agent string, pf *profileFlags) (any, error) {
	if pf.file != "" {
		b, err := e.readInput(pf.file)
		if err != nil {
			return nil, err
		}
		var obj map[string]json.RawMessage
		if err := json.Unmarshal(b, &obj); err != nil || obj == nil {
			return nil, fmt.Errorf("%s must hold a JSON object, the configuration", pf.file)
		}
		return json.RawMessage(b), nil
	}
	cfg := map[string]any{}
	if !pf.reset {
		cur, err := c.AgentProfileConfiguration(ctx, ws, agent)
		if err != nil {
			return nil, apiError(err)
		}
		var fieldsOf map[string]json.RawMessage
		if err := json.Unmarshal(cur.Raw, &struct {
			Configuration *map[string]json.RawMessage `json:"configuration"`
		}{&fieldsOf}); err != nil {
			return nil, fmt.Errorf("unreadable profile: %w", err)
		}
		for k, v := range fieldsOf {
			cfg[k] = v
		}
	}
	fl := cmd.Flags()
	orNull := func(s string) any {
		if s == "" {
			return nil
		}
		return s
	}
	switch {
	case fl.Changed("instructions"):
		cfg["instructions"] = orNull(pf.instructions)
	case fl.Changed("instructions-file"):
		b, err := e.readInput(pf.instructionsFile)
		if err != nil {
			return nil, err
		}
		cfg["instructions"] = orNull(string(b))
	}
	if fl.Changed("model") {
		cfg["default_model"] = orNull(pf.model)
	}
	if fl.Changed("kernel-tool") {
		cfg["kernel_tools"] = nonNil(pf.kernelTools)
	}
	if fl.Changed("function") || fl.Changed("tools") {
		defs := []json.RawMessage{}
		if pf.toolsFile != "" {
			b, err := e.readInput(pf.toolsFile)
			if err != nil {
				return nil, err
			}
			if err := json.Unmarshal(b, &defs); err != nil {
				return nil, fmt.Errorf("%s must hold a JSON array of tool declarations: %w", pf.toolsFile, err)
			}
		}
		for _, name := range pf.functions {
			entry, err := servedFunction(ctx, c, ws, "", name)
			if err != nil {
				return nil, err
			}
			defs = append(defs, entry)
		}
		cfg["tool_definitions"] = defs
	}
	if fl.Changed("pack") {
		if err := applyPack(ctx, c, cfg, pf.pack); err != nil {
			return nil, err
		}
	}
	if fl.Changed("runner") {
		ids := []string{}
		for _, r := range pf.runners {
			id, err := resolveRunner(ctx, c, ws, r)
			if err != nil {
				return nil, err
			}
			ids = append(ids, id)
		}
		cfg["runner_executor_public_ids"] = ids
	}
	if fl.Changed("runner-tool") {
		cfg["runner_tool_names"] = nonNil(pf.runnerTools)
	}
	if fl.Changed("import") {
		cfg["tool_provider_tools"] = nonNil(pf.imports)
	}
	if fl.Changed("eager") {
		cfg["eager_tool_names"] = nonNil(pf.eager)
	}
	if fl.Changed("pin") {
		cfg["pin_imports"] = pf.pin
	}
	if pf.repin {
		cfg["pin_imports"], cfg["repin"] = true, true
	}
	if fl.Changed("approval-mode") {
		cfg["approval_mode"] = orNull(pf.approvalMode)
	}
	switch {
	case fl.Changed("rule"):
		rules := []map[string]string{}
		for _, r := range pf.rules {
			tool, verdict, ok := strings.Cut(r, "=")
			if !ok || tool == "" || verdict == "" {
				return nil, usageErrorf("--rule takes TOOL=VERDICT (memory_*=allow), not %q", r)
			}
			rules = append(rules, map[string]string{"tool": tool, "verdict": verdict})
		}
		cfg["approval_rules"] = rules
	case fl.Changed("rules-file"):
		b, err := e.readInput(pf.rulesFile)
		if err != nil {
			return nil, err
		}
		if !json.Valid(b) {
			return nil, fmt.Errorf("%s is not JSON", pf.rulesFile)
		}
		cfg["approval_rules"] = json.RawMessage(b)
	}
	return cfg, nil
}

// dryRun prints what the agent's new work would freeze (the member door's assembly): with the
// declaration sources of cfg when a flag changed one, else the stored profile, pins included.
func (e *env) dryRun(ctx context.Context, cmd *cobra.Command, c *client.Client, f *adminFlags, ws, agent string, cfg any) error {
	req := &client.AssemblyRequest{}
	changed := false
	for _, name := range []string{"function", "tools", "kernel-tool", "runner", "runner-tool", "import", "eager", "reset", "file"} {
		changed = changed || cmd.Flags().Changed(name)
	}
	if changed {
		raw, err := json.Marshal(cfg)
		if err != nil {
			return err
		}
		var all map[string]json.RawMessage
		if err := json.Unmarshal(raw, &all); err != nil {
			return fmt.Errorf("the configuration is not a JSON object: %w", err)
		}
		proposal := map[string]json.RawMessage{}
		for _, k := range declarationSources {
			if v, ok := all[k]; ok {
				proposal[k] = v
			}
		}
		b, err := json.Marshal(proposal)
		if err != nil {
			return err
		}
		var ac client.AssemblyConfiguration
		if err := json.Unmarshal(b, &ac); err != nil {
			return fmt.Errorf("the configuration's declaration: %w", err)
		}
		req.Configuration = &ac
	}
	res, err := c.AssembleAgentTools(ctx, ws, agent, req)
	if err != nil {
		return apiError(err)
	}
	if f.json {
		return e.raw(res.Raw)
	}
	for _, t := range res.Imports {
		pin, when := "-", "eager"
		if t.Pin != nil {
			pin = *t.Pin
		}
		if t.Deferred {
			when = "deferred"
		}
		if _, err := fmt.Fprintf(e.stdout, "%s\t%s\t%s\t%s\tpin %s\n", t.Callable, t.Source, t.ToolName, when, pin); err != nil {
			return err
		}
	}
	for _, p := range res.Problems {
		if _, err := fmt.Fprintf(e.stdout, "problem %s: %s\n", p.Code, p.Message); err != nil {
			return err
		}
	}
	return nil
}

// nonNil is s, or an empty list: a flag given empty sends [] (none), never null.
func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// printProfile writes an agent's profile as the people who configure it read it: tools by
// callable name, runners by display name.
func (e *env) printProfile(ctx context.Context, c *client.Client, f *adminFlags, ws, agent string, res *client.ProfileConfigurationResponse) error {
	if f.json {
		return e.raw(res.Raw)
	}
	p := res.Configuration
	opt := func(s *string) string {
		if s == nil {
			return "-"
		}
		return oneLine(*s)
	}
	list := func(s []string) string {
		if len(s) == 0 {
			return "-"
		}
		return strings.Join(s, ", ")
	}
	var entries []json.RawMessage
	_ = json.Unmarshal(p.ToolDefinitions, &entries)
	var tools []string
	for _, raw := range entries {
		var t struct {
			Name     string `json:"name"`
			Function struct {
				Name string `json:"name"`
			} `json:"function"`
		}
		if json.Unmarshal(raw, &t) == nil {
			if t.Name == "" {
				t.Name = t.Function.Name
			}
			tools = append(tools, t.Name)
		}
	}
	runners := make([]string, len(p.RunnerExecutorPublicIDs))
	if len(runners) > 0 {
		names, err := runnerNames(ctx, c, ws)
		if err != nil {
			return err
		}
		for i, id := range p.RunnerExecutorPublicIDs {
			runners[i] = names.of(id)
		}
	}
	runnerTools := "all"
	if p.RunnerToolNames != nil {
		runnerTools = list(p.RunnerToolNames)
		if len(p.RunnerToolNames) == 0 {
			runnerTools = "none"
		}
	}
	rules := "-"
	if len(p.ApprovalRules) > 0 && string(p.ApprovalRules) != "null" {
		rules = compactJSON(p.ApprovalRules)
	}
	// A write's import problems: stored anyway, since a provider may be restarting, but work
	// created while they last is refused.
	for _, pr := range res.Imports.Problems {
		fmt.Fprintf(e.stderr, "warning: %s: %s\n", pr.Code, pr.Message)
	}
	return fields(e.stdout, "agent", agent, "workspace", ws, "default model", opt(p.DefaultModel),
		"instructions", opt(p.Instructions), "kernel tools", list(p.KernelTools), "tools", list(tools),
		"runners", list(runners), "runner tools", runnerTools, "imports", list(p.ToolProviderTools),
		"eager", list(p.EagerToolNames), "pinned", pinned(res.Imports.Pins), "approval mode", opt(p.ApprovalMode), "approval rules", rules)
}

// pinned lists recorded pins as name=digest, "-" when the profile does not pin.
func pinned(pins []client.Pin) string {
	if pins == nil {
		return "-"
	}
	out := make([]string, len(pins))
	for i, p := range pins {
		out[i] = p.Name + "=" + p.Digest
	}
	if len(out) == 0 {
		return "none"
	}
	return strings.Join(out, ", ")
}

// runnerNames maps the public ids of ws's runners, revoked ones included, to display names.
func runnerNames(ctx context.Context, c *client.Client, ws string) (names, error) {
	n := names{}
	for _, status := range []string{"active", "revoked"} {
		res, err := c.Executors(ctx, &client.ListExecutorsRequest{Kind: "runner", Status: status, Workspace: ws})
		if err != nil {
			return nil, apiError(err)
		}
		for _, x := range res.Executors {
			n[x.PublicID] = x.DisplayName
		}
	}
	return n, nil
}

func newAgentToken(e *env, g *globals, f *adminFlags) *cobra.Command {
	var label string
	var expiresIn time.Duration
	var revokeOthers bool
	cmd := &cobra.Command{
		Use:   "token AGENT [--label LABEL] [--expires-in D] [--revoke-others]",
		Short: "Mint a new token for an agent (its steward or an owner); prints it once",
		Long: `Mint a new member token for an agent, by its steward or an owner of its workspace. The token
is labelled LABEL, or "minted by <your handle>". --revoke-others revokes every other token of
the agent at once, on every instance: the way back when the agent's token is lost or leaked.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if expiresIn < 0 {
				return usageErrorf("--expires-in must be positive")
			}
			c, ws, err := e.connect(cmd, g, f)
			if err != nil {
				return err
			}
			req := &client.CreateAgentTokenRequest{Label: label, RevokeOthers: revokeOthers}
			if expiresIn > 0 {
				at := time.Now().Add(expiresIn)
				req.ExpiresAt = &at
			}
			res, err := c.CreateAgentToken(cmd.Context(), ws, args[0], req)
			if err != nil {
				return apiError(err)
			}
			switch {
			case f.json:
				return e.raw(res.Raw)
			case f.quiet:
				_, err := fmt.Fprintln(e.stdout, res.Token)
				return err
			}
			i := res.TokenInfo
			return fields(e.stdout, "agent", res.Agent.Handle, "workspace", ws, "token", res.Token+"  "+shownOnce,
				"public id", i.PublicID, "label", i.Label, "expires", whenOpt(i.ExpiresAt),
				"revoked", plural(len(res.RevokedTokenPublicIDs), "other token"))
		},
	}
	cmd.Flags().StringVar(&label, "label", "", `a label naming the token (default: "minted by <your handle>")`)
	cmd.Flags().DurationVar(&expiresIn, "expires-in", 0, "lifetime, for example 720h (default: no expiry)")
	cmd.Flags().BoolVar(&revokeOthers, "revoke-others", false, "revoke every other token of the agent (a lost token)")
	f.registerWorkspace(cmd)
	f.registerQuiet(cmd, "the token")
	return cmd
}

// plural counts n things: "1 other token", "2 other tokens".
func plural(n int, thing string) string {
	if n == 1 {
		return "1 " + thing
	}
	return fmt.Sprintf("%d %ss", n, thing)
}
