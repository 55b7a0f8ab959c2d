package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/nexuskernel/nexus/core/identity"
	"github.com/nexuskernel/nexus/sdk/client"
)

func newExecutor(e *env, g *globals) *cobra.Command {
	f := &adminFlags{}
	cmd := &cobra.Command{Use: "executor", Short: "Create, list, rotate and revoke runners and tool providers"}
	f.register(cmd)

	printToken := func(ctx context.Context, c *client.Client, res *client.ExecutorTokenResponse) error {
		switch {
		case f.json:
			return e.raw(res.Raw)
		case f.quiet:
			_, err := fmt.Fprintln(e.stdout, res.Token)
			return err
		}
		x := res.Executor
		ws, err := workspaceHandle(ctx, c, x.WorkspacePublicID)
		if err != nil {
			return err
		}
		return fields(e.stdout, "executor", x.DisplayName, "kind", x.Kind, "public id", x.PublicID, "status", x.Status,
			"workspace", ws, "token", res.Token+"  "+shownOnce)
	}

	var kind string
	create := &cobra.Command{
		Use:   "create DISPLAY_NAME [--kind runner|tool_provider]",
		Short: "Create an executor in a workspace you own; prints its token once",
		Long: `Create a runner or a tool provider. --workspace may be left out when you own exactly one
workspace. The executor's token (nxe_…) opens the executor plane and nothing else.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := e.client(cmd, g, &f.clientFlags)
			if err != nil {
				return err
			}
			res, err := c.CreateExecutor(cmd.Context(), &client.CreateExecutorRequest{
				Kind: kind, DisplayName: args[0], WorkspacePublicID: e.workspaceRef(cmd, f),
			})
			if err != nil {
				return apiError(err)
			}
			return printToken(cmd.Context(), c, res)
		},
	}
	create.Flags().StringVar(&kind, "kind", "runner", "runner or tool_provider")
	f.registerWorkspace(create)
	f.registerQuiet(create, "the token")

	var listKind, listStatus string
	list := &cobra.Command{
		Use:   "list [--kind runner|tool_provider] [--status active|revoked]",
		Short: "List the executors of your workspaces (active ones unless --status says otherwise)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := e.client(cmd, g, &f.clientFlags)
			if err != nil {
				return err
			}
			res, err := c.Executors(cmd.Context(), &client.ListExecutorsRequest{Kind: listKind, Status: listStatus, Workspace: e.workspaceRef(cmd, f)})
			if err != nil {
				return apiError(err)
			}
			if f.json {
				return e.raw(res.Raw)
			}
			wsNames, err := workspaceHandles(cmd.Context(), c)
			if err != nil {
				return err
			}
			rows := make([][]string, 0, len(res.Executors))
			for _, x := range res.Executors {
				rows = append(rows, []string{x.DisplayName, x.Kind, x.Status, x.Presence, whenOpt(x.LastSeenAt), x.PublicID, wsNames.of(x.WorkspacePublicID)})
			}
			return table(e.stdout, "DISPLAY NAME\tKIND\tSTATUS\tPRESENCE\tLAST SEEN\tPUBLIC ID\tWORKSPACE", rows)
		},
	}
	list.Flags().StringVar(&listKind, "kind", "", "only runner or tool_provider")
	list.Flags().StringVar(&listStatus, "status", "", "active (default) or revoked")
	list.Flags().StringVarP(&f.workspace, "workspace", "w", "", "only this workspace (env "+EnvWorkspace+"; default: all of yours)")

	rotate := &cobra.Command{
		Use:   "rotate PUBLIC_ID",
		Short: "Mint a new token for an executor and invalidate its old ones (workspace owners)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := e.client(cmd, g, &f.clientFlags)
			if err != nil {
				return err
			}
			res, err := c.RotateExecutorToken(cmd.Context(), args[0])
			if err != nil {
				return apiError(err)
			}
			return printToken(cmd.Context(), c, res)
		},
	}
	f.registerQuiet(rotate, "the token")

	revoke := &cobra.Command{
		Use:   "revoke PUBLIC_ID",
		Short: "Revoke an executor: its tokens stop working at once; revocation is final (workspace owners)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := e.client(cmd, g, &f.clientFlags)
			if err != nil {
				return err
			}
			res, err := c.RevokeExecutor(cmd.Context(), args[0])
			if err != nil {
				return apiError(err)
			}
			if f.json {
				return e.raw(res.Raw)
			}
			x := res.Executor
			return fields(e.stdout, "executor", x.DisplayName, "kind", x.Kind, "public id", x.PublicID, "status", x.Status)
		},
	}
	var waitTool string
	var waitTimeout time.Duration
	wait := &cobra.Command{
		Use:   "wait EXECUTOR [--tool NAME] [--timeout D]",
		Short: "Wait until an executor (public id or display name) has announced, or serves --tool",
		Long: `Wait until an executor has announced its tools (with --tool, until it serves that one), then
print what it serves. A script that starts "nexus runner" in the background runs this before the
runs that need the runner's tools: until the runner announces, they are refused tool_not_served.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := e.client(cmd, g, &f.clientFlags)
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			ref := e.workspaceRef(cmd, f)
			x, err := poll(ctx, waitTimeout, func(ctx context.Context) (*client.Executor, error) {
				return findExecutor(ctx, c, ref, args[0])
			}, func(x *client.Executor) bool { return x != nil && servesTool(x, waitTool) })
			if errors.Is(err, errWatchTimeout) {
				return fmt.Errorf("executor %s did not announce %s within %s", args[0], orAnything(waitTool), waitTimeout)
			}
			if err != nil {
				return apiError(err)
			}
			names := servedNames(x)
			return fields(e.stdout, "executor", x.DisplayName, "public id", x.PublicID, "serves", strings.Join(names, ", "))
		},
	}
	wait.Flags().StringVar(&waitTool, "tool", "", "wait until the executor serves this tool")
	wait.Flags().DurationVar(&waitTimeout, "timeout", 30*time.Second, "give up after this long (0: never)")
	wait.Flags().StringVarP(&f.workspace, "workspace", "w", "", "the executor's workspace (env "+EnvWorkspace+"; default: all of yours)")

	cmd.AddCommand(create, list, rotate, revoke, wait)
	return cmd
}

// findExecutor reads an active executor by public id, or by display name among the active
// executors of ws ("" for all the caller's workspaces). A display name nothing holds yet is nil,
// not an error: the executor may be about to be created.
func findExecutor(ctx context.Context, c *client.Client, ws, ref string) (*client.Executor, error) {
	if identity.IsUUID(ref) {
		res, err := c.Executor(ctx, ref)
		if err != nil {
			return nil, err
		}
		return &res.Executor, nil
	}
	res, err := c.Executors(ctx, &client.ListExecutorsRequest{Workspace: ws})
	if err != nil {
		return nil, err
	}
	var found *client.Executor
	for i := range res.Executors {
		if res.Executors[i].DisplayName != ref {
			continue
		}
		if found != nil {
			return nil, fmt.Errorf("several executors are called %q: pass a public id or --workspace", ref)
		}
		found = &res.Executors[i]
	}
	return found, nil
}

// servedNames lists the names of an executor's announced tools.
func servedNames(x *client.Executor) []string {
	var names []string
	for _, raw := range x.ServedTools {
		var t struct {
			Name string `json:"name"`
		}
		if json.Unmarshal(raw, &t) == nil {
			names = append(names, t.Name)
		}
	}
	return names
}

// servesTool reports whether an executor has announced, and serves tool when one is named.
func servesTool(x *client.Executor, tool string) bool {
	if x.AnnouncedAt == nil {
		return false
	}
	if tool == "" {
		return true
	}
	for _, n := range servedNames(x) {
		if n == tool {
			return true
		}
	}
	return false
}

func orAnything(tool string) string {
	if tool == "" {
		return "its tools"
	}
	return tool
}
