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
// normally; stdout belongs to go-plugin, and logs go to stderr through plugin.Logger.
func Serve(cfg ServeConfig) {
	wire.ServeAdapter(adapter(&cfg))
}

// ServerPlugin is the go-plugin adapter a tool-provider plugin serves; Serve uses it, and tests
// put it in a plugin set to wire an in-process pair.
func ServerPlugin(cfg ServeConfig) goplugin.Plugin {
	return adapter(&cfg)
}

// ClientPlugin is the go-plugin adapter the host puts in its plugin set. The dispensed value
// is a Client: it implements Provider and plugin.Describer.
func ClientPlugin() goplugin.Plugin {
	return adapter(nil)
}

// adapter is the SDK's one go-plugin adapter filled for the tool-provider kind; cfg is nil on
// the host.
func adapter(cfg *ServeConfig) *wire.Adapter[Provider] {
	a := &wire.Adapter[Provider]{
		Kind: plugin.KindToolProvider,
		Dial: func(conn *grpc.ClientConn) any { return newGRPCClient(conn) },
	}
	if cfg != nil {
		a.Served = &wire.Served[Provider]{
			Info:      cfg.Info,
			Configure: cfg.Configure,
			Announce: func(ctx context.Context, p Provider) (announce.Announcement, error) {
				return p.Announce(ctx)
			},
			Register: func(s *grpc.Server, slot *wire.Slot[Provider]) {
				pb.RegisterToolProviderServer(s, &grpcServer{slot: slot})
			},
		}
	}
	return a
}
