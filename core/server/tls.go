package server

import (
	"crypto/tls"
	"fmt"
	"os"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
)

// The TLS settings, by the names the settings file, the refusals and docs/operations.md use.
const (
	SettingTLSCertFile = "tls_cert_file"
	SettingTLSKeyFile  = "tls_key_file"
	EnvTLSCertFile     = "NEXUS_TLS_CERT_FILE"
	EnvTLSKeyFile      = "NEXUS_TLS_KEY_FILE"
)

// TLSMinVersion is the oldest protocol the listener speaks: TLS 1.2, which every client of the
// last decade has, and the floor current guidance sets.
const TLSMinVersion = tls.VersionTLS12

// certificate is the listener's key pair. The handshake reads the current pair through
// GetCertificate, so a reload swaps it for every new connection without a restart; connections
// already open keep the pair they were made with.
type certificate struct {
	certFile, keyFile string
	current           atomic.Pointer[tls.Certificate]
}

// loadCertificate reads the settings' key pair, or answers nil when TLS is not configured. An
// unreadable file is an error naming its setting.
func loadCertificate(s Settings) (*certificate, error) {
	if s.TLSCertFile == "" && s.TLSKeyFile == "" {
		return nil, nil
	}
	c := &certificate{certFile: s.TLSCertFile, keyFile: s.TLSKeyFile}
	pair, err := readKeyPair(c.certFile, c.keyFile)
	if err != nil {
		return nil, err
	}
	c.current.Store(pair)
	return c, nil
}

// readKeyPair reads and checks one key pair.
func readKeyPair(certFile, keyFile string) (*tls.Certificate, error) {
	certPEM, err := os.ReadFile(certFile)
	if err != nil {
		return nil, fmt.Errorf("%s %q: %w", SettingTLSCertFile, certFile, err)
	}
	keyPEM, err := os.ReadFile(keyFile)
	if err != nil {
		return nil, fmt.Errorf("%s %q: %w", SettingTLSKeyFile, keyFile, err)
	}
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return nil, fmt.Errorf("%s %q and %s %q: %w", SettingTLSCertFile, certFile, SettingTLSKeyFile, keyFile, err)
	}
	if pair.Leaf == nil {
		return nil, fmt.Errorf("%s %q: no certificate", SettingTLSCertFile, certFile)
	}
	return &pair, nil
}

// reload reads the files again and swaps the pair in; a pair that cannot be read leaves the
// current one serving.
func (c *certificate) reload() (*tls.Certificate, error) {
	pair, err := readKeyPair(c.certFile, c.keyFile)
	if err != nil {
		return nil, err
	}
	c.current.Store(pair)
	return pair, nil
}

func (c *certificate) get(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	return c.current.Load(), nil
}

// config is the listener's TLS configuration.
func (c *certificate) config() *tls.Config {
	return &tls.Config{MinVersion: TLSMinVersion, GetCertificate: c.get}
}

// logCertificate says which certificate serves, and warns when it has expired or is not valid yet:
// clients will refuse it, and the log is where an operator looks first.
func logCertificate(log hclog.Logger, msg string, pair *tls.Certificate, now time.Time) {
	leaf := pair.Leaf
	args := []any{"subject", leaf.Subject.String(), "not_after", leaf.NotAfter.UTC().Format(time.RFC3339)}
	switch {
	case now.After(leaf.NotAfter):
		log.Warn(msg+": the certificate has expired; clients will refuse it", args...)
	case now.Before(leaf.NotBefore):
		log.Warn(msg+": the certificate is not valid yet; clients will refuse it", args...)
	default:
		log.Info(msg, args...)
	}
}

// ReloadTLS reads the certificate and key files again and serves the new pair on every new
// connection (SIGHUP, for certificate rotation: docs/operations.md#tls). A pair that cannot be
// read is logged at error and the current one keeps serving. On a server without TLS it does
// nothing and answers nil.
func (s *Server) ReloadTLS() error {
	if s.tls == nil {
		return nil
	}
	pair, err := s.tls.reload()
	if err != nil {
		s.log.Error("reload: the TLS certificate was not replaced; the current one keeps serving", "error", err)
		return err
	}
	logCertificate(s.log, "reloaded the TLS certificate", pair, s.now())
	return nil
}

// TLS reports whether the listener serves TLS.
func (s *Server) TLS() bool { return s.tls != nil }
