package cli

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/nexuskernel/nexus/sdk/client"
)

func newUser(e *env, g *globals) *cobra.Command {
	f := &adminFlags{}
	cmd := &cobra.Command{Use: "user", Short: "Invite people"}
	f.register(cmd)

	var displayName, role string
	create := &cobra.Command{
		Use:   "create HANDLE [--display-name NAME] [--role member|owner]",
		Short: "Invite a new person into a workspace (workspace owners); prints their token once",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := e.client(cmd, g, &f.clientFlags)
			if err != nil {
				return err
			}
			ws, err := e.resolveWorkspace(cmd.Context(), cmd, c, f)
			if err != nil {
				return err
			}
			req := &client.CreateUserRequest{Handle: args[0], DisplayName: displayName, Role: role}
			if req.DisplayName == "" {
				req.DisplayName = args[0]
			}
			res, err := c.CreateUser(cmd.Context(), ws, req)
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
			u := res.User
			return fields(e.stdout, "user", u.Handle, "display name", u.DisplayName, "public id", u.PublicID,
				"workspace", ws, "role", u.Role, "token", res.Token+"  "+shownOnce)
		},
	}
	create.Flags().StringVar(&displayName, "display-name", "", "the person's display name (default: the handle)")
	create.Flags().StringVar(&role, "role", "member", "owner or member")
	f.registerWorkspace(create)
	f.registerQuiet(create, "the token")
	cmd.AddCommand(create)
	return cmd
}
