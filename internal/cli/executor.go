package cli

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/nexuskernel/nexus/sdk/client"
)

func newExecutor(e *env, g *globals) *cobra.Command {
	f := &adminFlags{}
	cmd := &cobra.Command{Use: "executor", Short: "Create, list, rotate and revoke runners and tool providers"}
	f.register(cmd)

	printToken := func(res *client.ExecutorTokenResponse) error {
		switch {
		case f.json:
			return e.raw(res.Raw)
		case f.quiet:
			_, err := fmt.Fprintln(e.stdout, res.Token)
			return err
		}
		x := res.Executor
		return fields(e.stdout, "executor", x.DisplayName, "kind", x.Kind, "public id", x.PublicID, "status", x.Status,
			"workspace", x.WorkspacePublicID, "token", res.Token+"  "+shownOnce)
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
			return printToken(res)
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
			rows := make([][]string, 0, len(res.Executors))
			for _, x := range res.Executors {
				rows = append(rows, []string{x.DisplayName, x.Kind, x.Status, x.Presence, whenOpt(x.LastSeenAt), x.PublicID, x.WorkspacePublicID})
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
			return printToken(res)
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
	cmd.AddCommand(create, list, rotate, revoke)
	return cmd
}
