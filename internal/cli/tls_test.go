package cli

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nexuskernel/nexus/core/store"
)

// testCA is a private certificate authority the test makes, as an operator's own would be.
type testCA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	pem  []byte
}

func newTestCA(t *testing.T) *testCA {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "nexus test authority"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return &testCA{cert: cert, key: key, pem: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})}
}

// leaf issues a server certificate for 127.0.0.1 with the serial given, and answers its PEM
// certificate and key.
func (ca *testCA) leaf(t *testing.T, serial int64) (certPEM, keyPEM []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: fmt.Sprintf("nexus %d", serial)},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, DNSNames: []string{"localhost"},
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder})
}

// replaceFile writes a file the way a certificate tool rotates one: a new file renamed over the
// old, so the server never reads half of it.
func replaceFile(t *testing.T, path string, data []byte) {
	t.Helper()
	tmp := path + ".new"
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

// servedSerial answers the serial number of the certificate the server at addr presents, checked
// against the authority; 0 when no handshake succeeds.
func servedSerial(ca *testCA, addr string) int64 {
	pool := x509.NewCertPool()
	pool.AddCert(ca.cert)
	conn, err := tls.DialWithDialer(&net.Dialer{Timeout: 2 * time.Second}, "tcp", addr, &tls.Config{RootCAs: pool, ServerName: "127.0.0.1"})
	if err != nil {
		return 0
	}
	defer conn.Close()
	return conn.ConnectionState().PeerCertificates[0].SerialNumber.Int64()
}

// waitServed waits until the server at addr presents the certificate with serial, or fails.
func waitServed(t *testing.T, ca *testCA, addr string, serial int64, exited <-chan error, log *syncBuffer) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case err := <-exited:
			t.Fatalf("the server exited: %v\n%s", err, log.String())
		default:
		}
		if servedSerial(ca, addr) == serial {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("the server did not present certificate %d (it presents %d)\n%s", serial, servedSerial(ca, addr), log.String())
}

// TestServeTLS: with tls_cert_file and tls_key_file (relative to the settings file) the
// listener serves HTTPS with that pair; nexus health trusts it through SSL_CERT_FILE and says
// why without it; a SIGHUP after the files are replaced serves the new pair, and a SIGHUP over a
// broken pair keeps the current one serving and logs why.
func TestServeTLS(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ca := newTestCA(t)
	caFile := filepath.Join(dir, "ca.pem")
	if err := os.WriteFile(caFile, ca.pem, 0o600); err != nil {
		t.Fatal(err)
	}
	certFile, keyFile := filepath.Join(dir, "tls", "server.pem"), filepath.Join(dir, "tls", "server.key")
	if err := os.Mkdir(filepath.Dir(certFile), 0o700); err != nil {
		t.Fatal(err)
	}
	c1, k1 := ca.leaf(t, 101)
	replaceFile(t, certFile, c1)
	replaceFile(t, keyFile, k1)
	config := filepath.Join(dir, "nexus.hcl")
	if err := os.WriteFile(config, []byte("tls_cert_file = \"tls/server.pem\"\ntls_key_file = \"tls/server.key\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}

	addr := freeAddr(t)
	p := startServe(t, "serve", "--listen", addr, "--data-dir", filepath.Join(dir, "data"), "--config", config)
	cmd, stderr, exited := p.cmd, p.stderr, p.exited
	waitServed(t, ca, addr, 101, exited, stderr)

	// Plain HTTP on the TLS port is answered 400 by net/http, never served.
	if resp, err := http.Get("http://" + addr + "/healthz"); err == nil {
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			t.Fatal("the TLS listener served plain HTTP")
		}
	}

	url := "https://" + addr
	health := func(env ...string) (string, string, int) {
		t.Helper()
		c := nexusCmd(t, "health", "--server", url)
		// SSL_CERT_DIR empty: only SSL_CERT_FILE, when set, names what is trusted.
		c.Env = append(c.Env, append([]string{"SSL_CERT_DIR=" + t.TempDir(), "SSL_CERT_FILE=" + filepath.Join(dir, "none.pem")}, env...)...)
		var out, errs strings.Builder
		c.Stdout, c.Stderr = &out, &errs
		err := c.Run()
		code := 0
		if ee, ok := err.(interface{ ExitCode() int }); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		return out.String(), errs.String(), code
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		out, errs, code := health("SSL_CERT_FILE=" + caFile)
		if code == 0 {
			if out != "ready\n" {
				t.Fatalf("health: stdout %q", out)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("health with SSL_CERT_FILE: exit %d, %s", code, errs)
		}
		time.Sleep(100 * time.Millisecond)
	}
	_, errs, code := health()
	if code != 1 || strings.Count(errs, "\n") != 1 || !strings.Contains(errs, "certificate") || !strings.Contains(errs, "set SSL_CERT_FILE") {
		t.Fatalf("health without the authority: exit %d, stderr %q; want exit 1 and one line naming SSL_CERT_FILE", code, errs)
	}

	// Rotation: new files, then SIGHUP.
	c2, k2 := ca.leaf(t, 102)
	replaceFile(t, certFile, c2)
	replaceFile(t, keyFile, k2)
	if got := servedSerial(ca, addr); got != 101 {
		t.Fatalf("the new pair was served before SIGHUP: %d", got)
	}
	if err := cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	waitServed(t, ca, addr, 102, exited, stderr)

	// A broken pair (the new certificate with the old key) is refused; the current pair serves on.
	c3, _ := ca.leaf(t, 103)
	replaceFile(t, certFile, c3)
	if err := cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	deadline = time.Now().Add(30 * time.Second)
	for !strings.Contains(stderr.String(), "the TLS certificate was not replaced") {
		if time.Now().After(deadline) {
			t.Fatalf("no log line for the broken pair:\n%s", stderr.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	if !strings.Contains(stderr.String(), "tls_cert_file") || !strings.Contains(stderr.String(), "tls_key_file") {
		t.Fatalf("the refused reload does not name the settings:\n%s", stderr.String())
	}
	if got := servedSerial(ca, addr); got != 102 {
		t.Fatalf("after a broken pair the server presents %d, want the current 102", got)
	}
}

// TestServeRefusesUnreadableTLS: a key pair that cannot be read stops serve at start, naming the
// setting, before it creates its data directory.
func TestServeRefusesUnreadableTLS(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ca := newTestCA(t)
	c1, k1 := ca.leaf(t, 1)
	_, k2 := ca.leaf(t, 2)
	write := func(name string, b []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	cert, key, otherKey := write("c.pem", c1), write("k.pem", k1), write("k2.pem", k2)
	missing := filepath.Join(dir, "missing.pem")
	for _, tc := range []struct {
		name string
		args []string
		want []string
	}{
		{"missing certificate", []string{"--tls-cert-file", missing, "--tls-key-file", key}, []string{`tls_cert_file "` + missing + `"`, "no such file"}},
		{"missing key", []string{"--tls-cert-file", cert, "--tls-key-file", missing}, []string{`tls_key_file "` + missing + `"`, "no such file"}},
		{"a directory", []string{"--tls-cert-file", dir, "--tls-key-file", key}, []string{`tls_cert_file "` + dir + `"`}},
		{"keys that do not match", []string{"--tls-cert-file", cert, "--tls-key-file", otherKey}, []string{"tls_cert_file", "tls_key_file", "does not match"}},
		{"the certificate alone", []string{"--tls-cert-file", cert}, []string{"tls_cert_file and tls_key_file go together"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			data := filepath.Join(t.TempDir(), "data")
			args := append([]string{"serve", "--listen", "127.0.0.1:0", "--data-dir", data}, tc.args...)
			_, errs, code := inProcess(t, nil, args...)
			if code != 1 {
				t.Fatalf("exit %d, want 1: %s", code, errs)
			}
			for _, w := range tc.want {
				if !strings.Contains(errs, w) {
					t.Errorf("stderr %q does not say %q", errs, w)
				}
			}
			if _, err := os.Stat(data); !os.IsNotExist(err) {
				t.Errorf("the data directory was made: %v", err)
			}
		})
	}
}

// TestHealth: nexus health exits 0 and prints ready when /readyz answers ready, and exits 1 with
// one line saying why otherwise: the server's reasons, a refused connection, no answer in time.
func TestHealth(t *testing.T) {
	t.Parallel()
	ls := startServer(t, store.SQLite)
	// The server answers not ready until its plugins had their first start, a moment after it
	// listens: the probe is asked until it says ready.
	deadline := time.Now().Add(30 * time.Second)
	for {
		out, errs, code := inProcess(t, map[string]string{EnvAddr: ls.url}, "health")
		if code == 0 {
			if out != "ready\n" || errs != "" {
				t.Fatalf("health of a ready server: stdout %q, stderr %q", out, errs)
			}
			break
		}
		if code != 1 || !strings.HasPrefix(errs, "nexus: not ready: ") || time.Now().After(deadline) {
			t.Fatalf("health of a starting server: exit %d, stdout %q, stderr %q", code, out, errs)
		}
		time.Sleep(20 * time.Millisecond)
	}

	notReady := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/readyz" || r.Header.Get("Authorization") != "" {
			http.Error(w, "wrong request", http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusServiceUnavailable)
		fmt.Fprint(w, `{"status":"not_ready","reasons":["plugins: starting","store: dial tcp:\nrefused"]}`)
	}))
	defer notReady.Close()
	_, errs, code := inProcess(t, nil, "health", "--server", notReady.URL)
	want := "nexus: not ready: plugins: starting; store: dial tcp: refused at " + notReady.URL + "\n"
	if code != 1 || errs != want {
		t.Fatalf("health of a server not ready: exit %d, stderr %q, want %q", code, errs, want)
	}

	_, errs, code = inProcess(t, nil, "health", "--server", "127.0.0.1:1")
	if code != 1 || strings.Count(errs, "\n") != 1 || !strings.Contains(errs, "no server answers at 127.0.0.1:1") {
		t.Fatalf("health with nothing listening: exit %d, stderr %q", code, errs)
	}

	silent := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() }))
	defer silent.Close()
	_, errs, code = inProcess(t, nil, "health", "--server", silent.URL, "--timeout", "200ms")
	if code != 1 || errs != "nexus: "+silent.URL+" did not answer /readyz within 200ms\n" {
		t.Fatalf("health of a silent server: exit %d, stderr %q", code, errs)
	}

	_, errs, code = inProcess(t, nil, "health", "--timeout", "0s")
	if code != exitUsage || !strings.Contains(errs, "--timeout must be positive") {
		t.Fatalf("health --timeout 0s: exit %d, stderr %q", code, errs)
	}
}

// TestVersionNamesTheCommit: nexus version prints the version and the commit the build stamped,
// and --json carries both.
func TestVersionNamesTheCommit(t *testing.T) {
	saved, savedCommit := Version, Commit
	Version, Commit = "0.1.0", "0123456789ab"
	defer func() { Version, Commit = saved, savedCommit }()
	out, _, code := inProcess(t, nil, "version")
	if code != 0 || out != "nexus 0.1.0 (commit 0123456789ab)\n" {
		t.Fatalf("version: exit %d, %q", code, out)
	}
	out, _, code = inProcess(t, nil, "version", "--json")
	if code != 0 || !strings.Contains(out, `"version":"0.1.0"`) || !strings.Contains(out, `"commit":"0123456789ab"`) {
		t.Fatalf("version --json: exit %d, %q", code, out)
	}
}
