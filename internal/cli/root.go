package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/nexuskernel/nexus/core/server"
)

// Version is the build's version, set by the linker (-X); "dev" otherwise.
var Version = "dev"

// env is the process environment the commands read; tests replace it.
type env struct {
	getenv func(string) string
	stdout io.Writer
	stderr *os.File
	// stdin is what `--file -` reads; nil means os.Stdin.
	stdin io.Reader
	// signals, when set, replaces SIGINT/SIGTERM handling (tests cancel it themselves).
	signals func(context.Context) (context.Context, context.CancelFunc)
}

// Main runs the command line with args and returns the process exit code.
func Main(args []string) int {
	e := &env{getenv: os.Getenv, stdout: os.Stdout, stderr: os.Stderr}
	return run(e, args)
}

// exitError carries a specific exit code out of a command.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }

func run(e *env, args []string) int {
	root := newRoot(e)
	root.SetArgs(args)
	root.SetOut(e.stdout)
	root.SetErr(e.stderr)
	if err := root.Execute(); err != nil {
		fmt.Fprintln(e.stderr, "nexus:", err)
		var xe *exitError
		if errors.As(err, &xe) {
			return xe.code
		}
		return 1
	}
	return 0
}

// globals are the flags every command shares.
type globals struct {
	config  string
	dataDir string
}

func newRoot(e *env) *cobra.Command {
	g := &globals{}
	root := &cobra.Command{
		Use:           "nexus",
		Short:         "Nexus: the tool kernel of an AI-agent system",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.PersistentFlags().StringVar(&g.config, "config", "", "HCL settings file (env "+server.EnvConfig+")")
	root.PersistentFlags().StringVar(&g.dataDir, "data-dir", "", "data directory (env "+server.EnvDataDir+", default "+server.DefaultDataDir+")")
	root.AddCommand(
		newServe(e, g),
		newMigrate(e, g),
		newToken(e, g),
		newTools(e, g),
		newModels(e, g),
		newWorkspace(e, g),
		newAgent(e, g),
		newUser(e, g),
		newMember(e, g),
		newExecutor(e, g),
		newRunner(e, g),
		newMemory(e, g),
		newPlugins(e, g),
		newVersion(e),
	)
	return root
}

// serverFlags are the settings flags of the commands that open the store.
type serverFlags struct {
	listen, databaseURL, logLevel, logFormat string
	pluginDirs                               []string
}

func (f *serverFlags) register(fs *pflag.FlagSet, withListen bool) {
	if withListen {
		fs.StringVar(&f.listen, "listen", "", "HTTP listen address (env "+server.EnvListen+", default "+server.DefaultListen+")")
		fs.StringArrayVar(&f.pluginDirs, "plugin-dir", nil, "directory of plugin binaries; repeatable (env "+server.EnvPluginDir+")")
	}
	fs.StringVar(&f.databaseURL, "database-url", "", "postgres:// URL or SQLite path (env "+server.EnvDatabaseURL+", default <data-dir>/"+server.DatabaseFile+")")
	fs.StringVar(&f.logLevel, "log-level", "", "trace, debug, info, warn or error (env "+server.EnvLogLevel+", default "+server.DefaultLogLevel+")")
	fs.StringVar(&f.logFormat, "log-format", "", "text or json (env "+server.EnvLogFormat+", default "+server.DefaultLogFormat+")")
}

// settings resolves flag > env > file > default.
func (e *env) settings(cmd *cobra.Command, g *globals, f *serverFlags) (server.Settings, error) {
	path := g.config
	if !cmd.Flags().Changed("config") {
		path = e.getenv(server.EnvConfig)
	}
	var file server.Layer
	if path != "" {
		l, err := server.FileLayerEnv(path, e.getenv)
		if err != nil {
			return server.Settings{}, err
		}
		file = l
	}
	var flags server.Layer
	fl := cmd.Flags()
	str := func(name, v string) *string {
		if fl.Lookup(name) != nil && fl.Changed(name) {
			return &v
		}
		return nil
	}
	flags.DataDir = str("data-dir", g.dataDir)
	if f != nil {
		flags.Listen = str("listen", f.listen)
		flags.DatabaseURL = str("database-url", f.databaseURL)
		flags.LogLevel = str("log-level", f.logLevel)
		flags.LogFormat = str("log-format", f.logFormat)
		if fl.Lookup("plugin-dir") != nil && fl.Changed("plugin-dir") {
			flags.PluginDirs = f.pluginDirs
		}
	}
	s, err := server.Resolve(file, server.EnvLayer(e.getenv), flags)
	if err != nil {
		return s, err
	}
	s.ConfigFile = path
	return s, nil
}

func (e *env) signalContext() (context.Context, context.CancelFunc) {
	if e.signals != nil {
		return e.signals(context.Background())
	}
	return signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
}

func newVersion(e *env) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the build's version",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			fmt.Fprintln(e.stdout, "nexus", Version)
			return nil
		},
	}
}
