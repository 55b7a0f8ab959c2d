package cli

import (
	"encoding/json"
	"fmt"
	"text/tabwriter"

	"github.com/spf13/cobra"
)

// instancesPage is GET /agent_api/v1/instances as the table shows it.
type instancesPage struct {
	Instances []struct {
		ID          string `json:"id"`
		Host        string `json:"host"`
		Version     string `json:"version"`
		StartedAt   string `json:"started_at"`
		HeartbeatAt string `json:"heartbeat_at"`
		Self        bool   `json:"self"`
	} `json:"instances"`
	HeartbeatInterval string `json:"heartbeat_interval"`
	HeartbeatTimeout  string `json:"heartbeat_timeout"`
}

// newInstances is `nexus instances`: the live instances serving the store, the one that answered
// marked (docs/operations.md#instance-liveness-and-takeover).
func newInstances(e *env, g *globals) *cobra.Command {
	f := &clientFlags{}
	cmd := &cobra.Command{
		Use:   "instances",
		Short: "List the live instances serving the store, with their heartbeats (GET /agent_api/v1/instances)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := e.client(cmd, g, f)
			if err != nil {
				return err
			}
			raw, err := c.Instances(cmd.Context())
			if err != nil {
				return apiError(err)
			}
			if f.json {
				_, err := e.stdout.Write(raw)
				return err
			}
			var page instancesPage
			if err := json.Unmarshal(raw, &page); err != nil {
				return fmt.Errorf("instances: %w", err)
			}
			tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "ID\tHOST\tVERSION\tSTARTED\tHEARTBEAT\t")
			for _, in := range page.Instances {
				self := ""
				if in.Self {
					self = "(this one)"
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", in.ID, in.Host, in.Version, in.StartedAt, in.HeartbeatAt, self)
			}
			if err := tw.Flush(); err != nil {
				return err
			}
			fmt.Fprintf(e.stdout, "heartbeat every %s; an instance silent for %s is taken over\n", page.HeartbeatInterval, page.HeartbeatTimeout)
			return nil
		},
	}
	f.register(cmd)
	return cmd
}
