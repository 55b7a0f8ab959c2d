package cli

import (
	"errors"
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/nexuskernel/nexus/core/store"
)

func newMigrate(e *env, g *globals) *cobra.Command {
	f := &serverFlags{}
	cmd := &cobra.Command{
		Use:   "migrate",
		Short: "Apply pending database migrations, then exit",
		Long: `Apply every pending migration to the store and exit. The server applies them itself at start;
this command lets an operator migrate ahead of a rolling upgrade. It refuses a database whose schema
is newer than this build, and a SQLite database a running server holds.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			s, err := e.settings(cmd, g, f)
			if err != nil {
				return err
			}
			// A server migrates at its start and serves the schema it migrated to: a migration
			// under a running SQLite server waits for nobody.
			lock, err := store.HoldSQLite(s.Database())
			if errors.Is(err, store.ErrDatabaseInUse) {
				return fmt.Errorf("%w. The server migrates at its start; stop it to migrate by hand", err)
			}
			if err != nil {
				return err
			}
			defer lock.Release()
			st, err := openStore(cmd.Context(), s)
			if err != nil {
				return err
			}
			defer st.Close()
			applied, err := st.Migrate(cmd.Context())
			if err != nil {
				return err
			}
			if len(applied) == 0 {
				fmt.Fprintln(e.stdout, "nothing to apply: the schema is up to date")
				return nil
			}
			for _, v := range applied {
				fmt.Fprintf(e.stdout, "applied %05d\n", v)
			}
			return nil
		},
	}
	f.register(cmd.PersistentFlags(), false)
	cmd.AddCommand(&cobra.Command{
		Use:   "status",
		Short: "List the migrations this build knows and whether each is applied",
		Args:  cobra.NoArgs,
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
			states, err := st.MigrationStatus(cmd.Context())
			if err != nil {
				return err
			}
			tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "VERSION\tSTATE\tAPPLIED AT\tSOURCE")
			for _, m := range states {
				state, at := "pending", "-"
				if m.Applied {
					state, at = "applied", store.FromMillis(m.AppliedAt).Format(time.RFC3339)
				}
				fmt.Fprintf(tw, "%05d\t%s\t%s\t%s\n", m.Version, state, at, m.Source)
			}
			if err := tw.Flush(); err != nil {
				return err
			}
			if err := st.CheckSchema(cmd.Context()); errors.Is(err, store.ErrSchemaTooNew) {
				return err
			}
			return nil
		},
	})
	return cmd
}
