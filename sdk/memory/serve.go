package memory

import (
	"context"

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
// normally; stdout belongs to go-plugin, and logs go to stderr through plugin.Logger. A store
// that implements io.Closer is closed before the process exits.
func Serve(cfg ServeConfig) {
	wire.ServerAdapter(memoryKind, cfg.Info, cfg.Configure, plugin.ProtocolMinor).Serve()
}

// ServerPlugin is the go-plugin adapter a memory plugin serves; Serve uses it, and tests put it
// in a plugin set to wire an in-process pair (plugin.TestPluginGRPCConn).
func ServerPlugin(cfg ServeConfig) goplugin.Plugin {
	return wire.ServerAdapter(memoryKind, cfg.Info, cfg.Configure, plugin.ProtocolMinor)
}

// ServerPluginAtMinor is ServerPlugin speaking an earlier minor of protocol 1 exactly as the SDK
// of that minor did, for tests of a host's compatibility with older memory plugins. Below minor
// 3 Info reports that minor, no entry carries an id and a request's Expect goes unread, as an
// older binary ignores fields it does not know. A minor at or past the current one is the
// current protocol.
func ServerPluginAtMinor(cfg ServeConfig, minor int) goplugin.Plugin {
	return wire.ServerAdapter(memoryKind, cfg.Info, cfg.Configure, minor)
}

// ClientPlugin is the go-plugin adapter the host puts in its plugin set. The dispensed value
// is a Client: it implements Provider and plugin.Describer.
func ClientPlugin() goplugin.Plugin {
	return wire.ClientAdapter(memoryKind)
}

// memoryKind is what the shared adapter knows of the memory kind: the default announcement and
// the MemoryProvider service.
var memoryKind = wire.Kind[Provider]{
	Kind:    plugin.KindMemory,
	Package: "memory",
	Noun:    "store",
	Announce: func(ctx context.Context, p Provider) (announce.Announcement, error) {
		if a, ok := p.(Announcer); ok {
			return a.Announce(ctx)
		}
		return KernelAnnouncement(DefaultTimeout), nil
	},
	Register: func(s *grpc.Server, describer *wire.PluginServer, slot *wire.Slot[Provider], minor int) {
		pb.RegisterPluginServer(s, describer)
		pb.RegisterMemoryProviderServer(s, &grpcServer{slot: slot, beforeIDs: minor < minorIDs})
	},
	Dial: func(conn grpc.ClientConnInterface) any { return newGRPCClient(conn) },
}
