package memory

import (
	"context"
	"errors"
	"fmt"
	"unicode/utf8"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"

	pb "github.com/nexuskernel/nexus/sdk/internal/pb/nexus/plugin/v1"
	"github.com/nexuskernel/nexus/sdk/internal/wire"
	"github.com/nexuskernel/nexus/sdk/plugin"
)

// Client is what ClientPlugin dispenses on the host: a memory plugin's store and its Plugin
// service.
type Client interface {
	Provider
	plugin.Describer
}

// grpcClient is the host side of the MemoryProvider service: it only translates, and rebuilds
// every typed error as the same sentinel so that errors.Is works on the host.
type grpcClient struct {
	*wire.PluginClient
	client pb.MemoryProviderClient
}

var _ Client = (*grpcClient)(nil)

func newGRPCClient(conn grpc.ClientConnInterface) *grpcClient {
	return &grpcClient{PluginClient: wire.NewPluginClient(conn), client: pb.NewMemoryProviderClient(conn)}
}

// clientError rebuilds a store call's failure (docs/plugins.md#the-protocol): a typed error is its
// sentinel wrapped with the message; a lost process or broken connection is
// plugin.ErrPluginShutdown; the caller's own end is ctx's error; DeadlineExceeded on Grep is
// ErrPatternTooCostly; anything else is ErrUnavailable.
func clientError(ctx context.Context, err error, grep bool) error {
	r := wire.FromStatus(err)
	if r.Typed {
		return ErrorFromKind(ErrorKind(r.Kind), r.Message)
	}
	if grep && (r.Code == codes.DeadlineExceeded || errors.Is(ctx.Err(), context.DeadlineExceeded)) {
		return fmt.Errorf("%w: %s", ErrPatternTooCostly, r.Message)
	}
	if terr := wire.Transport(ctx, r); terr != nil {
		return terr
	}
	return fmt.Errorf("%w: %s", ErrUnavailable, r.Message)
}

func (c *grpcClient) Ls(ctx context.Context, req *LsRequest) (*LsResponse, error) {
	if !utf8.ValidString(req.NamePrefix) {
		return lsInvalidPrefix(req)
	}
	resp, err := c.client.Ls(ctx, lsRequestToProto(req))
	if err != nil {
		return nil, clientError(ctx, err, false)
	}
	return lsResponseFromProto(resp), nil
}

func (c *grpcClient) Read(ctx context.Context, req *ReadRequest) (*ReadResponse, error) {
	if !utf8.ValidString(req.Name) {
		return nil, targetProblem(req.Scope, req.Name, false)
	}
	resp, err := c.client.Read(ctx, readRequestToProto(req))
	if err != nil {
		return nil, clientError(ctx, err, false)
	}
	return readResponseFromProto(resp), nil
}

func (c *grpcClient) Grep(ctx context.Context, req *GrepRequest) (*GrepResponse, error) {
	if !utf8.ValidString(req.NamePrefix) || !utf8.ValidString(req.Pattern) {
		return grepInvalidText(ctx, req)
	}
	resp, err := c.client.Grep(ctx, grepRequestToProto(req))
	if err != nil {
		return nil, clientError(ctx, err, true)
	}
	return grepResponseFromProto(resp), nil
}

func (c *grpcClient) Write(ctx context.Context, req *WriteRequest) (*WriteResponse, error) {
	if !utf8.ValidString(req.Name) || !utf8.ValidString(req.Content) {
		if err := targetProblem(req.Scope, req.Name, true); err != nil {
			return nil, err
		}
		return nil, CheckContent(req.Content)
	}
	resp, err := c.client.Write(ctx, writeRequestToProto(req))
	if err != nil {
		return nil, clientError(ctx, err, false)
	}
	return writeResponseFromProto(resp), nil
}

func (c *grpcClient) Edit(ctx context.Context, req *EditRequest) (*EditResponse, error) {
	if !utf8.ValidString(req.Name) || !utf8.ValidString(req.NewText) || !utf8.ValidString(req.OldText) {
		return c.editInvalidText(ctx, req)
	}
	resp, err := c.client.Edit(ctx, editRequestToProto(req))
	if err != nil {
		return nil, clientError(ctx, err, false)
	}
	return editResponseFromProto(resp), nil
}

func (c *grpcClient) Delete(ctx context.Context, req *DeleteRequest) (*DeleteResponse, error) {
	if !utf8.ValidString(req.Name) {
		return nil, targetProblem(req.Scope, req.Name, true)
	}
	if _, err := c.client.Delete(ctx, deleteRequestToProto(req)); err != nil {
		return nil, clientError(ctx, err, false)
	}
	return &DeleteResponse{}, nil
}
