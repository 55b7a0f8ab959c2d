package toolprovider

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"

	"github.com/nexuskernel/nexus/sdk/announce"
	pb "github.com/nexuskernel/nexus/sdk/internal/pb/nexus/plugin/v1"
	"github.com/nexuskernel/nexus/sdk/internal/wire"
	"github.com/nexuskernel/nexus/sdk/memory"
	"github.com/nexuskernel/nexus/sdk/plugin"
)

// Client is what ClientPlugin dispenses on the host: a tool plugin's Provider (Announce reads
// the announcement Describe answers), its Plugin service, and the 1.1 additions.
type Client interface {
	Provider
	plugin.Describer
	// DescribeRevision is Describe with the announcement's revision: 0 when the plugin keeps
	// none, always so at protocol minor 0.
	DescribeRevision(ctx context.Context) (plugin.Info, announce.Announcement, uint64, error)
	// WatchAnnouncement calls onChange with the plugin's current announcement revision as soon
	// as the stream opens, then with each new one, until ctx ends (answering ctx's error), the
	// plugin ends the stream (nil) or its process is gone (plugin.ErrPluginShutdown). It answers
	// errors.ErrUnsupported when the plugin's protocol minor is 0 or the plugin answers
	// Unimplemented: its announcement never changes.
	WatchAnnouncement(ctx context.Context, onChange func(revision uint64)) error
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
// *FailedError, and every other failure a *CallError with its kind word (a lost answer's
// unwraps to ErrOutcomeUnknown).
func (c *grpcClient) Call(ctx context.Context, call Call) (Result, error) {
	resp, err := c.client.Call(ctx, callToProto(call))
	if err != nil {
		return Result{}, callError(ctx, err)
	}
	return resultFromProto(resp)
}

// WatchAnnouncement implements Client.
func (c *grpcClient) WatchAnnouncement(ctx context.Context, onChange func(revision uint64)) error {
	if c.PeerMinor() == 0 {
		return fmt.Errorf("%w: the plugin speaks protocol minor 0", errors.ErrUnsupported)
	}
	stream, err := c.client.WatchAnnouncement(ctx, &pb.WatchAnnouncementRequest{})
	if err != nil {
		return watchError(ctx, err)
	}
	for {
		msg, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return watchError(ctx, err)
		}
		onChange(msg.GetRevision())
	}
}

// watchError reads a failed stream: an untyped Unimplemented is a plugin whose announcement
// never changes; the rest reads as a Call's errors do.
func watchError(ctx context.Context, err error) error {
	r := wire.FromStatus(err)
	if !r.Typed && r.Code == codes.Unimplemented && ctx.Err() == nil {
		return fmt.Errorf("%w: %s", errors.ErrUnsupported, r.Message)
	}
	return callError(ctx, err)
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
	case pb.ErrorKind_ERROR_KIND_OUTCOME_UNKNOWN:
		ce.err = ErrOutcomeUnknown
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
