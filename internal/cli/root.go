package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime"
	"runtime/debug"
	"strings"
	"syscall"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/nexuskernel/nexus/core/server"
)

// Version is the build's version, set by the linker (-X) from the repository's VERSION file
// (make build); "dev" otherwise.
var Version = "dev"

// Commit is the commit the build was made from, set by the linker (-X) by make build, with
// "-dirty" when the work tree had changes; empty otherwise, when the Go toolchain's own stamp
// (vcs.revision) stands in for it.
var Commit = ""

// buildCommit answers Commit, else the revision the Go toolchain stamped, else "unknown".
func buildCommit() string {
	if Commit != "" {
		return Commit
	}
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown"
	}
	rev, dirty := "", false
	for _, kv := range info.Settings {
		switch kv.Key {
		case "vcs.revision":
			rev = kv.Value
		case "vcs.modified":
			dirty = kv.Value == "true"
		}
	}
	if rev == "" {
		return "unknown"
	}
	if len(rev) > commitChars {
		rev = rev[:commitChars]
	}
	if dirty {
		rev += "-dirty"
	}
	return rev
}

// commitChars is how much of a commit hash the version shows: twelve hex digits, as make build
// stamps it, stay unambiguous in any repository of this size.
const commitChars = 12

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

// exitError carries a specific exit code out of a command. A nil err exits quietly: the command
// has said on standard output all there is to say (a run that waits for a person).
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string {
	if e.err == nil {
		return fmt.Sprintf("exit %d", e.code)
	}
	return e.err.Error()
}

// usageError is a command line the command cannot read: a wrong number of arguments, an
// unknown flag or command, flags that exclude each other. It is reported with the command's
// usage line and exit code 2.
type usageError struct{ err error }

func (e *usageError) Error() string { return e.err.Error() }
func (e *usageError) Unwrap() error { return e.err }

// usageErrorf is a usageError with a message.
func usageErrorf(format string, args ...any) error {
	return &usageError{fmt.Errorf(format, args...)}
}

// exitUsage is the exit code of a usage error, as getopt-style tools use it.
const exitUsage = 2

func run(e *env, args []string) int {
	root := newRoot(e)
	root.SetArgs(args)
	root.SetOut(e.stdout)
	root.SetErr(e.stderr)
	cmd, err := root.ExecuteC()
	if err == nil {
		return 0
	}
	var xe *exitError
	if errors.As(err, &xe) && xe.err == nil {
		return xe.code
	}
	fmt.Fprintln(e.stderr, "nexus:", err)
	var ue *usageError
	if errors.As(err, &ue) {
		fmt.Fprintf(e.stderr, "%srun '%s --help' for more\n", usage(cmd), cmd.CommandPath())
		return exitUsage
	}
	if xe != nil {
		return xe.code
	}
	return 1
}

// usage is a command's usage line; a group's names its commands.
func usage(cmd *cobra.Command) string {
	if !cmd.HasAvailableSubCommands() {
		return "usage: " + cmd.UseLine() + "\n"
	}
	var names []string
	for _, sub := range cmd.Commands() {
		if sub.IsAvailableCommand() {
			names = append(names, sub.Name())
		}
	}
	line := cmd.UseLine()
	if !strings.Contains(cmd.Use, " ") {
		line = cmd.CommandPath() + " COMMAND [flags]"
	}
	return "usage: " + line + "\ncommands: " + strings.Join(names, ", ") + "\n"
}

// markUsageErrors makes every argument and flag error of the tree below cmd a usageError. A
// group (a command that only holds others) prints its help when called bare and refuses any
// argument as an unknown command, as the root does, instead of cobra's help and exit 0.
func markUsageErrors(cmd *cobra.Command) {
	if cmd.HasSubCommands() && cmd.Run == nil && cmd.RunE == nil {
		cmd.Args = cobra.NoArgs
		cmd.RunE = func(c *cobra.Command, _ []string) error { return c.Help() }
	}
	if v := cmd.Args; v != nil {
		cmd.Args = func(c *cobra.Command, args []string) error {
			if err := v(c, args); err != nil {
				return &usageError{err}
			}
			return nil
		}
	}
	cmd.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return &usageError{err} })
	for _, sub := range cmd.Commands() {
		markUsageErrors(sub)
	}
}

// globals are the flags every command shares.
type globals struct {
	config  string
	dataDir string
}

func newRoot(e *env) *cobra.Command {
	g := &globals{}
	root := &cobra.Command{
		Use:           "nexus COMMAND",
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
		newInstances(e, g),
		newWorkspace(e, g),
		newAgent(e, g),
		newUser(e, g),
		newMember(e, g),
		newExecutor(e, g),
		newRunner(e, g),
		newMemory(e, g),
		newPlugins(e, g),
		newRun(e, g),
		newConversation(e, g),
		newTask(e, g),
		newUpload(e, g),
		newPolicy(e, g),
		newInbox(e, g),
		newEvents(e, g),
		newAsk(e, g),
		newDecision(e, g, true),
		newDecision(e, g, false),
		newVersion(e),
		newHealth(e),
	)
	// Bare, the root prints its help; with an unknown command, a usage error.
	root.Args = cobra.NoArgs
	root.RunE = func(cmd *cobra.Command, _ []string) error { return cmd.Help() }
	markUsageErrors(root)
	return root
}

// serverFlags are the settings flags of the commands that open the store.
type serverFlags struct {
	listen, databaseURL, logLevel, logFormat string
	pluginDirs                               []string
	// tlsCert and tlsKey are serve's key pair (docs/operations.md#tls).
	tlsCert, tlsKey string
}

func (f *serverFlags) register(fs *pflag.FlagSet, withListen bool) {
	if withListen {
		fs.StringVar(&f.listen, "listen", "", "HTTP listen address (env "+server.EnvListen+", default "+server.DefaultListen+")")
		fs.StringArrayVar(&f.pluginDirs, "plugin-dir", nil, "directory of plugin binaries; repeatable (env "+server.EnvPluginDir+")")
		fs.StringVar(&f.tlsCert, "tls-cert-file", "", "serve TLS with this PEM certificate chain, with --tls-key-file; reread on SIGHUP (env "+server.EnvTLSCertFile+")")
		fs.StringVar(&f.tlsKey, "tls-key-file", "", "the PEM private key of --tls-cert-file (env "+server.EnvTLSKeyFile+")")
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
		flags.TLSCertFile = str("tls-cert-file", f.tlsCert)
		flags.TLSKeyFile = str("tls-key-file", f.tlsKey)
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
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "version [--json]",
		Short: "Print the build's version and commit",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			commit := buildCommit()
			if !asJSON {
				_, err := fmt.Fprintf(e.stdout, "nexus %s (commit %s)\n", Version, commit)
				return err
			}
			b, err := json.Marshal(map[string]string{
				"version": Version, "commit": commit, "go": runtime.Version(), "os": runtime.GOOS, "arch": runtime.GOARCH,
			})
			if err != nil {
				return err
			}
			_, err = fmt.Fprintf(e.stdout, "%s\n", b)
			return err
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, `print {"version", "commit", "go", "os", "arch"} as JSON`)
	return cmd
}
