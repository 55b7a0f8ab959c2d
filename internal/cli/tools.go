package cli

import (
	"fmt"
	"text/tabwriter"

	"github.com/spf13/cobra"
)

func newTools(e *env, g *globals) *cobra.Command {
	f := &clientFlags{}
	cmd := &cobra.Command{
		Use:   "tools",
		Short: "List the kernel tool catalog of a running server",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := e.client(cmd, g, f)
			if err != nil {
				return err
			}
			cat, err := c.Tools(cmd.Context())
			if err != nil {
				return apiError(err)
			}
			if f.json {
				_, err := e.stdout.Write(cat.Raw)
				return err
			}
			tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "NAME\tCANONICAL\tKIND\tDESTRUCTIVE\tIDEMPOTENCY")
			for _, t := range cat.Tools {
				p := t.EffectProfile
				fmt.Fprintf(tw, "%s\t%s\t%s\t%t\t%s\n", t.Name, t.CanonicalName, p.Kind, p.Destructive, p.Idempotency)
			}
			return tw.Flush()
		},
	}
	f.register(cmd)
	return cmd
}
