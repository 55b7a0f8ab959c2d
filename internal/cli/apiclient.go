package cli

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/nexuskernel/nexus/core/identity"
	"github.com/nexuskernel/nexus/core/server"
	"github.com/nexuskernel/nexus/sdk/client"
)

// Client settings of the commands that talk to a running server.
const (
	// EnvAddr is the server's base URL.
	EnvAddr = "NEXUS_ADDR"
	// EnvToken is the member token the commands send.
	EnvToken = "NEXUS_TOKEN"
	// DefaultAddr is where `nexus serve` listens by default.
	DefaultAddr = "http://" + server.DefaultListen
)

type clientFlags struct {
	server string
	token  string
	json   bool
}

// register adds the client flags to cmd and every command below it.
func (f *clientFlags) register(cmd *cobra.Command) { f.addTo(cmd.PersistentFlags()) }

// registerOn adds the client flags to cmd alone (a command whose siblings do not talk to a
// server, such as token mint).
func (f *clientFlags) registerOn(cmd *cobra.Command) { f.addTo(cmd.Flags()) }

func (f *clientFlags) addTo(fs *pflag.FlagSet) {
	fs.StringVar(&f.server, "server", "", "server base URL (env "+EnvAddr+", default "+DefaultAddr+")")
	fs.StringVar(&f.token, "token", "", "member token (env "+EnvToken+", default: <data-dir>/admin.token)")
	fs.BoolVar(&f.json, "json", false, "print the API's JSON body")
}

// client builds the API client: --server, then NEXUS_ADDR, then the default; --token, then
// NEXUS_TOKEN, then the data directory's admin.token.
func (e *env) client(cmd *cobra.Command, g *globals, f *clientFlags) (*client.Client, error) {
	addr := f.server
	if !cmd.Flags().Changed("server") {
		addr = e.getenv(EnvAddr)
	}
	if addr == "" {
		addr = DefaultAddr
	}
	if !strings.Contains(addr, "://") {
		addr = "http://" + addr
	}
	tok := f.token
	if !cmd.Flags().Changed("token") {
		tok = e.getenv(EnvToken)
	}
	if tok == "" {
		s, err := e.settings(cmd, g, nil)
		if err != nil {
			return nil, err
		}
		path := filepath.Join(s.DataDir, identity.AdminTokenFile)
		b, err := os.ReadFile(path)
		if err != nil {
			return nil, fmt.Errorf("no token: pass --token, set %s, or run where %s is readable (%w)", EnvToken, path, err)
		}
		tok = strings.TrimSpace(string(b))
	}
	return client.New(addr, tok), nil
}

// apiError makes a client refusal read well on a terminal.
func apiError(err error) error {
	var ce *client.Error
	if errors.As(err, &ce) {
		return fmt.Errorf("%s (%d): %s", ce.Code, ce.Status, ce.Message)
	}
	return err
}
