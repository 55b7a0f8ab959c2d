package cli

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/nexuskernel/nexus/core/identity"
	"github.com/nexuskernel/nexus/core/store"
	"github.com/nexuskernel/nexus/sdk/client"
)

func newToken(e *env, g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "token",
		Short: "Manage your member tokens (and mint one directly in the store)",
	}
	f := &serverFlags{}
	var user, label string
	mint := &cobra.Command{
		Use:   "mint --user HANDLE",
		Short: "Mint a member token directly in the store (break-glass)",
		Long: `Mint a new member token for a user by writing it straight into the store named by
--data-dir / --database-url, without the server. This is the operator's way back in when every
token is lost; it needs access to the data directory or the database. The token is printed once. It
works beside a running server, also on SQLite, and says so: it is one short write.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			s, err := e.settings(cmd, g, f)
			if err != nil {
				return err
			}
			// Minting is one short write, which SQLite serializes with a running server's.
			if err := store.SQLiteInUse(s.Database()); err != nil {
				fmt.Fprintf(e.stderr, "nexus: %v; minting anyway: one short write, which the server's database takes in turn\n", err)
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
	addTokenAPICommands(e, g, cmd)
	return cmd
}

// addTokenAPICommands adds the commands that manage the caller's own tokens through the API.
func addTokenAPICommands(e *env, g *globals, cmd *cobra.Command) {
	f := &adminFlags{}
	var label string
	var expiresIn time.Duration
	create := &cobra.Command{
		Use:   "create [--label LABEL] [--expires-in DURATION]",
		Short: "Mint an additional token for yourself; prints it once",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := e.client(cmd, g, &f.clientFlags)
			if err != nil {
				return err
			}
			req := &client.CreateTokenRequest{Label: label}
			if expiresIn < 0 {
				return fmt.Errorf("--expires-in must be positive")
			}
			if expiresIn > 0 {
				at := time.Now().Add(expiresIn)
				req.ExpiresAt = &at
			}
			res, err := c.CreateToken(cmd.Context(), req)
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
			return fields(e.stdout, "token", res.Token+"  "+shownOnce, "public id", i.PublicID, "label", i.Label, "expires", whenOpt(i.ExpiresAt))
		},
	}
	create.Flags().StringVar(&label, "label", "", "a label naming the token in listings")
	create.Flags().DurationVar(&expiresIn, "expires-in", 0, "lifetime, for example 720h (default: no expiry)")
	f.registerQuiet(create, "the token")
	f.clientFlags.registerOn(create)

	list := &cobra.Command{
		Use:   "list",
		Short: "List your live tokens (never their values)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := e.client(cmd, g, &f.clientFlags)
			if err != nil {
				return err
			}
			res, err := c.Tokens(cmd.Context())
			if err != nil {
				return apiError(err)
			}
			if f.json {
				return e.raw(res.Raw)
			}
			rows := make([][]string, 0, len(res.Tokens))
			for _, t := range res.Tokens {
				cur := ""
				if t.Current {
					cur = "*"
				}
				rows = append(rows, []string{t.PublicID, t.Label, when(t.CreatedAt), whenOpt(t.ExpiresAt), cur})
			}
			return table(e.stdout, "PUBLIC ID\tLABEL\tCREATED\tEXPIRES\tCURRENT", rows)
		},
	}
	f.clientFlags.registerOn(list)

	revoke := &cobra.Command{
		Use:   "revoke PUBLIC_ID|current",
		Short: "Revoke one of your tokens, or the one this command sends",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := e.client(cmd, g, &f.clientFlags)
			if err != nil {
				return err
			}
			if args[0] == "current" {
				err = c.RevokeCurrentToken(cmd.Context())
			} else {
				err = c.RevokeToken(cmd.Context(), args[0])
			}
			if err != nil {
				return apiError(err)
			}
			if !f.json {
				fmt.Fprintf(e.stdout, "revoked %s\n", args[0])
			}
			return nil
		},
	}
	f.clientFlags.registerOn(revoke)
	cmd.AddCommand(create, list, revoke)
}
