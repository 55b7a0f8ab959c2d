package server

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/mattn/go-isatty"

	"github.com/nexuskernel/nexus/core/conversations"
	"github.com/nexuskernel/nexus/core/declare"
	"github.com/nexuskernel/nexus/core/events"
	"github.com/nexuskernel/nexus/core/executors"
	"github.com/nexuskernel/nexus/core/httpapi"
	"github.com/nexuskernel/nexus/core/identity"
	"github.com/nexuskernel/nexus/core/kernel"
	"github.com/nexuskernel/nexus/core/memory"
	"github.com/nexuskernel/nexus/core/model"
	"github.com/nexuskernel/nexus/core/model/anthropic"
	"github.com/nexuskernel/nexus/core/model/openai"
	"github.com/nexuskernel/nexus/core/model/wire"
	"github.com/nexuskernel/nexus/core/profiles"
	"github.com/nexuskernel/nexus/core/registry"
	"github.com/nexuskernel/nexus/core/runs"
	"github.com/nexuskernel/nexus/core/store"
	"github.com/nexuskernel/nexus/core/uploads"
	"github.com/nexuskernel/nexus/plugins"
)

// PluginResolver is the plugin command search of a server run with these settings; nexus plugins
// discover lists the same directories.
func PluginResolver(s Settings) plugins.Resolver { return pluginResolver(s, "") }

// pluginResolver is the plugin command search (docs/plugins.md#the-plugin-block): the --plugin-dir
// flags (or NEXUS_PLUGIN_DIR), the file's plugin_dirs, then the running binary's directory, so
// `make run` finds the plugin binaries beside bin/nexus.
func pluginResolver(s Settings, exeDir string) plugins.Resolver {
	if exeDir == "" {
		if exe, err := os.Executable(); err == nil {
			if real, err := filepath.EvalSymlinks(exe); err == nil {
				exe = real
			}
			exeDir = filepath.Dir(exe)
		}
	}
	return plugins.Resolver{FlagDirs: s.PluginDirs, ConfigDirs: s.FilePluginDirs, ExecutableDir: exeDir}
}

// DrainTimeout is how long a shutdown waits for in-flight requests: long enough for any ordinary
// request to finish, short enough for a supervisor's stop timeout (systemd's default is 90 s).
const DrainTimeout = 10 * time.Second

// ErrDrainTimeout means shutdown gave up on requests still in flight after DrainTimeout.
var ErrDrainTimeout = errors.New("server: in-flight requests did not finish within the drain timeout")

// Server is a configured kernel, ready to serve.
type Server struct {
	settings Settings
	log      hclog.Logger
	store    *store.Store
	api      *httpapi.API
	now      func() time.Time
	drain    time.Duration
	// headerTimeout bounds reading a request's headers (ReadHeaderTimeout).
	headerTimeout time.Duration
	// stopListening ends the token-invalidation subscription.
	stopListening func()
	engine        *runs.Engine
	uploads       *uploads.Service
	push          *executors.Hub
	// events is the instance's typed event feed (core/events).
	events   *events.Bus
	runWatch *conversations.RunWatch
	// plugins runs the catalog's plugins; pluginPlane is their executor plane.
	plugins     *plugins.Host
	pluginPlane *executors.PluginPlane
	// pluginsStarted is closed once every plugin had its first attempt (docs/operations.md#health).
	pluginsStarted chan struct{}
	startPlugins   sync.Once
	dir            *identity.Directory
	// lock is the SQLite database's lock, held until Close; nil on PostgreSQL.
	lock *store.SQLiteLock
	// tls is the listener's key pair; nil serves plain HTTP.
	tls *certificate
}

// Options adjust Open for tests and tools.
type Options struct {
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// Getenv reads the environment (NEXUS_BOOTSTRAP_TOKEN); nil means os.Getenv.
	Getenv func(string) string
	// DrainTimeout replaces DrainTimeout (tests use a short one).
	DrainTimeout time.Duration
	// TokenTerminal says whether a generated bootstrap token may be printed in the log; nil means
	// "when standard error is a terminal".
	TokenTerminal func() bool
	// PluginTimings shortens the plugin supervisor's clocks (tests); zero fields take the defaults.
	PluginTimings plugins.Timings
	// EventKeepAlive replaces the member event streams' keep-alive interval (tests); zero takes
	// httpapi.MemberStreamKeepAlive.
	EventKeepAlive time.Duration
	// PluginPlane, when set, wraps the executor plane the plugin host drives, so that a
	// benchmark can time the host's calls through it (B19 times its claims); nil leaves the
	// plane as it is.
	PluginPlane func(plugins.ExecutorPlane) plugins.ExecutorPlane
	// ExecutableDir replaces the running binary's directory in plugin command discovery (tests
	// whose binary is not nexus); "" means the directory of os.Executable.
	ExecutableDir string
	// Version is the program version the model providers send in their User-Agent.
	Version string
	// ReadHeaderTimeout replaces ReadHeaderTimeout, and BodyTimeouts the body read bounds
	// (tests shorten them); zero takes the defaults.
	ReadHeaderTimeout time.Duration
	BodyTimeouts      httpapi.Timeouts
}

// ReadHeaderTimeout bounds reading a request's line and headers: a client that has not sent
// them within it, anonymous or not, is disconnected. Ten seconds is ages for a few hundred
// bytes on any link and short enough that idle sockets cannot pile up.
const ReadHeaderTimeout = 10 * time.Second

// IdleTimeout closes a kept-alive connection that sends no next request.
const IdleTimeout = 2 * time.Minute

// Open opens and migrates the store, bootstraps an empty deployment, and builds the API.
func Open(ctx context.Context, s Settings, log hclog.Logger, opts Options) (*Server, error) {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.DrainTimeout <= 0 {
		opts.DrainTimeout = DrainTimeout
	}
	if opts.Getenv == nil {
		opts.Getenv = os.Getenv
	}
	if opts.TokenTerminal == nil {
		opts.TokenTerminal = func() bool { return isatty.IsTerminal(os.Stderr.Fd()) }
	}
	// The key pair before the store: a server whose certificate cannot be read stops before it
	// writes anything.
	certs, err := loadCertificate(s)
	if err != nil {
		return nil, err
	}
	// One server per SQLite database (docs/operations.md#stores): a second one stops here,
	// before it makes its data directory, migrates, bootstraps or writes anything.
	lock, err := store.HoldSQLite(s.Database())
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(s.DataDir, 0o700); err != nil {
		_ = lock.Release()
		return nil, fmt.Errorf("data dir: %w", err)
	}
	st, err := store.Open(ctx, s.Database(), store.Options{})
	if err != nil {
		_ = lock.Release()
		return nil, err
	}
	srv, err := open(ctx, s, log, opts, st)
	if err != nil {
		_ = st.Close()
		_ = lock.Release()
		return nil, err
	}
	srv.lock = lock
	srv.tls = certs
	if certs != nil {
		logCertificate(log, "serving TLS", certs.current.Load(), opts.Now())
	}
	return srv, nil
}

func open(ctx context.Context, s Settings, log hclog.Logger, opts Options, st *store.Store) (*Server, error) {
	applied, err := st.Migrate(ctx)
	if err != nil {
		return nil, err
	}
	if len(applied) > 0 {
		log.Info("applied migrations", "store", st.String(), "versions", applied)
	}
	boot, err := identity.Bootstrap(ctx, st, s.DataDir, opts.Getenv(identity.BootstrapTokenEnv), opts.Now())
	if err != nil {
		return nil, err
	}
	if boot.Created {
		if boot.Generated && opts.TokenTerminal() {
			log.Info("bootstrapped workspace default with user admin", "token_file", boot.TokenFile, "token", boot.Token)
		} else {
			log.Info("bootstrapped workspace default with user admin", "token_file", boot.TokenFile)
		}
	}
	reg := registry.New()
	srv := &Server{settings: s, log: log, store: st, now: opts.Now, drain: opts.DrainTimeout, headerTimeout: opts.ReadHeaderTimeout}
	if srv.headerTimeout <= 0 {
		srv.headerTimeout = ReadHeaderTimeout
	}
	auth := identity.NewAuthenticator(st, opts.Now, identity.WithLogger(log.Named("auth")))
	// Instances sharing a PostgreSQL store hear each other's token revocations; until this
	// returns the token cache serves nothing.
	stopListening, err := auth.Listen(ctx)
	if err != nil {
		return nil, err
	}
	srv.stopListening = stopListening
	models, err := model.NewCatalogWith(s.Models, modelAdapters(log.Named("model"), opts))
	if err != nil {
		stopListening()
		return nil, err
	}
	compiler, err := declare.New(reg)
	if err != nil {
		stopListening()
		return nil, err
	}
	profileService, err := profiles.New(profiles.Options{Store: st, Compiler: compiler, Models: models, Now: opts.Now})
	if err != nil {
		stopListening()
		return nil, err
	}
	// The standard library keeps its content sniffer in net/http, which only this package and
	// core/httpapi import.
	up, err := uploads.New(st, uploads.Options{DetectContentType: http.DetectContentType, Now: opts.Now, Log: log.Named("uploads")})
	if err != nil {
		stopListening()
		return nil, err
	}
	srv.uploads = up
	kmem := memory.New(st)
	// The kernel's memory calls resolve conversation bindings against the run engine's
	// conversation rows; the member doors reach no conversation and need no such states.
	resolver := memory.NewResolver(st, conversations.ConversationStates{})
	tools := kernel.Full(kernel.Services{Memory: kmem, Resolver: resolver, Models: models, Compiler: compiler, Now: opts.Now})
	cfg := runs.Config{}
	if s.Kernel != nil {
		cfg = runs.Config{Workers: s.Kernel.Workers, ModelTimeout: s.Kernel.ModelTimeout, SweepInterval: s.Kernel.SweepInterval,
			HeartbeatInterval: s.Kernel.HeartbeatInterval, HeartbeatTimeout: s.Kernel.HeartbeatTimeout}
	}
	// The push hub is the engine's executor signal; it listens for the other instances'
	// executor wake-ups before any stream opens, and publishes every executor event to the event
	// feed, where the plugins' claim loops hear it (core/events).
	// The engine relays the feed to the other instances and theirs here once it starts
	// (docs/api.md#events).
	srv.events = events.New()
	hub := executors.NewHub(st, executors.HubOptions{Now: opts.Now, Log: log.Named("push"), Events: srv.events})
	// The run watch follows the event feed for waiting reads.
	watch := conversations.NewRunWatch(srv.events)
	srv.runWatch = watch
	engine, err := runs.New(runs.Options{Store: st, Conversations: conversations.Hosted{}, Models: models, Registry: reg, Compiler: compiler,
		Profiles: profileService, Uploads: up, Kernel: tools, Memory: resolver, Config: cfg, Now: opts.Now,
		Signal: hub, Events: srv.events, Announcements: executors.Addressing{}, Overrides: executors.MemoryOverrides{Resolver: resolver}, Log: log.Named("kernel"),
		Version: opts.Version})
	if err != nil {
		stopListening()
		return nil, err
	}
	srv.engine = engine
	plane, err := executors.New(executors.Options{Store: st, Engine: engine, Uploads: up, Log: log.Named("executors")})
	if err != nil {
		stopListening()
		return nil, err
	}
	if err := hub.Start(ctx); err != nil {
		stopListening()
		return nil, err
	}
	srv.push = hub
	// Revoking an executor settles its dispatched work executor_revoked and closes its event
	// streams on every instance.
	dir := identity.NewDirectory(st, auth, identity.DirectoryOptions{Now: opts.Now,
		Revocation: executors.NewRevocation(hub, engine, log.Named("executors"))})
	srv.dir = dir
	srv.pluginPlane = executors.NewPluginPlane(plane, hub, dir)
	var hostPlane plugins.ExecutorPlane = srv.pluginPlane
	if opts.PluginPlane != nil {
		hostPlane = opts.PluginPlane(hostPlane)
	}
	onState := func(name string, st plugins.State) {
		srv.events.Publish(events.PluginState{Name: name, State: string(st), Instance: engine.InstanceID()})
	}
	host, err := plugins.New(plugins.Config{Catalog: s.Plugins, Plane: hostPlane, Logger: log, DataDir: s.DataDir, OnState: onState,
		Resolver: pluginResolver(s, opts.ExecutableDir), Timings: opts.PluginTimings, Storage: memoryRoots{plane.PluginRoots()}})
	if err != nil {
		hub.Close()
		stopListening()
		return nil, err
	}
	srv.plugins = host
	srv.pluginsStarted = make(chan struct{})
	// The member doors read a workspace's memory where its agents do: kernel memory, or the
	// memory plugin its override names, ready on this instance.
	doors := memory.NewDoors(kmem, memory.NewResolver(st, nil), memory.DoorsOptions{Now: opts.Now,
		Backings: memoryBackings{overrides: plane, host: host}})
	api, err := httpapi.New(httpapi.Deps{
		Runs:     engine,
		RunWatch: watch,
		Events:   srv.events,
		// EventKeepAlive is zero outside tests.
		EventKeepAlive: opts.EventKeepAlive,
		Models:         models,
		Log:            log.Named("http"),
		Auth:           auth,
		// Revoking an executor settles its dispatched work executor_revoked and closes its
		// event streams on every instance.
		Directory: identity.NewDirectory(st, auth, identity.DirectoryOptions{Now: opts.Now,
			Revocation: executors.NewRevocation(hub, engine, log.Named("executors"))}),
		Executors:   plane,
		Memory:      doors,
		Uploads:     up,
		Push:        hub,
		CatalogBody: reg.CatalogBody(),
		Ready:       srv.notReady,
		Now:         opts.Now,
		Profiles:    profileService,
		Plugins:     pluginAdmin{srv},
		Timeouts:    opts.BodyTimeouts,
	})
	if err != nil {
		hub.Close()
		stopListening()
		return nil, err
	}
	srv.api = api
	return srv, nil
}

// Handler is the server's HTTP handler.
func (s *Server) Handler() http.Handler { return s.api }

// Store is the server's store.
func (s *Server) Store() *store.Store { return s.store }

// Uploads is the server's upload service.
func (s *Server) Uploads() *uploads.Service { return s.uploads }

// Events is the server's event feed (core/events).
func (s *Server) Events() *events.Bus { return s.events }

// Push is the server's push hub.
func (s *Server) Push() *executors.Hub { return s.push }

// Plugins is the server's plugin host.
func (s *Server) Plugins() *plugins.Host { return s.plugins }

// StartPlugins launches the catalog's plugins once and returns when each had its first attempt
// (ready, refused, or waiting to retry) or ctx ends; Serve calls it before it accepts requests'
// work, and /readyz answers not_ready until it returned.
func (s *Server) StartPlugins(ctx context.Context) error {
	var err error
	s.startPlugins.Do(func() {
		defer close(s.pluginsStarted)
		err = s.plugins.Start(ctx)
		if err != nil {
			s.log.Warn("plugins did not all start", "error", err)
		}
	})
	return err
}

// PluginShutdownTimeout bounds stopping the plugins at shutdown: the host gives in-flight calls
// its own grace (docs/plugins.md#crashes, 10 s), then kills every plugin.
const PluginShutdownTimeout = 15 * time.Second

// stopPlugins stops claiming, lets in-flight plugin calls finish within the grace and kills
// every plugin.
func (s *Server) stopPlugins() {
	ctx, cancel := context.WithTimeout(context.Background(), PluginShutdownTimeout)
	defer cancel()
	if err := s.plugins.Shutdown(ctx); err != nil {
		s.log.Warn("stopping plugins", "error", err)
	}
	s.pluginPlane.Stop()
}

// Close stops the plugins, the push hub and listening for token invalidations, and releases the
// store and its lock.
func (s *Server) Close() error {
	s.stopPlugins()
	s.push.Close()
	s.runWatch.Close()
	if s.stopListening != nil {
		s.stopListening()
	}
	err := s.store.Close()
	return errors.Join(err, s.lock.Release())
}

// notReady lists why the server cannot take work: the store does not answer, its schema is not
// the one this build knows, plugins are starting or one is held by its storage root, or this
// instance's heartbeat is not current.
func (s *Server) notReady(ctx context.Context) []string {
	if err := s.store.Ping(ctx); err != nil {
		return []string{"store: " + err.Error()}
	}
	if err := s.store.CheckSchema(ctx); err != nil {
		return []string{"schema: " + err.Error()}
	}
	select {
	case <-s.pluginsStarted:
	default:
		return []string{"plugins: starting"}
	}
	// A plugin held unready by its storage root keeps the instance out of a load balancer's
	// rotation too, so that a deployment whose instances split memory is never silently served
	// (docs/operations.md#several-instances).
	reasons := s.plugins.Unready()
	if lapse := s.engine.HeartbeatLapse(); lapse != "" {
		reasons = append(reasons, lapse)
	}
	return reasons
}

// Serve serves HTTP on ln until ctx is done, then stops accepting, drains in-flight requests for
// up to the drain timeout and returns nil, or ErrDrainTimeout when requests were still running.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	hs := &http.Server{
		Handler: s.api,
		// The headers have their own bound; each body is read within its door's bound once the
		// token is accepted (httpapi), and event streams never end by a deadline.
		ReadHeaderTimeout: s.headerTimeout,
		IdleTimeout:       IdleTimeout,
		ErrorLog:          s.log.Named("http").StandardLogger(&hclog.StandardLoggerOptions{InferLevels: true}),
		BaseContext:       func(net.Listener) context.Context { return context.WithoutCancel(ctx) },
	}
	if err := s.engine.Start(ctx); err != nil {
		return err
	}
	defer s.engine.Stop()
	// Event streams never end by themselves: shutting down closes them, so that draining waits
	// only for ordinary requests.
	hs.RegisterOnShutdown(s.push.CloseStreams)
	// Waiting run reads answer the run as it is, for the same reason.
	hs.RegisterOnShutdown(s.runWatch.Close)
	hs.RegisterOnShutdown(s.api.CloseStreams)
	reclaimCtx, stopReclaim := context.WithCancel(ctx)
	defer stopReclaim()
	go s.reclaimUploads(reclaimCtx)
	// Plugins load beside the listener; /readyz says not_ready until each had its first attempt.
	go func() { _ = s.StartPlugins(ctx) }()
	defer s.stopPlugins()
	errc := make(chan error, 1)
	if s.tls != nil {
		// ServeTLS with the certificate from GetCertificate: it also offers HTTP/2.
		hs.TLSConfig = s.tls.config()
		go func() { errc <- hs.ServeTLS(ln, "", "") }()
	} else {
		go func() { errc <- hs.Serve(ln) }()
	}
	s.log.Info("serving", "listen", ln.Addr().String(), "tls", s.tls != nil, "store", s.store.String())
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	s.log.Info("shutting down: draining in-flight requests", "timeout", s.drain)
	dctx, cancel := context.WithTimeout(context.Background(), s.drain)
	defer cancel()
	if err := hs.Shutdown(dctx); err != nil {
		_ = hs.Close()
		if errors.Is(err, context.DeadlineExceeded) {
			return ErrDrainTimeout
		}
		return err
	}
	return nil
}

// UploadReclaimInterval spaces the passes that reclaim unbound uploads: an upload lives a day
// unbound, so a minute's delay in deleting it costs nothing, and a pass that finds nothing is
// one indexed query.
const UploadReclaimInterval = time.Minute

// reclaimUploads deletes expired unbound uploads until ctx ends, a batch after another while
// batches come back full.
func (s *Server) reclaimUploads(ctx context.Context) {
	t := time.NewTicker(UploadReclaimInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		for {
			n, err := s.uploads.Reclaim(ctx)
			if err != nil {
				if ctx.Err() == nil {
					s.log.Warn("reclaiming unbound uploads failed", "error", err)
				}
				break
			}
			if n < uploads.ReclaimBatch {
				break
			}
		}
	}
}

// modelAdapters builds the real provider types, each instance under the retry decorator, whose
// clock is the server's (the engine's deadlines are read on it) and whose waits are real.
func modelAdapters(log hclog.Logger, opts Options) map[string]model.Adapter {
	wopts := wire.Options{Log: log, Now: opts.Now, Version: opts.Version}
	clock := model.SystemClock{NowFunc: opts.Now}
	wrap := func(build model.Adapter) model.Adapter {
		return func(p model.ProviderConfig, models []model.Model) (model.Provider, error) {
			inst, err := build(p, models)
			if err != nil {
				return nil, err
			}
			seed := uint64(opts.Now().UnixNano())
			return model.WithRetry(inst, clock, rand.New(rand.NewPCG(seed, seed>>1)), model.RetryLog(log)), nil
		}
	}
	return map[string]model.Adapter{
		model.ProviderTypeOpenAI:    wrap(openai.Adapter(wopts)),
		model.ProviderTypeAnthropic: wrap(anthropic.Adapter(wopts)),
	}
}
