package cli

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/nexuskernel/nexus/sdk/client"
)

// DefaultHealthTimeout bounds one `nexus health` probe: a ready server answers /readyz within its
// own 2-second check bound, and a probe must end well inside a container engine's or load
// balancer's health check timeout (30 s by default for Docker and Podman).
const DefaultHealthTimeout = 5 * time.Second

// newHealth is `nexus health`: exit 0 when the server's /readyz answers ready, 1 otherwise with
// one line saying why (docs/operations.md#health). It needs no token, for probes and containers.
func newHealth(e *env) *cobra.Command {
	var server string
	var timeout time.Duration
	cmd := &cobra.Command{
		Use:   "health [--server URL]",
		Short: "Exit 0 when the server answers /readyz ready; otherwise say why in one line and exit 1",
		Long: `Read the server's /readyz, which needs no token: print "ready" and exit 0 when it answers ready,
otherwise print one line saying why (the server's reasons, or why it could not be reached) and exit 1.
For container health checks and probes. An https server signed by a private authority is trusted through
SSL_CERT_FILE.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if timeout <= 0 {
				return usageErrorf("--timeout must be positive")
			}
			ctx, cancel := context.WithTimeout(cmd.Context(), timeout)
			defer cancel()
			addr := e.serverAddr(cmd, server)
			err := client.New(addr, "").Ready(ctx)
			if err == nil {
				_, err := fmt.Fprintln(e.stdout, "ready")
				return err
			}
			var nr *client.NotReady
			if errors.As(err, &nr) {
				return errors.New(oneLine(fmt.Sprintf("%s at %s", nr.Error(), addr)))
			}
			if errors.Is(err, context.DeadlineExceeded) {
				return fmt.Errorf("%s did not answer /readyz within %s", addr, timeout)
			}
			return errors.New(oneLine(apiError(err).Error()))
		},
	}
	cmd.Flags().StringVar(&server, "server", "", "server base URL (env "+EnvAddr+", default "+DefaultAddr+")")
	cmd.Flags().DurationVar(&timeout, "timeout", DefaultHealthTimeout, "how long to wait for the answer")
	return cmd
}
