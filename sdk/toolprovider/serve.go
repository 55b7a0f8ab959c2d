package toolprovider

import (
	"context"

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
	newServerPlugin(cfg, plugin.ProtocolMinor).Serve()
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
	return newServerPlugin(cfg, minor)
}

// ClientPlugin is the go-plugin adapter the host puts in its plugin set. The dispensed value
// is a Client: it implements Provider and plugin.Describer.
func ClientPlugin() goplugin.Plugin {
	return wire.ClientAdapter(toolProviderKind)
}

func newServerPlugin(cfg ServeConfig, minor int) *wire.Adapter[Provider] {
	return wire.ServerAdapter(toolProviderKind, cfg.Info, cfg.Configure, minor)
}

// toolProviderKind is what the shared adapter knows of the tool-provider kind: the provider's
// own announcement and the ToolProvider service of each minor.
var toolProviderKind = wire.Kind[Provider]{
	Kind:     plugin.KindToolProvider,
	Package:  "toolprovider",
	Noun:     "provider",
	Announce: func(ctx context.Context, p Provider) (announce.Announcement, error) { return p.Announce(ctx) },
	Register: registerServices,
	Dial:     func(conn grpc.ClientConnInterface) any { return newGRPCClient(conn) },
}

// registerServices registers the Plugin and ToolProvider services as protocol minor has them.
func registerServices(s *grpc.Server, describer *wire.PluginServer, ws *wire.Slot[Provider], minor int) {
	slot := (*providerSlot)(ws)
	srv := &grpcServer{slot: slot, kindOf: errorKindOf}
	if minor == 0 {
		// The minor-0 service: Call only, and no kind it did not know.
		desc := pb.ToolProvider_ServiceDesc
		desc.Streams = nil
		srv.kindOf = errorKindOfMinor0
		pb.RegisterPluginServer(s, describer)
		s.RegisterService(&desc, srv)
		return
	}
	pb.RegisterPluginServer(s, describer.WithRevision(slot.revision))
	pb.RegisterToolProviderServer(s, srv)
}
