package wire

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/hashicorp/go-hclog"
	goplugin "github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"

	"github.com/nexuskernel/nexus/sdk/announce"
	"github.com/nexuskernel/nexus/sdk/plugin"
)

// ErrNotConfigured answers a call that arrives before Configure built the kind's value; each
// kind sends it as UNAVAILABLE, so the host retries.
var ErrNotConfigured = errors.New("plugin: plugin is not configured")

// Slot holds the value Configure built, shared by the Plugin service and the kind's service of
// one process. The zero Slot holds nothing.
type Slot[P any] struct {
	mu sync.RWMutex
	p  P
}

// Get answers the value, or ErrNotConfigured before one was set.
func (s *Slot[P]) Get() (P, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if any(s.p) == nil {
		var zero P
		return zero, ErrNotConfigured
	}
	return s.p, nil
}

// Set replaces the value; a later Configure replaces an earlier one.
func (s *Slot[P]) Set(p P) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.p = p
}

// Close closes the value when it implements io.Closer: the process is about to exit. A failing
// Close is only logged, since nothing is left to answer.
func (s *Slot[P]) Close(logger hclog.Logger) {
	s.mu.RLock()
	p := s.p
	s.mu.RUnlock()
	if c, ok := any(p).(io.Closer); ok {
		if err := c.Close(); err != nil {
			logger.Warn("closing the provider failed", "error", err)
		}
	}
}

// Kind is what the adapter knows of one plugin kind: each kind package declares one and builds
// its ServerPlugin, ClientPlugin and Serve on it.
type Kind[P any] struct {
	// Kind is the plugin kind served; Info.Kind is forced to it.
	Kind plugin.Kind
	// Package prefixes the adapter's own errors ("memory", "toolprovider").
	Package string
	// Noun names the value in the error of a Configure that built none ("store", "provider").
	Noun string
	// Announce answers the configured value's announcement.
	Announce func(ctx context.Context, p P) (announce.Announcement, error)
	// Register registers the Plugin service describer and the kind's own service on s, as the
	// protocol minor served has them.
	Register func(s *grpc.Server, describer *PluginServer, slot *Slot[P], minor int)
	// Dial answers the host's value over a plugin connection.
	Dial func(conn grpc.ClientConnInterface) any
}

// Adapter is the go-plugin adapter of one kind, on both sides: the plugin's (ServerAdapter)
// registers the services, the host's (ClientAdapter) dials them.
type Adapter[P any] struct {
	goplugin.NetRPCUnsupportedPlugin
	kind Kind[P]
	// Set on the plugin side only: what Serve was given, the minor served and the built value.
	info      plugin.Info
	configure func(ctx context.Context, cfg plugin.Config) (P, error)
	minor     int
	slot      *Slot[P]
}

// ServerAdapter returns the plugin side of kind k speaking protocol minor (clamped to the
// minors this SDK knows), building its value with configure.
func ServerAdapter[P any](k Kind[P], info plugin.Info, configure func(context.Context, plugin.Config) (P, error), minor int) *Adapter[P] {
	return &Adapter[P]{kind: k, info: info, configure: configure, minor: min(max(minor, 0), plugin.ProtocolMinor), slot: &Slot[P]{}}
}

// ClientAdapter returns the host side of kind k.
func ClientAdapter[P any](k Kind[P]) *Adapter[P] {
	return &Adapter[P]{kind: k}
}

// GRPCServer implements goplugin.GRPCPlugin: Info as served, Configure into the slot, and the
// kind's services.
func (a *Adapter[P]) GRPCServer(_ *goplugin.GRPCBroker, s *grpc.Server) error {
	if a.configure == nil {
		return fmt.Errorf("%s: ServeConfig.Configure is required", a.kind.Package)
	}
	info := a.info
	info.Kind = a.kind.Kind
	info.ProtocolVersions = []int{plugin.ProtocolMajor}
	info.ProtocolMinor = a.minor
	configure := func(ctx context.Context, cfg plugin.Config) error {
		p, err := a.configure(ctx, cfg)
		if err != nil {
			return err
		}
		if any(p) == nil {
			return fmt.Errorf("%w: Configure returned no %s", plugin.ErrUnavailable, a.kind.Noun)
		}
		a.slot.Set(p)
		return nil
	}
	announceFn := func(ctx context.Context) (announce.Announcement, error) {
		p, err := a.slot.Get()
		if err != nil {
			return announce.Announcement{}, err
		}
		return a.kind.Announce(ctx, p)
	}
	a.kind.Register(s, NewPluginServer(info, configure, announceFn), a.slot, a.minor)
	return nil
}

// GRPCClient implements goplugin.GRPCPlugin: the host's value over the plugin's connection.
func (a *Adapter[P]) GRPCClient(_ context.Context, _ *goplugin.GRPCBroker, conn *grpc.ClientConn) (any, error) {
	return a.kind.Dial(conn), nil
}

// Serve runs the plugin process of a server adapter (Serve above) and closes the configured
// value, when it is an io.Closer, before the process exits. It never returns normally.
func (a *Adapter[P]) Serve() {
	logger := plugin.Logger()
	Serve(a.kind.Kind, a, NewCalls(logger), logger, func() { a.slot.Close(logger) })
}
