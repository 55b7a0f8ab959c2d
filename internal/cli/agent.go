package cli

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/nexuskernel/nexus/sdk/client"
)

func newAgent(e *env, g *globals) *cobra.Command {
	f := &adminFlags{}
	cmd := &cobra.Command{Use: "agent", Short: "Create and list a workspace's agents"}
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
			a := res.Agent
			return fields(e.stdout, "agent", a.Handle, "display name", a.DisplayName, "public id", a.PublicID,
				"workspace", a.WorkspacePublicID, "steward", a.StewardUserPublicID, "token", res.Token+"  "+shownOnce)
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
			c, err := e.client(cmd, g, &f.clientFlags)
			if err != nil {
				return err
			}
			ws, err := e.resolveWorkspace(cmd.Context(), cmd, c, f)
			if err != nil {
				return err
			}
			res, err := c.Agents(cmd.Context(), ws)
			if err != nil {
				return apiError(err)
			}
			if f.json {
				return e.raw(res.Raw)
			}
			rows := make([][]string, 0, len(res.Agents))
			for _, a := range res.Agents {
				rows = append(rows, []string{a.Handle, a.DisplayName, a.PublicID, a.StewardUserPublicID, when(a.CreatedAt)})
			}
			return table(e.stdout, "HANDLE\tDISPLAY NAME\tPUBLIC ID\tSTEWARD\tCREATED", rows)
		},
	}
	f.registerWorkspace(list)
	cmd.AddCommand(create, list)
	return cmd
}
