package wire

import (
	"context"
	"errors"
	"fmt"
	"sync"

	goplugin "github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"

	"github.com/nexuskernel/nexus/sdk/announce"
	pb "github.com/nexuskernel/nexus/sdk/internal/pb/nexus/plugin/v1"
	"github.com/nexuskernel/nexus/sdk/plugin"
)

// ErrNotConfigured answers a call that arrives before Configure built the provider; each kind
// carries it as UNAVAILABLE, so the host retries rather than fails.
var ErrNotConfigured = errors.New("plugin is not configured")

// Slot holds the provider Configure built, shared by the Plugin service and the kind's own
// service of one process.
type Slot[P any] struct {
	mu  sync.RWMutex
	p   P
	set bool
}

// Get is the provider, or ErrNotConfigured before the first successful Configure.
func (s *Slot[P]) Get() (P, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if !s.set {
		var zero P
		return zero, ErrNotConfigured
	}
	return s.p, nil
}

// Set replaces the provider; a later Configure builds a new one.
func (s *Slot[P]) Set(p P) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.p, s.set = p, true
}

// Served is the plugin side of an Adapter: what one plugin process serves.
type Served[P any] struct {
	// Info describes the plugin; Kind and the protocol fields are filled by the adapter.
	Info plugin.Info
	// Configure builds the provider from the catalog's config block.
	Configure func(ctx context.Context, cfg plugin.Config) (P, error)
	// Announce is the announcement of a configured provider.
	Announce func(ctx context.Context, p P) (announce.Announcement, error)
	// Register registers the kind's own gRPC service over the slot.
	Register func(s *grpc.Server, slot *Slot[P])
}

// Adapter is the one go-plugin adapter of every plugin kind: on the plugin side it registers the
// Plugin service and the kind's service over one Slot, on the host it dispenses the kind's
// client. A kind package fills it; it decides nothing of the kind's semantics.
type Adapter[P any] struct {
	goplugin.NetRPCUnsupportedPlugin
	Kind plugin.Kind
	// Served is nil on the host.
	Served *Served[P]
	// Dial builds the host's client over the plugin's connection.
	Dial func(conn *grpc.ClientConn) any
}

// GRPCServer registers the Plugin service and the kind's service of one process.
func (a *Adapter[P]) GRPCServer(_ *goplugin.GRPCBroker, s *grpc.Server) error {
	if a.Served == nil || a.Served.Configure == nil {
		return fmt.Errorf("%s: ServeConfig.Configure is required", a.Kind)
	}
	srv := a.Served
	info := srv.Info
	info.Kind = a.Kind
	info.ProtocolVersions = []int{plugin.ProtocolMajor}
	info.ProtocolMinor = plugin.ProtocolMinor
	slot := &Slot[P]{}
	configure := func(ctx context.Context, cfg plugin.Config) error {
		p, err := srv.Configure(ctx, cfg)
		if err != nil {
			return err
		}
		if any(p) == nil {
			return fmt.Errorf("%w: Configure returned no provider", plugin.ErrUnavailable)
		}
		slot.Set(p)
		return nil
	}
	announceFn := func(ctx context.Context) (announce.Announcement, error) {
		p, err := slot.Get()
		if err != nil {
			return announce.Announcement{}, err
		}
		return srv.Announce(ctx, p)
	}
	pb.RegisterPluginServer(s, NewPluginServer(info, configure, announceFn))
	srv.Register(s, slot)
	return nil
}

// GRPCClient dispenses the host's client over the plugin's connection.
func (a *Adapter[P]) GRPCClient(_ context.Context, _ *goplugin.GRPCBroker, conn *grpc.ClientConn) (any, error) {
	return a.Dial(conn), nil
}

// ServeAdapter runs a plugin process serving a under its kind, logging through plugin.Logger;
// it never returns normally. Both SDK Serve functions are this call.
func ServeAdapter[P any](a *Adapter[P]) {
	logger := plugin.Logger()
	Serve(a.Kind, a, NewCalls(logger), logger)
}
