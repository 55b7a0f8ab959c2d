package cli

import (
	"context"
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/nexuskernel/nexus/sdk/client"
	"github.com/nexuskernel/nexus/sdk/runner"
)

// EnvExecutorToken is the executor token `nexus runner` sends.
const EnvExecutorToken = "NEXUS_EXECUTOR_TOKEN"

func newRunner(e *env, _ *globals) *cobra.Command {
	var tools, addr, token string
	cmd := &cobra.Command{
		Use:   "runner --tools FILE",
		Short: "Serve tools from this machine: announce them and run each claimed call as a command",
		Long: `Serve the tools FILE lists, with an executor token (nxe_…, from "nexus executor create").
The runner announces the tools, opens the executor's event stream, claims the calls addressed to
it, runs each as its command (the call's input as JSON on standard input and in
NEXUS_TOOL_INPUT; files written to NEXUS_CAPTURE_DIR are uploaded as captures), and commits its
standard output as the result. A non-zero exit reports an error to the model. It runs until
interrupted.

FILE is JSON: {"environment": {…}, "concurrency": 4, "tools": [{"name", "description",
"input_schema", "effect_profile", "timeout_ms", "command": ["prog", "arg"], "dir", "env"}]}.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := runner.LoadConfig(tools)
			if err != nil {
				return err
			}
			addr = e.serverAddr(cmd, addr)
			if !cmd.Flags().Changed("token") {
				token = e.getenv(EnvExecutorToken)
			}
			if token == "" {
				return fmt.Errorf("no executor token: pass --token or set %s", EnvExecutorToken)
			}
			r := cfg.Runner(client.New(addr, token))
			r.Log = func(format string, args ...any) { fmt.Fprintf(e.stderr, format+"\n", args...) }
			ctx, stop := e.signalContext()
			defer stop()
			fmt.Fprintf(e.stderr, "runner: serving %d tools on %s\n", len(cfg.Tools), addr)
			if err := r.Run(ctx); err != nil && !errors.Is(err, context.Canceled) {
				return apiError(err)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&tools, "tools", "", "the runner's tool file (JSON)")
	cmd.Flags().StringVar(&addr, "server", "", "server base URL (env "+EnvAddr+", default "+DefaultAddr+")")
	cmd.Flags().StringVar(&token, "token", "", "executor token (env "+EnvExecutorToken+")")
	_ = cmd.MarkFlagRequired("tools")
	return cmd
}
