package cli

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/nexuskernel/nexus/core/identity"
)

func newToken(e *env, g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "token",
		Short: "Manage member tokens",
	}
	f := &serverFlags{}
	var user, label string
	mint := &cobra.Command{
		Use:   "mint --user HANDLE",
		Short: "Mint a member token directly in the store (break-glass)",
		Long: `Mint a new member token for a user by writing it straight into the store named by
--data-dir / --database-url, without the server. This is the operator's way back in when every
token is lost; it needs access to the data directory or the database. The token is printed once.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			s, err := e.settings(cmd, g, f)
			if err != nil {
				return err
			}
			st, err := openStore(cmd.Context(), s)
			if err != nil {
				return err
			}
			defer st.Close()
			if err := st.CheckSchema(cmd.Context()); err != nil {
				return err
			}
			tok, err := identity.MintMemberToken(cmd.Context(), st, user, label, time.Now())
			if err != nil {
				return err
			}
			fmt.Fprintln(e.stdout, tok)
			return nil
		},
	}
	f.register(mint.Flags(), false)
	mint.Flags().StringVar(&user, "user", "", "handle of the user the token authenticates as (required)")
	mint.Flags().StringVar(&label, "label", "break-glass", "label stored with the token")
	_ = mint.MarkFlagRequired("user")
	cmd.AddCommand(mint)
	return cmd
}
