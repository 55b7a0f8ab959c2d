package cli

import (
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"

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
	addr := e.serverAddr(cmd, f.server)
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
	if p, ok := identity.TokenPlane(tok); ok && p == identity.ExecutorPlane {
		return nil, errExecutorToken
	}
	return client.New(addr, tok), nil
}

// serverAddr is the server's base URL: --server (flag), then NEXUS_ADDR, then the default; an
// address without a scheme is http.
func (e *env) serverAddr(cmd *cobra.Command, flag string) string {
	addr := flag
	if !cmd.Flags().Changed("server") {
		addr = e.getenv(EnvAddr)
	}
	if addr == "" {
		addr = DefaultAddr
	}
	if !strings.Contains(addr, "://") {
		addr = "http://" + addr
	}
	return addr
}

// errExecutorToken refuses an executor token where a command needs a member token, before any
// request: the server would answer unauthorized.
var errExecutorToken = fmt.Errorf("this is an executor token (nxe_…): it opens only the executor plane, "+
	"/agent_api/v1/executor and the routes below it, which \"nexus runner\" uses (--token or %s); "+
	"this command needs a member token (nxm_…) in --token or %s", EnvExecutorToken, EnvToken)

// apiError makes a client refusal read well on a terminal, and says what a refused connection
// most likely means.
func apiError(err error) error {
	var ce *client.Error
	if errors.As(err, &ce) {
		return fmt.Errorf("%s (%d): %s", ce.Code, ce.Status, ce.Message)
	}
	var oe *net.OpError
	if errors.As(err, &oe) && errors.Is(err, syscall.ECONNREFUSED) {
		return fmt.Errorf("no server answers at %s (connection refused): is \"nexus serve\" running there? "+
			"--server or %s points the command at another address", oe.Addr, EnvAddr)
	}
	var ua x509.UnknownAuthorityError
	var sr x509.SystemRootsError
	if errors.As(err, &ua) || errors.As(err, &sr) {
		return fmt.Errorf("%w: when a private authority signed the server's certificate, "+
			"set SSL_CERT_FILE to a file holding its certificate (docs/operations.md#tls)", err)
	}
	return err
}
