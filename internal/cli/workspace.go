package cli

import (
	"github.com/spf13/cobra"

	"github.com/nexuskernel/nexus/sdk/client"
)

func newWorkspace(e *env, g *globals) *cobra.Command {
	f := &adminFlags{}
	cmd := &cobra.Command{Use: "workspace", Short: "Create and list workspaces"}
	f.register(cmd)

	var name string
	create := &cobra.Command{
		Use:   "create HANDLE --name NAME",
		Short: "Create a workspace you own",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := e.client(cmd, g, &f.clientFlags)
			if err != nil {
				return err
			}
			if name == "" {
				name = args[0]
			}
			res, err := c.CreateWorkspace(cmd.Context(), &client.CreateWorkspaceRequest{Handle: args[0], Name: name})
			if err != nil {
				return apiError(err)
			}
			return e.printWorkspace(f, res)
		},
	}
	create.Flags().StringVar(&name, "name", "", "the workspace's name (default: the handle)")
	f.registerQuiet(create, "the public id")

	list := &cobra.Command{
		Use:   "list",
		Short: "List your workspaces",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := e.client(cmd, g, &f.clientFlags)
			if err != nil {
				return err
			}
			res, err := c.Workspaces(cmd.Context())
			if err != nil {
				return apiError(err)
			}
			if f.json {
				return e.raw(res.Raw)
			}
			rows := make([][]string, 0, len(res.Workspaces))
			for _, w := range res.Workspaces {
				rows = append(rows, []string{w.Handle, w.Name, w.Role, w.PublicID, when(w.CreatedAt)})
			}
			return table(e.stdout, "HANDLE\tNAME\tROLE\tPUBLIC ID\tCREATED", rows)
		},
	}
	cmd.AddCommand(create, list)
	return cmd
}

func (e *env) printWorkspace(f *adminFlags, res *client.WorkspaceResponse) error {
	switch {
	case f.json:
		return e.raw(res.Raw)
	case f.quiet:
		_, err := e.stdout.Write([]byte(res.Workspace.PublicID + "\n"))
		return err
	}
	w := res.Workspace
	return fields(e.stdout, "workspace", w.Handle, "name", w.Name, "public id", w.PublicID, "your role", w.Role, "created", when(w.CreatedAt))
}
