package cli

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/nexuskernel/nexus/sdk/client"
)

func newMember(e *env, g *globals) *cobra.Command {
	f := &adminFlags{}
	cmd := &cobra.Command{Use: "member", Short: "Add, remove and list a workspace's members"}
	f.register(cmd)

	var role string
	add := &cobra.Command{
		Use:   "add USER [--role member|owner]",
		Short: "Add an existing user (public id or handle) to a workspace (workspace owners)",
		Long: `Add an existing user to a workspace you own. USER is the user's public id, or their handle
when they are a member of one of your workspaces.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := e.client(cmd, g, &f.clientFlags)
			if err != nil {
				return err
			}
			ws, err := e.resolveWorkspace(cmd.Context(), cmd, c, f)
			if err != nil {
				return err
			}
			user, err := resolveUser(cmd.Context(), c, args[0])
			if err != nil {
				return err
			}
			res, err := c.AddMember(cmd.Context(), ws, &client.AddMemberRequest{UserPublicID: user, Role: role})
			if err != nil {
				return apiError(err)
			}
			if f.json {
				return e.raw(res.Raw)
			}
			m := res.Member
			return fields(e.stdout, "member", m.Handle, "public id", m.PublicID, "workspace", ws, "role", m.Role)
		},
	}
	add.Flags().StringVar(&role, "role", "member", "owner or member")
	f.registerWorkspace(add)

	remove := &cobra.Command{
		Use:   "remove MEMBER",
		Short: "Remove a user or an agent (public id or handle) from a workspace (workspace owners)",
		Args:  cobra.ExactArgs(1),
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
			id, err := resolveMember(ctx, c, ws, args[0], "")
			if err != nil {
				return err
			}
			if err := c.RemoveMember(ctx, ws, id); err != nil {
				return apiError(err)
			}
			if !f.json {
				fmt.Fprintf(e.stdout, "removed %s from %s\n", args[0], ws)
			}
			return nil
		},
	}
	f.registerWorkspace(remove)

	list := &cobra.Command{
		Use:   "list",
		Short: "List a workspace's members: users, then agents",
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
			res, err := c.Members(cmd.Context(), ws)
			if err != nil {
				return apiError(err)
			}
			if f.json {
				return e.raw(res.Raw)
			}
			rows := make([][]string, 0, len(res.Members))
			for _, m := range res.Members {
				rows = append(rows, []string{m.Kind, m.Handle, m.DisplayName, m.Role, m.PublicID, when(m.JoinedAt)})
			}
			return table(e.stdout, "KIND\tHANDLE\tDISPLAY NAME\tROLE\tPUBLIC ID\tJOINED", rows)
		},
	}
	f.registerWorkspace(list)
	cmd.AddCommand(add, remove, list)
	return cmd
}
