package toolprovider

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

// ServeConfig configures a tool-provider plugin.
type ServeConfig struct {
	// Info describes the plugin; Kind is forced to plugin.KindToolProvider and the protocol
	// fields are filled by Serve.
	Info plugin.Info
	// Configure builds the provider from the catalog's config block. An error wrapping
	// plugin.ErrConfigInvalid refuses the load; any other error is retried with backoff.
	Configure func(ctx context.Context, cfg plugin.Config) (Provider, error)
}

// Serve runs a tool-provider plugin process: the handshake, protocol major 1, the Plugin and
// ToolProvider services over gRPC, and the parent watchdog. It blocks and never returns
// normally; stdout belongs to go-plugin, and logs go to stderr through plugin.Logger.
func Serve(cfg ServeConfig) {
	logger := plugin.Logger()
	wire.Serve(plugin.KindToolProvider, ServerPlugin(cfg), wire.NewCalls(logger), logger)
}

// ServerPlugin is the go-plugin adapter a tool-provider plugin serves; Serve uses it, and tests
// put it in a plugin set to wire an in-process pair.
func ServerPlugin(cfg ServeConfig) goplugin.Plugin {
	return &grpcPlugin{cfg: &cfg}
}

// ClientPlugin is the go-plugin adapter the host puts in its plugin set. The dispensed value
// is a Client: it implements Provider and plugin.Describer.
func ClientPlugin() goplugin.Plugin {
	return &grpcPlugin{}
}

type grpcPlugin struct {
	goplugin.NetRPCUnsupportedPlugin
	cfg *ServeConfig // nil on the host
}

// GRPCServer registers the Plugin and ToolProvider services of one process.
func (g *grpcPlugin) GRPCServer(_ *goplugin.GRPCBroker, s *grpc.Server) error {
	if g.cfg == nil || g.cfg.Configure == nil {
		return fmt.Errorf("toolprovider: ServeConfig.Configure is required")
	}
	info := g.cfg.Info
	info.Kind = plugin.KindToolProvider
	info.ProtocolVersions = []int{plugin.ProtocolMajor}
	info.ProtocolMinor = plugin.ProtocolMinor
	slot := &providerSlot{}
	configure := func(ctx context.Context, cfg plugin.Config) error {
		p, err := g.cfg.Configure(ctx, cfg)
		if err != nil {
			return err
		}
		if p == nil {
			return fmt.Errorf("%w: Configure returned no provider", plugin.ErrUnavailable)
		}
		slot.set(p)
		return nil
	}
	announceFn := func(ctx context.Context) (announce.Announcement, error) {
		p, err := slot.get()
		if err != nil {
			return announce.Announcement{}, err
		}
		return p.Announce(ctx)
	}
	pb.RegisterPluginServer(s, wire.NewPluginServer(info, configure, announceFn))
	pb.RegisterToolProviderServer(s, &grpcServer{slot: slot})
	return nil
}

// GRPCClient dispenses the host's Client over the plugin's connection.
func (g *grpcPlugin) GRPCClient(_ context.Context, _ *goplugin.GRPCBroker, conn *grpc.ClientConn) (any, error) {
	return newGRPCClient(conn), nil
}
