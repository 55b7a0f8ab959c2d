package cli

import (
	"encoding/json"
	"fmt"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/nexuskernel/nexus/core/server"
	"github.com/nexuskernel/nexus/plugins"
	"github.com/nexuskernel/nexus/sdk/client"
)

// newPlugins is `nexus plugins`: the plugin routes (status, reload, restart) and two local
// commands for filling the catalog (discover, hash), which launch nothing.
func newPlugins(e *env, g *globals) *cobra.Command {
	f := &adminFlags{}
	cmd := &cobra.Command{
		Use:   "plugins",
		Short: "Show, reload and restart the server's plugins; discover and hash plugin binaries",
		Long: `The server runs the plugin blocks of its HCL configuration. status, reload and restart call
the running server (a workspace owner's token); discover and hash only read files here.`,
	}
	printStatuses := func(ps []client.PluginStatus) error {
		tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "NAME\tKIND\tSTATE\tEXECUTOR\tPID\tRESTARTS\tIN FLIGHT\tPROBLEM")
		for _, p := range ps {
			exec, pid, problem := "-", "-", ""
			if p.ExecutorPublicID != nil {
				exec = *p.ExecutorPublicID
			}
			if p.PID != nil {
				pid = fmt.Sprint(*p.PID)
			}
			switch {
			case p.Refusal != nil:
				problem = strings.TrimSpace(p.Refusal.Code + " " + p.Refusal.Name)
			case p.LastError != nil:
				problem = *p.LastError
			case p.PollFound > 0:
				problem = fmt.Sprintf("poll_found %d: wake-ups were lost", p.PollFound)
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%d\t%d\t%s\n", p.Name, p.Kind, p.State, exec, pid, p.Restarts, p.InFlight, problem)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
		// A refusal's message says what to fix (a memory root in use elsewhere names both roots).
		for _, p := range ps {
			if p.Refusal != nil && p.Refusal.Message != "" {
				fmt.Fprintf(e.stdout, "\n%s: %s: %s\n", p.Name, p.Refusal.Code, p.Refusal.Message)
			}
		}
		return nil
	}

	status := &cobra.Command{
		Use:   "status [NAME]",
		Short: "Show every plugin, or one, as the server runs it",
		Args:  cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := e.client(cmd, g, &f.clientFlags)
			if err != nil {
				return err
			}
			if len(args) == 1 {
				res, err := c.Plugin(cmd.Context(), args[0])
				if err != nil {
					return apiError(err)
				}
				if f.json {
					return e.raw(res.Raw)
				}
				if err := printStatuses([]client.PluginStatus{res.Plugin}); err != nil {
					return err
				}
				// One plugin: each tool's definition digest, which a pinned agent's calls compare.
				return printDigests(e, res.Plugin)
			}
			res, err := c.Plugins(cmd.Context())
			if err != nil {
				return apiError(err)
			}
			if f.json {
				return e.raw(res.Raw)
			}
			return printStatuses(res.Plugins)
		},
	}
	reload := &cobra.Command{
		Use:   "reload",
		Short: "Make the server read its configuration again and apply the plugin catalog",
		Long: `Added plugins load, removed ones drain and their executors are revoked, changed ones (any
attribute, or a binary upgraded in place) start beside the old instance and replace it when they
load; unchanged ones keep running. An invalid configuration changes nothing. A reload applies plugin
blocks only: "not applied" names the other settings changed in the file (model and model_provider
blocks, default_model, the kernel block, listen, …), which apply at the next restart.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := e.client(cmd, g, &f.clientFlags)
			if err != nil {
				return err
			}
			res, err := c.ReloadPlugins(cmd.Context())
			if err != nil {
				return apiError(err)
			}
			if f.json {
				return e.raw(res.Raw)
			}
			r := res.Reload
			notApplied := list(r.NotApplied)
			if len(r.NotApplied) > 0 {
				notApplied += " (changed in the file; they apply at the next restart)"
			}
			if err := fields(e.stdout, "added", list(r.Added), "removed", list(r.Removed), "changed", list(r.Changed),
				"unchanged", list(r.Unchanged), "not applied", notApplied); err != nil {
				return err
			}
			fmt.Fprintln(e.stdout)
			return printStatuses(res.Plugins)
		},
	}
	restart := &cobra.Command{
		Use:   "restart NAME",
		Short: "Restart one plugin now, resetting its backoff and circuit breaker",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := e.client(cmd, g, &f.clientFlags)
			if err != nil {
				return err
			}
			res, err := c.RestartPlugin(cmd.Context(), args[0])
			if err != nil {
				return apiError(err)
			}
			if f.json {
				return e.raw(res.Raw)
			}
			return printStatuses([]client.PluginStatus{res.Plugin})
		},
	}
	for _, sub := range []*cobra.Command{status, reload, restart} {
		f.registerOn(sub)
	}

	sf := &serverFlags{}
	var asJSON bool
	discover := &cobra.Command{
		Use:   "discover [--plugin-dir DIR]...",
		Short: "List the nexus-* executables in the plugin directories with their SHA-256",
		Long: `Lists the executables named nexus-* in the directories the server searches for a bare
command name: each --plugin-dir (or NEXUS_PLUGIN_DIR), the configuration's plugin_dirs, then the
directory of this nexus binary. Nothing is launched.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			s, err := e.settings(cmd, g, sf)
			if err != nil {
				return err
			}
			found := plugins.Discover(server.PluginResolver(s).Dirs())
			if asJSON {
				b, err := json.Marshal(struct {
					Plugins []plugins.Discovered `json:"plugins"`
				}{append([]plugins.Discovered{}, found...)})
				if err != nil {
					return err
				}
				return e.raw(append(b, '\n'))
			}
			tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "PATH\tSHA256")
			for _, d := range found {
				fmt.Fprintf(tw, "%s\t%s\n", d.Path, d.SHA256)
			}
			return tw.Flush()
		},
	}
	discover.Flags().StringArrayVar(&sf.pluginDirs, "plugin-dir", nil, "directory of plugin binaries; repeatable (env "+server.EnvPluginDir+")")
	discover.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	hash := &cobra.Command{
		Use:   "hash PATH",
		Short: "Print a plugin binary's SHA-256, the value of a plugin block's sha256",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			sum, err := plugins.FileDigest(args[0])
			if err != nil {
				return err
			}
			_, err = fmt.Fprintln(e.stdout, sum)
			return err
		},
	}
	cmd.AddCommand(status, reload, restart, discover, hash)
	return cmd
}

// list prints names, or "-" for none.
func list(names []string) string {
	if len(names) == 0 {
		return "-"
	}
	return strings.Join(names, ", ")
}

// printDigests writes a plugin's tools with their current definition digests, in name order.
func printDigests(e *env, p client.PluginStatus) error {
	if len(p.Tools) == 0 {
		return nil
	}
	tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "\nTOOL\tDEFINITION DIGEST")
	for _, name := range p.Tools {
		d := p.DefinitionDigests[name]
		if d == "" {
			d = "-"
		}
		fmt.Fprintf(tw, "%s\t%s\n", name, d)
	}
	return tw.Flush()
}
