package wire

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"time"

	"github.com/nexuskernel/nexus/core/model"
)

// Connection limits.
const (
	// DialTimeout and TLSHandshakeTimeout: a provider that cannot be reached in 10 s is down for
	// this attempt.
	DialTimeout         = 10 * time.Second
	TLSHandshakeTimeout = 10 * time.Second
	// MaxRedirects: same-origin 307 and 308 only, which keep the method and body; a few are
	// enough for a gateway that moves a path.
	MaxRedirects = 3
)

// RedirectError is a redirect the client refused to follow: to another origin, or one that
// would turn the POST into a GET.
type RedirectError struct{ Detail string }

func (e *RedirectError) Error() string { return e.Detail }

// NewClient builds the HTTP client of one provider block: the standard proxy variables, dial and
// TLS handshake bounded at 10 s, TLS verified against the system roots plus ca_file (never
// disabled), connections pooled for this block only, and redirects refused unless they stay on
// the configured origin with a 307 or 308.
func NewClient(p model.ProviderConfig) (*http.Client, error) {
	origin, err := url.Parse(p.BaseURL)
	if err != nil {
		return nil, fmt.Errorf("base_url: %w", err)
	}
	tlsConf := &tls.Config{MinVersion: tls.VersionTLS12}
	if p.CAFile != "" {
		pem, err := os.ReadFile(p.CAFile)
		if err != nil {
			return nil, fmt.Errorf("ca_file: %w", err)
		}
		roots, err := x509.SystemCertPool()
		if err != nil || roots == nil {
			roots = x509.NewCertPool()
		}
		if !roots.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("ca_file %s holds no PEM certificate", p.CAFile)
		}
		tlsConf.RootCAs = roots
	}
	transport := &http.Transport{
		Proxy:                 http.ProxyFromEnvironment,
		DialContext:           (&net.Dialer{Timeout: DialTimeout, KeepAlive: 30 * time.Second}).DialContext,
		TLSHandshakeTimeout:   TLSHandshakeTimeout,
		TLSClientConfig:       tlsConf,
		ForceAttemptHTTP2:     true,
		MaxIdleConns:          64,
		MaxIdleConnsPerHost:   16,
		IdleConnTimeout:       90 * time.Second,
		ExpectContinueTimeout: time.Second,
	}
	return &http.Client{Transport: transport, CheckRedirect: redirectRule(origin)}, nil
}

// redirectRule keeps credentials on the configured origin: nothing is sent to another scheme,
// host or port, and 301, 302 and 303 are refused because they would turn the POST into a GET.
func redirectRule(origin *url.URL) func(*http.Request, []*http.Request) error {
	return func(req *http.Request, via []*http.Request) error {
		if req.URL.Scheme != origin.Scheme || req.URL.Host != origin.Host {
			return &RedirectError{Detail: "redirect to another origin refused: " + req.URL.Scheme + "://" + req.URL.Host}
		}
		if req.Response != nil && req.Response.StatusCode != http.StatusTemporaryRedirect && req.Response.StatusCode != http.StatusPermanentRedirect {
			return &RedirectError{Detail: fmt.Sprintf("redirect refused: status %d would turn the POST into a GET", req.Response.StatusCode)}
		}
		if len(via) > MaxRedirects {
			return &RedirectError{Detail: fmt.Sprintf("redirect refused: more than %d redirects", MaxRedirects)}
		}
		return nil
	}
}

// Loopback reports whether base_url's host is a loopback address (or localhost), where plain
// http carries a key no further than this machine.
func Loopback(baseURL string) bool {
	u, err := url.Parse(baseURL)
	if err != nil {
		return false
	}
	h := u.Hostname()
	if h == "localhost" {
		return true
	}
	ip := net.ParseIP(h)
	return ip != nil && ip.IsLoopback()
}

// InsecureKey reports whether a provider would send its key unencrypted across the network.
func InsecureKey(p model.ProviderConfig) bool {
	u, err := url.Parse(p.BaseURL)
	return err == nil && p.APIKey.IsSet() && u.Scheme == "http" && !Loopback(p.BaseURL)
}

// certificateError reports whether err is a server certificate that does not verify.
func certificateError(err error) bool {
	var unknown x509.UnknownAuthorityError
	var invalid x509.CertificateInvalidError
	var host x509.HostnameError
	var verify *tls.CertificateVerificationError
	return errors.As(err, &unknown) || errors.As(err, &invalid) || errors.As(err, &host) || errors.As(err, &verify)
}
