package memory

import (
	"context"
	"fmt"

	goplugin "github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"

	"github.com/nexuskernel/nexus/sdk/announce"
	pb "github.com/nexuskernel/nexus/sdk/internal/pb/nexus/plugin/v1"
	"github.com/nexuskernel/nexus/sdk/internal/wire"
	"github.com/nexuskernel/nexus/sdk/plugin"
)

// ServeConfig configures a memory plugin.
type ServeConfig struct {
	// Info describes the plugin; Kind is forced to plugin.KindMemory and the protocol fields
	// are filled by Serve.
	Info plugin.Info
	// Configure builds the store from the catalog's config block. Return an error wrapping
	// plugin.ErrConfigInvalid to refuse the load (a configuration that can never work), or any
	// other error (plugin.ErrUnavailable) to have the host retry the start with backoff.
	Configure func(ctx context.Context, cfg plugin.Config) (Provider, error)
}

// Announcer is implemented by a Provider that announces more than the default: the six wire
// names with the kernel's profiles (KernelAnnouncement). A memory plugin may add environment
// facts this way; the host validates the announcement with announce.ValidatePlugin and then
// replaces the tool entries with the kernel's own.
type Announcer interface {
	Announce(ctx context.Context) (announce.Announcement, error)
}

// Serve runs a memory plugin process: the handshake, protocol major 1, the Plugin and
// MemoryProvider services over gRPC, and the parent watchdog. It blocks and never returns
// normally; stdout belongs to go-plugin, and logs go to stderr through plugin.Logger.
func Serve(cfg ServeConfig) {
	logger := plugin.Logger()
	wire.Serve(plugin.KindMemory, ServerPlugin(cfg), wire.NewCalls(logger), logger, nil)
}

// ServerPlugin is the go-plugin adapter a memory plugin serves; Serve uses it, and tests put it
// in a plugin set to wire an in-process pair (plugin.TestPluginGRPCConn).
func ServerPlugin(cfg ServeConfig) goplugin.Plugin {
	return &grpcPlugin{cfg: &cfg}
}

// ClientPlugin is the go-plugin adapter the host puts in its plugin set. The dispensed value
// is a Client: it implements Provider and plugin.Describer.
func ClientPlugin() goplugin.Plugin {
	return &grpcPlugin{}
}

// grpcPlugin implements goplugin.GRPCPlugin for the memory kind.
type grpcPlugin struct {
	goplugin.NetRPCUnsupportedPlugin
	cfg *ServeConfig // nil on the host
}

// GRPCServer registers the Plugin and MemoryProvider services of one process.
func (g *grpcPlugin) GRPCServer(_ *goplugin.GRPCBroker, s *grpc.Server) error {
	if g.cfg == nil || g.cfg.Configure == nil {
		return fmt.Errorf("memory: ServeConfig.Configure is required")
	}
	info := g.cfg.Info
	info.Kind = plugin.KindMemory
	info.ProtocolVersions = []int{plugin.ProtocolMajor}
	info.ProtocolMinor = plugin.ProtocolMinor
	slot := &providerSlot{}
	configure := func(ctx context.Context, cfg plugin.Config) error {
		p, err := g.cfg.Configure(ctx, cfg)
		if err != nil {
			return err
		}
		if p == nil {
			return fmt.Errorf("%w: Configure returned no store", plugin.ErrUnavailable)
		}
		slot.set(p)
		return nil
	}
	announceFn := func(ctx context.Context) (announce.Announcement, error) {
		p, err := slot.get()
		if err != nil {
			return announce.Announcement{}, err
		}
		if a, ok := p.(Announcer); ok {
			return a.Announce(ctx)
		}
		return KernelAnnouncement(DefaultTimeout), nil
	}
	pb.RegisterPluginServer(s, wire.NewPluginServer(info, configure, announceFn))
	pb.RegisterMemoryProviderServer(s, &grpcServer{slot: slot})
	return nil
}

// GRPCClient dispenses the host's Client over the plugin's connection.
func (g *grpcPlugin) GRPCClient(_ context.Context, _ *goplugin.GRPCBroker, conn *grpc.ClientConn) (any, error) {
	return newGRPCClient(conn), nil
}
