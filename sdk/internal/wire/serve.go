package wire

import (
	"context"
	"fmt"
	"os"
	"runtime/debug"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	goplugin "github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"

	pb "github.com/nexuskernel/nexus/sdk/internal/pb/nexus/plugin/v1"
	"github.com/nexuskernel/nexus/sdk/plugin"
)

// MaxMessageBytes bounds one gRPC message each way: a tool result may carry captures up to
// 8 MiB in total plus a 1 MB envelope, and doubling that leaves headroom for encoding.
const MaxMessageBytes = 16 << 20

// Parent-watchdog timings (docs/plugins.md#crashes).
const (
	// ParentCheckInterval is how often a plugin checks that its host is alive: once a second
	// bounds an orphan's life to about three seconds with the grace below.
	ParentCheckInterval = time.Second
	// ParentGrace is how long in-flight handlers get, once cancelled, before an orphaned plugin
	// exits: enough to unwind a store call, short enough that nothing waits on a dead host.
	ParentGrace = 2 * time.Second
)

// Calls tracks the handlers in flight, so that a plugin losing its host cancels them and waits
// for them before it exits.
type Calls struct {
	base   context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
	logger hclog.Logger
}

// NewCalls returns a tracker whose handlers run until Cancel; panics are logged to logger.
func NewCalls(logger hclog.Logger) *Calls {
	base, cancel := context.WithCancel(context.Background())
	return &Calls{base: base, cancel: cancel, logger: logger}
}

// Cancel cancels every handler's context and waits up to grace for them to return.
func (c *Calls) Cancel(grace time.Duration) {
	c.cancel()
	done := make(chan struct{})
	go func() { c.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(grace):
	}
}

// Interceptor runs each handler under the tracker (its context also ends on Cancel) and turns a
// panic into an INTERNAL error, so one handler never kills its plugin.
func (c *Calls) Interceptor(ctx context.Context, req any, _ *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (resp any, err error) {
	ctx, done := c.track(ctx)
	defer done()
	defer func() {
		if r := recover(); r != nil {
			resp, err = nil, c.panicked(r)
		}
	}()
	return handler(ctx, req)
}

// track counts a handler in flight under a context that also ends on Cancel; done ends both.
func (c *Calls) track(ctx context.Context) (context.Context, func()) {
	c.wg.Add(1)
	ctx, cancel := context.WithCancel(ctx)
	stop := context.AfterFunc(c.base, cancel)
	return ctx, func() {
		stop()
		cancel()
		c.wg.Done()
	}
}

// panicked logs a recovered panic with its stack and answers the one line the peer gets.
func (c *Calls) panicked(r any) error {
	c.logger.Error("handler panic", "panic", fmt.Sprint(r), "stack", string(debug.Stack()))
	return KindStatus(pb.ErrorKind_ERROR_KIND_INTERNAL, fmt.Sprintf("handler panic: %v", r))
}

// StreamInterceptor is Interceptor for streaming handlers (WatchAnnouncement): the stream's
// context also ends on Cancel, and a panic is an INTERNAL status, not a dead plugin.
func (c *Calls) StreamInterceptor(srv any, ss grpc.ServerStream, _ *grpc.StreamServerInfo, handler grpc.StreamHandler) (err error) {
	ctx, done := c.track(ss.Context())
	defer done()
	defer func() {
		if r := recover(); r != nil {
			err = c.panicked(r)
		}
	}()
	return handler(srv, &boundStream{ServerStream: ss, ctx: ctx})
}

// boundStream is a server stream whose context is the tracker's.
type boundStream struct {
	grpc.ServerStream
	ctx context.Context
}

func (s *boundStream) Context() context.Context { return s.ctx }

// ServerOptions are the options every plugin's gRPC server gets.
func (c *Calls) ServerOptions() []grpc.ServerOption {
	return []grpc.ServerOption{
		grpc.MaxRecvMsgSize(MaxMessageBytes),
		grpc.MaxSendMsgSize(MaxMessageBytes),
		grpc.ChainUnaryInterceptor(c.Interceptor),
		grpc.ChainStreamInterceptor(c.StreamInterceptor),
	}
}

// WatchParent calls onOrphan once when getppid answers something other than its first answer,
// checking every interval until ctx ends.
func WatchParent(ctx context.Context, getppid func() int, interval time.Duration, onOrphan func()) {
	parent := getppid()
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if getppid() != parent {
				onOrphan()
				return
			}
		}
	}
}

// Serve runs a plugin process serving p under the kind's name: the handshake, protocol major 1,
// gRPC with the bounds and recovery above, and the parent watchdog. It never returns normally.
// beforeExit, when set, runs once before the process exits (Finisher), after a graceful stop
// or once the watchdog found the host gone.
func Serve(kind plugin.Kind, p goplugin.Plugin, calls *Calls, logger hclog.Logger, beforeExit func()) {
	finish := NewFinisher(calls, ParentGrace, beforeExit)
	go WatchParent(context.Background(), os.Getppid, ParentCheckInterval, func() {
		logger.Warn("host process is gone; exiting")
		finish.Finish()
		os.Exit(0)
	})
	goplugin.Serve(&goplugin.ServeConfig{
		HandshakeConfig:  plugin.Handshake,
		VersionedPlugins: map[int]goplugin.PluginSet{plugin.ProtocolMajor: {kind.PluginSetKey(): p}},
		GRPCServer: func(opts []grpc.ServerOption) *grpc.Server {
			return grpc.NewServer(append(opts, calls.ServerOptions()...)...)
		},
		Logger: logger,
	})
	finish.Finish()
	os.Exit(0)
}

// Finisher is what a plugin process does once before it exits: cancel its handlers, give them
// the grace, then run beforeExit (a provider's Close), whichever of a graceful stop and the
// watchdog comes first; the other waits for it.
type Finisher struct {
	once       sync.Once
	calls      *Calls
	grace      time.Duration
	beforeExit func()
}

// NewFinisher returns the finisher of a process whose handlers calls tracks.
func NewFinisher(calls *Calls, grace time.Duration, beforeExit func()) *Finisher {
	return &Finisher{calls: calls, grace: grace, beforeExit: beforeExit}
}

// Finish runs the sequence the first time and waits for it on every call.
func (f *Finisher) Finish() {
	f.once.Do(func() {
		f.calls.Cancel(f.grace)
		if f.beforeExit != nil {
			f.beforeExit()
		}
	})
}

// DialOptions are the host's dial options for a plugin connection.
func DialOptions() []grpc.DialOption {
	return []grpc.DialOption{grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(MaxMessageBytes), grpc.MaxCallSendMsgSize(MaxMessageBytes))}
}
