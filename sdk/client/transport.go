package client

import (
	"net/http"
	"time"
)

// idleConnsPerServer bounds the idle keep-alive connections the default client keeps to one
// server. net/http's default keeps two per host, so a runner working with more goroutines than
// that closed a connection after nearly every request and opened a new one for the next: a TCP
// handshake and a server goroutine per call, and sockets piling up in TIME_WAIT. Sixty-four
// covers a busy runner's goroutines and the event streams beside them; connections beyond it
// still work and close after use.
const idleConnsPerServer = 64

// defaultHTTP is the http.Client of clients made without WithHTTPClient: net/http's default
// transport (proxy from the environment, dial and TLS timeouts, HTTP/2 when offered) keeping
// up to idleConnsPerServer idle connections per server. It sets no overall timeout, which
// would cut event streams; requests are bounded by their contexts.
var defaultHTTP = &http.Client{Transport: defaultTransport()}

func defaultTransport() http.RoundTripper {
	base, ok := http.DefaultTransport.(*http.Transport)
	if !ok {
		return http.DefaultTransport
	}
	t := base.Clone()
	t.MaxIdleConnsPerHost = idleConnsPerServer
	t.MaxIdleConns = max(t.MaxIdleConns, idleConnsPerServer)
	t.IdleConnTimeout = 90 * time.Second
	return t
}
