package cli

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/signal"
	"syscall"

	"github.com/hashicorp/go-hclog"
	"github.com/spf13/cobra"

	"github.com/nexuskernel/nexus/core/refusal"
	"github.com/nexuskernel/nexus/core/server"
	"github.com/nexuskernel/nexus/core/store"
)

func newServe(e *env, g *globals) *cobra.Command {
	f := &serverFlags{}
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Run the server",
		Long: `Run the server: bind the listen address, open (and migrate) the store, bootstrap an empty deployment, and serve the
agent API until SIGINT or SIGTERM. A SQLite database serves one server: a second serve on a database in use exits at
once, changing nothing; SIGHUP reloads the plugin catalog from the configuration file and the TLS key pair from
its files. On a signal the server stops accepting connections and
drains in-flight requests for up to 10 seconds; it exits 0, or 1 when the drain timed out.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			s, err := e.settings(cmd, g, f)
			if err != nil {
				return err
			}
			log := server.NewLogger(s, e.stderr)
			// The port first: a server that cannot listen stops before it migrates, bootstraps
			// or writes anything into its data directory.
			ln, err := net.Listen("tcp", s.Listen)
			if err != nil {
				return err
			}
			defer ln.Close()
			ctx, stop := e.signalContext()
			defer stop()
			srv, err := server.Open(ctx, s, log, server.Options{Getenv: e.getenv, Version: Version})
			if err != nil {
				if errors.Is(err, store.ErrSchemaTooNew) {
					return fmt.Errorf("%w; run a build at least as new as the one that migrated this database", err)
				}
				if errors.Is(err, store.ErrDatabaseInUse) {
					return fmt.Errorf("%w. One server serves a SQLite database: stop the other first, or give this one its own --data-dir; several instances share PostgreSQL (--database-url)", err)
				}
				return err
			}
			defer srv.Close()
			// SIGHUP reloads the plugin catalog in place (docs/plugins.md#states-status-reload-and-restart)
			// and the TLS key pair (docs/operations.md#tls).
			stopHUP := reloadOnHangup(ctx, srv, log)
			defer stopHUP()
			if err := srv.Serve(ctx, ln); err != nil {
				if errors.Is(err, server.ErrDrainTimeout) {
					return &exitError{code: 1, err: err}
				}
				return err
			}
			log.Info("stopped")
			return nil
		},
	}
	f.register(cmd.Flags(), true)
	return cmd
}

// openStore opens the store named by the settings without migrating it.
func openStore(ctx context.Context, s server.Settings) (*store.Store, error) {
	return store.Open(ctx, s.Database(), store.Options{MaxReaders: 2})
}

// reloadOnHangup reloads the server's TLS key pair and plugin catalog on each SIGHUP until ctx
// ends or the returned function is called. The reloads log themselves, once: the server a key
// pair it kept and a configuration it refused, the plugin host its report; only another failure
// is logged here.
func reloadOnHangup(ctx context.Context, srv *server.Server, log hclog.Logger) func() {
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, syscall.SIGHUP)
	done := make(chan struct{})
	go func() {
		for {
			select {
			case <-ch:
				_ = srv.ReloadTLS() // a failure keeps the current pair serving, and is logged
				if _, err := srv.Reload(ctx); err != nil {
					if _, refused := refusal.As(err); !refused {
						log.Error("reload failed", "error", err)
					}
				}
			case <-ctx.Done():
				return
			case <-done:
				return
			}
		}
	}()
	return func() { signal.Stop(ch); close(done) }
}
