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
// normally; stdout belongs to go-plugin, and logs go to stderr through plugin.Logger. A
// provider that implements io.Closer is closed before the process exits, on a graceful
// shutdown and when the host is gone, so one that owns child processes can end them.
func Serve(cfg ServeConfig) {
	logger := plugin.Logger()
	g := newServerPlugin(cfg, plugin.ProtocolMinor)
	wire.Serve(plugin.KindToolProvider, g, wire.NewCalls(logger), logger, func() { g.slot.close(logger) })
}

// ServerPlugin is the go-plugin adapter a tool-provider plugin serves; Serve uses it, and tests
// put it in a plugin set to wire an in-process pair.
func ServerPlugin(cfg ServeConfig) goplugin.Plugin {
	return newServerPlugin(cfg, plugin.ProtocolMinor)
}

// ServerPluginAtMinor is ServerPlugin speaking an earlier minor of protocol 1 exactly as the SDK
// of that minor did, for tests of a host's compatibility with older plugins. At minor 0 Info
// reports minor 0, Describe carries no announcement revision, the ToolProvider service has no
// WatchAnnouncement method (the host's call of it answers Unimplemented, as an older binary's
// does), and ErrOutcomeUnknown, which minor 0 does not know, travels as INTERNAL. A minor at or
// past the current one is the current protocol.
func ServerPluginAtMinor(cfg ServeConfig, minor int) goplugin.Plugin {
	return newServerPlugin(cfg, min(max(minor, 0), plugin.ProtocolMinor))
}

// ClientPlugin is the go-plugin adapter the host puts in its plugin set. The dispensed value
// is a Client: it implements Provider and plugin.Describer.
func ClientPlugin() goplugin.Plugin {
	return &grpcPlugin{}
}

type grpcPlugin struct {
	goplugin.NetRPCUnsupportedPlugin
	cfg *ServeConfig // nil on the host
	// minor is the protocol minor served; slot holds the provider Configure built.
	minor int
	slot  *providerSlot
}

func newServerPlugin(cfg ServeConfig, minor int) *grpcPlugin {
	return &grpcPlugin{cfg: &cfg, minor: minor, slot: &providerSlot{}}
}

// GRPCServer registers the Plugin and ToolProvider services of one process.
func (g *grpcPlugin) GRPCServer(_ *goplugin.GRPCBroker, s *grpc.Server) error {
	if g.cfg == nil || g.cfg.Configure == nil {
		return fmt.Errorf("toolprovider: ServeConfig.Configure is required")
	}
	info := g.cfg.Info
	info.Kind = plugin.KindToolProvider
	info.ProtocolVersions = []int{plugin.ProtocolMajor}
	info.ProtocolMinor = g.minor
	slot := g.slot
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
	describer := wire.NewPluginServer(info, configure, announceFn)
	srv := &grpcServer{slot: slot, kindOf: errorKindOf}
	if g.minor == 0 {
		// The minor-0 service: Call only, and no kind it did not know.
		desc := pb.ToolProvider_ServiceDesc
		desc.Streams = nil
		srv.kindOf = errorKindOfMinor0
		pb.RegisterPluginServer(s, describer)
		s.RegisterService(&desc, srv)
		return nil
	}
	pb.RegisterPluginServer(s, describer.WithRevision(slot.revision))
	pb.RegisterToolProviderServer(s, srv)
	return nil
}

// GRPCClient dispenses the host's Client over the plugin's connection.
func (g *grpcPlugin) GRPCClient(_ context.Context, _ *goplugin.GRPCBroker, conn *grpc.ClientConn) (any, error) {
	return newGRPCClient(conn), nil
}
