package cli

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/nexuskernel/nexus/sdk/client"
)

// The two values of the agent messaging policy (docs/api.md#identity): a private agent takes
// new requests (spawn, send) only from itself and its own spawned copies.
const (
	policyPublic  = "public"
	policyPrivate = "private"
)

func newPolicy(e *env, g *globals) *cobra.Command {
	f := &adminFlags{}
	cmd := &cobra.Command{
		Use:   "policy",
		Short: "Show and set which agents take requests from other agents (workspace owners)",
		Long: `The agent messaging policy of a workspace says which agents are private: a private agent
takes new requests (spawn, send) only from itself and its own spawned copies; every other agent is
public. Owners only.`,
	}
	f.register(cmd)

	show := &cobra.Command{
		Use:   "show",
		Short: "List the workspace's agents with their messaging policy",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, ws, err := e.connect(cmd, g, f)
			if err != nil {
				return err
			}
			res, err := c.MessagingPolicy(cmd.Context(), ws)
			if err != nil {
				return apiError(err)
			}
			return e.printPolicy(cmd.Context(), c, f, ws, res)
		},
	}
	f.registerWorkspace(show)

	set := &cobra.Command{
		Use:   "set AGENT public|private",
		Short: "Make an agent (handle or public id) public or private",
		Args:  cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			if v := args[1]; v != policyPublic && v != policyPrivate {
				return usageErrorf("the policy is public or private, not %q", v)
			}
			c, ws, err := e.connect(cmd, g, f)
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			agent, err := resolveMember(ctx, c, ws, args[0], "agent")
			if err != nil {
				return err
			}
			cur, err := c.MessagingPolicy(ctx, ws)
			if err != nil {
				return apiError(err)
			}
			agents := map[string]string{}
			for id, v := range cur.Policy.Agents {
				agents[id] = v
			}
			// Public is the absence of an entry: the map names the private agents.
			if args[1] == policyPrivate {
				agents[agent] = policyPrivate
			} else {
				delete(agents, agent)
			}
			res, err := c.PutMessagingPolicy(ctx, ws, agents, cur.LockVersion)
			if err != nil {
				return apiError(err)
			}
			return e.printPolicy(ctx, c, f, ws, res)
		},
	}
	f.registerWorkspace(set)

	cmd.AddCommand(show, set)
	return cmd
}

// printPolicy writes every agent of ws with its policy, by handle.
func (e *env) printPolicy(ctx context.Context, c *client.Client, f *adminFlags, ws string, res *client.MessagingPolicyResponse) error {
	if f.json {
		return e.raw(res.Raw)
	}
	agents, err := c.Agents(ctx, ws)
	if err != nil {
		return apiError(err)
	}
	rows := make([][]string, 0, len(agents.Agents))
	for _, a := range agents.Agents {
		v := res.Policy.Agents[a.PublicID]
		if v == "" {
			v = policyPublic
		}
		rows = append(rows, []string{a.Handle, v})
	}
	if err := table(e.stdout, "AGENT\tPOLICY", rows); err != nil {
		return err
	}
	_, err = fmt.Fprintf(e.stdout, "(workspace %s, lock version %d)\n", ws, res.LockVersion)
	return err
}
