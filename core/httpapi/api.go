package httpapi

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"runtime/debug"
	"strings"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/nexuskernel/nexus/core/conversations"
	"github.com/nexuskernel/nexus/core/events"
	"github.com/nexuskernel/nexus/core/executors"
	"github.com/nexuskernel/nexus/core/identity"
	"github.com/nexuskernel/nexus/core/memory"
	"github.com/nexuskernel/nexus/core/model"
	"github.com/nexuskernel/nexus/core/profiles"
	"github.com/nexuskernel/nexus/core/refusal"
	"github.com/nexuskernel/nexus/core/runs"
	"github.com/nexuskernel/nexus/core/store"
	"github.com/nexuskernel/nexus/core/uploads"
)

// DefaultBodyLimit bounds every JSON request body unless a route states another bound
// (docs/api.md#conventions): large enough for any declaration or step list the specs allow, small
// enough that a hostile body costs little before it is refused.
const DefaultBodyLimit = 1 << 20

// Deps are the services the API calls.
type Deps struct {
	Log  hclog.Logger
	Auth *identity.Authenticator
	// Directory serves the identity routes (workspaces, members, agents, executors, tokens).
	Directory *identity.Directory
	// Memory serves the member doors of kernel memory; nil leaves them unserved.
	Memory *memory.Doors
	// Uploads serves the upload doors of both planes; nil leaves them unserved.
	Uploads *uploads.Service
	// Push serves the executors' event streams; nil leaves the route unserved.
	Push *executors.Hub
	// Executors serves the executor plane's announcement and work doors and the announced
	// fields of member discovery; nil leaves the doors unserved.
	Executors *executors.Service
	// CatalogBody is the kernel tool catalog route's body, computed once at start.
	CatalogBody []byte
	// Ready reports why the server is not ready; empty means ready.
	Ready func(ctx context.Context) []string
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// Runs is the run engine; nil serves no run routes.
	Runs *runs.Engine
	// RunWatch wakes waiting run reads; nil answers them at once.
	RunWatch *conversations.RunWatch
	// Events is the event feed the members' event streams follow; nil leaves the route
	// unserved.
	Events *events.Bus
	// EventKeepAlive replaces MemberStreamKeepAlive (tests use a short one).
	EventKeepAlive time.Duration
	// Models is the models catalog; nil serves no models route.
	Models *model.Catalog
	// Profiles serves the profile configuration and tool assembly routes; nil serves neither.
	Profiles *profiles.Service
	// Plugins serves the plugin routes; nil leaves them unserved.
	Plugins PluginAdmin
	// Timeouts are the body read bounds; zero fields take BodyReadTimeout, UploadStallTimeout
	// and UploadReadTimeout (tests shorten them).
	Timeouts Timeouts
}

// Timeouts bound reading request bodies (docs/api.md, "Slow bodies").
type Timeouts struct {
	Body, UploadStall, Upload time.Duration
}

// API is the HTTP handler of the whole server.
type API struct {
	deps    Deps
	mux     *http.ServeMux
	catalog *catalog
	// conversations serves the conversation doors over deps.Runs.
	conversations *conversations.Doors
	// patterns lists every registered route, for the tests that walk them all.
	patterns []string
	// streams counts the members' open event streams.
	streams *memberStreams
}

// New builds the API.
func New(d Deps) (*API, error) {
	if d.Log == nil {
		d.Log = hclog.NewNullLogger()
	}
	if d.Now == nil {
		d.Now = time.Now
	}
	if d.Ready == nil {
		d.Ready = func(context.Context) []string { return nil }
	}
	if d.Timeouts.Body <= 0 {
		d.Timeouts.Body = BodyReadTimeout
	}
	if d.Timeouts.UploadStall <= 0 {
		d.Timeouts.UploadStall = UploadStallTimeout
	}
	if d.Timeouts.Upload <= 0 {
		d.Timeouts.Upload = UploadReadTimeout
	}
	if d.Auth == nil || d.Directory == nil {
		return nil, errors.New("httpapi: Deps.Auth and Deps.Directory are required")
	}
	a := &API{deps: d, mux: http.NewServeMux(), streams: newMemberStreams()}
	cat, err := newCatalog(d.CatalogBody)
	if err != nil {
		return nil, err
	}
	a.catalog = cat
	a.routes()
	return a, nil
}

func (a *API) routes() {
	a.handle("GET /healthz", routeOpts{}, a.healthz)
	a.handle("GET /readyz", routeOpts{}, a.readyz)
	a.handle("GET /agent_api/v1/tools", routeOpts{}, a.tools)
	a.workspaceRoutes()
	a.agentRoutes()
	a.memberRoutes()
	a.tokenRoutes()
	a.executorRoutes()
	a.executorPlaneRoutes()
	a.memoryRoutes()
	a.profileRoutes()
	a.uploadRoutes()
	a.eventRoutes()
	a.memberEventRoutes()
	a.conversationRoutes()
	a.runRoutes()
	a.modelsRoutes()
	a.pluginRoutes()
	a.instanceRoutes()
}

// Routes lists the pattern of every route the API serves ("POST /agent_api/v1/…"), in the
// order they were registered: the tests that keep docs/api.md complete read it.
func (a *API) Routes() []string { return append([]string(nil), a.patterns...) }

// plane is who may call a route.
type plane int

const (
	planeNone plane = iota
	planeMember
	planeExecutor
)

// apiPrefix is the root of every authenticated route.
const apiPrefix = "/agent_api/v1"

// planeOf seals the planes by path alone (docs/api.md#planes-and-tokens): the executor's own door
// is /agent_api/v1/executor and below; every other /agent_api/v1 route is the member plane; only
// the health routes sit outside both.
func planeOf(path string) plane {
	switch {
	case path == apiPrefix+"/executor" || strings.HasPrefix(path, apiPrefix+"/executor/"):
		return planeExecutor
	case strings.HasPrefix(path, apiPrefix+"/"):
		return planeMember
	default:
		return planeNone
	}
}

type routeOpts struct {
	// bodyLimit overrides DefaultBodyLimit.
	bodyLimit int64
	// stream leaves the body unread for the handler to stream (uploads): only a declared
	// Content-Length over bodyLimit is refused up front, and Call.Body stays nil.
	stream bool
}

// Call is what a handler knows about its request beyond net/http's.
type Call struct {
	RequestID string
	Log       hclog.Logger
	// Member is the authenticated member on member-plane routes.
	Member *identity.Principal
	// Executor is the authenticated executor on executor-plane routes.
	Executor *identity.Executor
	// Body is the whole request body, already bounded; nil when the request had none.
	Body []byte
	// gone marks a request whose client stopped waiting before the handler answered.
	gone bool
	// NoFault marks a 5xx answer that is no server fault (a readiness probe answering not
	// ready while plugins start): it is logged at debug like any answer, not as an error.
	NoFault bool
}

type handlerFunc func(w http.ResponseWriter, r *http.Request, c *Call) error

type callKey struct{}

// handle registers a route. The plane comes from the path, so no route can be registered outside
// the seal.
func (a *API) handle(pattern string, opts routeOpts, h handlerFunc) {
	method, path, ok := strings.Cut(pattern, " ")
	if !ok {
		panic("httpapi: route pattern without a method: " + pattern)
	}
	pl := planeOf(path)
	if pl == planeNone && path != "/healthz" && path != "/readyz" {
		panic("httpapi: route outside " + apiPrefix + ": " + pattern)
	}
	limit := opts.bodyLimit
	if limit == 0 {
		limit = DefaultBodyLimit
	}
	readsBody := method != http.MethodGet && method != http.MethodHead
	a.patterns = append(a.patterns, pattern)
	a.mux.HandleFunc(pattern, func(w http.ResponseWriter, r *http.Request) {
		c := r.Context().Value(callKey{}).(*Call)
		// The order every door keeps (docs/api.md, "Slow bodies"): the bound a declared
		// Content-Length breaks (413), the token from the headers (401), then the body, read
		// within its time bound (408). No byte of a body is read for a caller without a token,
		// and an answer given before the body was read closes the connection, so that nobody
		// holds one open by sending a body slowly or not at all. A 401 always closes it.
		if readsBody && r.ContentLength > limit {
			writeError(w, c.Log, c.RequestID, errTooLarge(limit))
			return
		}
		if err := a.authenticate(r, c, pl); err != nil {
			// A caller without a token keeps no connection: it holds one no longer than the
			// server's header bound.
			closeAfter(w)
			fail(w, r, c, err)
			return
		}
		if readsBody && !opts.stream {
			body, err := readBody(w, r, limit, a.deps.Timeouts.Body)
			if err != nil {
				fail(w, r, c, err)
				return
			}
			c.Body = body
		}
		if err := h(w, r, c); err != nil {
			fail(w, r, c, err)
		}
	})
}

// fail answers a door's error. An error that is no refusal after the client stopped waiting (it
// closed the connection, or its HTTP/2 stream, and the request's context ended) is what the
// context's end did to the call (a cancelled statement, a wait cut short), not a server fault:
// nobody reads an answer, so nothing is written, and the request log says
// StatusClientClosedRequest at debug. A refusal is written as always (a body that stalled past
// its bound ends the context too, and its 408 is the answer).
func fail(w http.ResponseWriter, r *http.Request, c *Call, err error) {
	if ref, ok := refusal.As(err); (!ok || ref.Kind == refusal.Internal) && r.Context().Err() != nil {
		c.gone = true
		return
	}
	writeError(w, c.Log, c.RequestID, err)
}

// StatusClientClosedRequest is the status the request log gives a request whose client stopped
// waiting before the answer (docs/api.md#conventions): nothing is written to the client, and the
// line is at debug. 499 is nginx's status for the same event, which log tools already know.
const StatusClientClosedRequest = 499

// authenticate resolves the caller of a route of plane pl from the request's headers alone.
func (a *API) authenticate(r *http.Request, c *Call, pl plane) error {
	switch pl {
	case planeMember:
		p, err := a.deps.Auth.Member(r.Context(), identity.BearerToken(r.Header.Get("Authorization")))
		if err != nil {
			return err
		}
		c.Member = p
	case planeExecutor:
		e, err := a.deps.Auth.Executor(r.Context(), identity.BearerToken(r.Header.Get("Authorization")))
		if err != nil {
			return err
		}
		c.Executor = e
	}
	return nil
}

// closeAfter asks the server to close the connection once this answer is written, and to read
// at most CloseLinger more of it: net/http would otherwise read the rest of an unread body (up
// to 256 KiB, with no deadline) before it answers or reuses the connection, which a sender that
// stalls would hold forever. The linger lets a body already on its way drain, so that a client
// that sent all of it reads its answer rather than a reset connection.
func closeAfter(w http.ResponseWriter) {
	w.Header().Set("Connection", "close")
	_ = http.NewResponseController(w).SetReadDeadline(time.Now().Add(CloseLinger))
}

// CloseLinger bounds what is read of an unread body after an early answer: half a second, as
// long as net/http itself lingers before it closes a connection with a body left unread.
const CloseLinger = 500 * time.Millisecond

// trackedBody notes whether a request's body was read to its end.
type trackedBody struct {
	io.ReadCloser
	ended bool
}

func (b *trackedBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err == io.EOF {
		b.ended = true
	}
	return n, err
}

// BodyReadTimeout bounds reading a JSON request body once its headers and token are accepted:
// the largest body a door takes (2 MiB) arrives in well under a second on any working link and
// in about 16 s at 1 Mbit/s, so 30 s refuses only a sender that stalls or trickles.
const BodyReadTimeout = 30 * time.Second

// UploadStallTimeout bounds the wait for the next bytes of an upload body, and UploadReadTimeout
// its whole read: an upload may be 100 MiB, which takes minutes on a slow link (14 min at
// 1 Mbit/s), so the whole bound is larger than any JSON body's; a sender that stops sending
// is refused within the stall bound all the same.
const (
	UploadStallTimeout = 30 * time.Second
	UploadReadTimeout  = 20 * time.Minute
)

// errTooLarge is the body-bound refusal, answered before any other check.
func errTooLarge(limit int64) error {
	return refusal.Newf(refusal.TooLarge, refusal.CodeContentTooLarge, "The request body exceeds %d bytes.", limit)
}

// errBodyTimeout is the refusal of a body that did not arrive within its bound.
func errBodyTimeout(bound time.Duration) error {
	return refusal.Newf(refusal.RequestTimeout, refusal.CodeRequestTimeout,
		"The request body did not arrive within %s; the connection is closed.", bound)
}

func readBody(w http.ResponseWriter, r *http.Request, limit int64, bound time.Duration) ([]byte, error) {
	rc := http.NewResponseController(w)
	// A writer that cannot set deadlines (a test's recorder) reads without one.
	_ = rc.SetReadDeadline(time.Now().Add(bound))
	defer func() { _ = rc.SetReadDeadline(time.Time{}) }()
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, limit))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return nil, errTooLarge(limit)
		}
		if errors.Is(err, os.ErrDeadlineExceeded) {
			return nil, errBodyTimeout(bound)
		}
		return nil, refusal.New(refusal.BadRequest, refusal.CodeParameterInvalid, "The request body could not be read.")
	}
	if len(body) == 0 {
		return nil, nil
	}
	return body, nil
}

// stallReader reads an upload body within the stall bound of each read and the upload bound
// of the first.
type stallReader struct {
	rc    *http.ResponseController
	r     io.Reader
	stall time.Duration
	end   time.Time
}

func newStallReader(w http.ResponseWriter, r io.Reader, t Timeouts) *stallReader {
	return &stallReader{rc: http.NewResponseController(w), r: r, stall: t.UploadStall, end: time.Now().Add(t.Upload)}
}

func (s *stallReader) Read(p []byte) (int, error) {
	next := time.Now().Add(s.stall)
	if next.After(s.end) {
		next = s.end
	}
	_ = s.rc.SetReadDeadline(next)
	return s.r.Read(p)
}

// done clears the read deadline once the body is read.
func (s *stallReader) done() { _ = s.rc.SetReadDeadline(time.Time{}) }

// ServeHTTP assigns the request id, recovers panics, answers unknown routes and methods before
// any authentication, and logs the request.
func (a *API) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := a.deps.Now()
	id := requestID(r.Header.Get("X-Request-Id"))
	w.Header().Set("X-Request-Id", id)
	log := a.deps.Log.With("request_id", id)
	c := &Call{RequestID: id, Log: log}
	rec := &statusRecorder{ResponseWriter: w}

	defer func() {
		if p := recover(); p != nil {
			if p == http.ErrAbortHandler {
				panic(p)
			}
			log.Error("panic while handling request", "method", r.Method, "path", r.URL.Path, "panic", fmt.Sprint(p), "stack", string(debug.Stack()))
			if !rec.wrote {
				writeError(rec, log, id, fmt.Errorf("panic: %v", p))
			}
		}
		status := rec.status
		if c.gone && !rec.wrote {
			status = StatusClientClosedRequest
		}
		a.logRequest(log, r, status, start, c.NoFault)
	}()
	r = r.WithContext(context.WithValue(r.Context(), callKey{}, c))
	if r.ContentLength != 0 && r.Body != nil && r.Body != http.NoBody {
		// Whatever answers a request whose body is not read to its end closes the
		// connection (closeAfter): refusals before the body, a handler that stops early. The
		// tracker wraps the handlers' copy of the request only: net/http keeps its own body,
		// whose early close it recognises.
		rec.body = &trackedBody{ReadCloser: r.Body}
		r.Body = rec.body
	}
	if _, pattern := a.mux.Handler(r); pattern == "" {
		a.unrouted(rec, r, c)
		return
	}
	a.mux.ServeHTTP(rec, r)
}

// unrouted answers a request no pattern matches: 405 with Allow when the path exists under
// another method, else 404. The mux decides which; its own text body is replaced by ours.
func (a *API) unrouted(w http.ResponseWriter, r *http.Request, c *Call) {
	h, _ := a.mux.Handler(r)
	probe := &headerProbe{header: http.Header{}}
	h.ServeHTTP(probe, r)
	if probe.status == http.StatusMethodNotAllowed {
		w.Header().Set("Allow", probe.header.Get("Allow"))
		writeError(w, c.Log, c.RequestID, refusal.Newf(refusal.MethodNotAllowed, refusal.CodeMethodNotAllowed,
			"%s is not allowed on %s.", r.Method, r.URL.Path))
		return
	}
	writeError(w, c.Log, c.RequestID, refusal.Newf(refusal.NotFound, refusal.CodeNotFound, "No route %s %s.", r.Method, r.URL.Path))
}

func (a *API) logRequest(log hclog.Logger, r *http.Request, status int, start time.Time, noFault bool) {
	if status == 0 {
		status = http.StatusOK
	}
	d := a.deps.Now().Sub(start)
	switch {
	case status >= 500 && !noFault && status != StatusClientClosedRequest:
		log.Error("request", "method", r.Method, "path", r.URL.Path, "status", status, "duration", d)
	case log.IsDebug():
		log.Debug("request", "method", r.Method, "path", r.URL.Path, "status", status, "duration", d)
	}
}

// maxClientRequestID bounds a client-chosen request id that the server keeps
// (docs/api.md#conventions).
const maxClientRequestID = 64

// requestID keeps a client's X-Request-Id when it is 1..64 safe characters (letters, digits,
// '-', '_', '.', ':'), so that a caller can follow its own id through the logs; otherwise it
// mints one.
func requestID(client string) string {
	if n := len(client); n > 0 && n <= maxClientRequestID {
		ok := true
		for i := 0; i < n; i++ {
			c := client[i]
			if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.' || c == ':') {
				ok = false
				break
			}
		}
		if ok {
			return client
		}
	}
	return store.NewPublicID()
}

type statusRecorder struct {
	http.ResponseWriter
	status int
	wrote  bool
	// body tracks the request's body when it has one.
	body *trackedBody
}

func (s *statusRecorder) WriteHeader(code int) {
	if !s.wrote {
		s.status, s.wrote = code, true
		s.closeOnUnread()
	}
	s.ResponseWriter.WriteHeader(code)
}

func (s *statusRecorder) Write(b []byte) (int, error) {
	if !s.wrote {
		s.status, s.wrote = http.StatusOK, true
		s.closeOnUnread()
	}
	return s.ResponseWriter.Write(b)
}

// closeOnUnread closes the connection after an answer written before the body was read to its
// end.
func (s *statusRecorder) closeOnUnread() {
	if s.body != nil && !s.body.ended {
		closeAfter(s.ResponseWriter)
	}
}

func (s *statusRecorder) Flush() {
	if f, ok := s.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (s *statusRecorder) Unwrap() http.ResponseWriter { return s.ResponseWriter }

// headerProbe records what the mux's fallback handler would answer, writing nothing.
type headerProbe struct {
	header http.Header
	status int
}

func (p *headerProbe) Header() http.Header         { return p.header }
func (p *headerProbe) Write(b []byte) (int, error) { return len(b), nil }
func (p *headerProbe) WriteHeader(code int)        { p.status = code }
