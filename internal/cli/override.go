package cli

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/nexuskernel/nexus/sdk/client"
)

// overrideFamily is the one family a workspace may hand to a tool provider
// (docs/api.md#the-memory-override).
const overrideFamily = "nexus.memory"

// newMemoryOverride is `nexus memory override`: which executor serves a workspace's memory
// family instead of kernel memory.
func newMemoryOverride(e *env, f *adminFlags, connect func(*cobra.Command) (*client.Client, string, error)) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "override",
		Short: "Show, set or clear the tool provider that serves a workspace's memory",
		Long: `A workspace may hand its whole memory family (nexus.memory) to one tool_provider executor,
typically a memory plugin's (memory-fs, memory-postgres). Memory calls born after the change go
to that executor, with no fallback to kernel memory; documents are not migrated. Owners only.`,
	}
	printMap := func(res *client.OverridesResponse) error {
		if f.json {
			return e.raw(res.Raw)
		}
		target := res.ToolProviderOverrides[overrideFamily]
		if target == "" {
			target = "kernel memory (no override)"
		}
		return fields(e.stdout, overrideFamily, target, "lock version", fmt.Sprint(res.LockVersion))
	}
	// put replaces the map at its current lock version.
	put := func(ctx context.Context, c *client.Client, ws string, m map[string]string) error {
		cur, err := c.ToolProviderOverrides(ctx, ws)
		if err != nil {
			return apiError(err)
		}
		res, err := c.PutToolProviderOverrides(ctx, ws, m, cur.LockVersion)
		if err != nil {
			return apiError(err)
		}
		return printMap(res)
	}
	show := &cobra.Command{
		Use:   "show",
		Short: "Show the workspace's override map",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, ws, err := connect(cmd)
			if err != nil {
				return err
			}
			res, err := c.ToolProviderOverrides(cmd.Context(), ws)
			if err != nil {
				return apiError(err)
			}
			return printMap(res)
		},
	}
	var executor, pluginName string
	set := &cobra.Command{
		Use:   "set (--executor PUBLIC_ID | --plugin NAME)",
		Short: "Hand the workspace's memory to a tool provider executor, or to a plugin's",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if (executor == "") == (pluginName == "") {
				return fmt.Errorf("give one of --executor and --plugin")
			}
			c, ws, err := connect(cmd)
			if err != nil {
				return err
			}
			if pluginName != "" {
				p, err := c.Plugin(cmd.Context(), pluginName)
				if err != nil {
					return apiError(err)
				}
				if p.Plugin.ExecutorPublicID == nil {
					return fmt.Errorf("plugin %s has no executor yet (state %s)", pluginName, p.Plugin.State)
				}
				executor = *p.Plugin.ExecutorPublicID
			}
			return put(cmd.Context(), c, ws, map[string]string{overrideFamily: executor})
		},
	}
	set.Flags().StringVar(&executor, "executor", "", "the tool_provider executor's public id")
	set.Flags().StringVar(&pluginName, "plugin", "", "a plugin's catalog name (its managed executor)")
	clearCmd := &cobra.Command{
		Use:   "clear",
		Short: "Give the workspace's memory back to kernel memory",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, ws, err := connect(cmd)
			if err != nil {
				return err
			}
			return put(cmd.Context(), c, ws, map[string]string{})
		},
	}
	for _, sub := range []*cobra.Command{show, set, clearCmd} {
		f.registerWorkspace(sub)
	}
	cmd.AddCommand(show, set, clearCmd)
	return cmd
}
