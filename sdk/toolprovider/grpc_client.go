package toolprovider

import (
	"context"
	"strings"

	"google.golang.org/grpc"

	"github.com/nexuskernel/nexus/sdk/announce"
	pb "github.com/nexuskernel/nexus/sdk/internal/pb/nexus/plugin/v1"
	"github.com/nexuskernel/nexus/sdk/internal/wire"
	"github.com/nexuskernel/nexus/sdk/memory"
	"github.com/nexuskernel/nexus/sdk/plugin"
)

// Client is what ClientPlugin dispenses on the host: a tool plugin's Provider (Announce reads
// the announcement Describe answers) and its Plugin service.
type Client interface {
	Provider
	plugin.Describer
}

// grpcClient is the host side of the ToolProvider service.
type grpcClient struct {
	*wire.PluginClient
	client pb.ToolProviderClient
}

var _ Client = (*grpcClient)(nil)

func newGRPCClient(conn grpc.ClientConnInterface) *grpcClient {
	return &grpcClient{PluginClient: wire.NewPluginClient(conn), client: pb.NewToolProviderClient(conn)}
}

// Announce implements Provider through Describe: after Configure, the plugin answers its
// announcement there.
func (c *grpcClient) Announce(ctx context.Context) (announce.Announcement, error) {
	_, a, err := c.Describe(ctx)
	return a, err
}

// Call implements Provider. Errors come back as docs/plugins.md#the-protocol says: a lost process
// is plugin.ErrPluginShutdown, the caller's own end is ctx's error, OUTCOME_FAILED is a
// *FailedError, and every other failure a *CallError with its kind word.
func (c *grpcClient) Call(ctx context.Context, call Call) (Result, error) {
	resp, err := c.client.Call(ctx, callToProto(call))
	if err != nil {
		return Result{}, callError(ctx, err)
	}
	return resultFromProto(resp)
}

// KindWord is the word of an error kind: the enum name lower-cased without ERROR_KIND_.
func kindWord(k pb.ErrorKind) string {
	name, ok := pb.ErrorKind_name[int32(k)]
	if !ok {
		name = pb.ErrorKind_ERROR_KIND_INTERNAL.String()
	}
	return strings.ToLower(strings.TrimPrefix(name, "ERROR_KIND_"))
}

func callError(ctx context.Context, err error) error {
	r := wire.FromStatus(err)
	if terr := wire.Transport(ctx, r); terr != nil {
		return terr
	}
	if !r.Typed {
		return &CallError{Kind: kindWord(pb.ErrorKind_ERROR_KIND_INTERNAL), Message: r.Message}
	}
	ce := &CallError{Kind: kindWord(r.Kind), Message: r.Message}
	switch r.Kind {
	case pb.ErrorKind_ERROR_KIND_UNKNOWN_TOOL:
		ce.err = ErrUnknownTool
	case pb.ErrorKind_ERROR_KIND_CONFIG_INVALID:
		ce.err = plugin.ErrConfigInvalid
	case pb.ErrorKind_ERROR_KIND_UNAVAILABLE:
		ce.err = plugin.ErrUnavailable
	case pb.ErrorKind_ERROR_KIND_INTERNAL, pb.ErrorKind_ERROR_KIND_UNSPECIFIED:
	default:
		ce.err = memory.ErrorFromKind(memory.ErrorKind(r.Kind), "")
	}
	return ce
}
