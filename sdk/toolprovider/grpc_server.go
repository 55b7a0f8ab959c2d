package toolprovider

import (
	"context"
	"errors"

	pb "github.com/nexuskernel/nexus/sdk/internal/pb/nexus/plugin/v1"
	"github.com/nexuskernel/nexus/sdk/internal/wire"
	"github.com/nexuskernel/nexus/sdk/memory"
	"github.com/nexuskernel/nexus/sdk/plugin"
)

// errorKindOf is the wire kind of a Call error.
func errorKindOf(err error) int32 {
	switch {
	case errors.Is(err, ErrUnknownTool):
		return int32(pb.ErrorKind_ERROR_KIND_UNKNOWN_TOOL)
	case errors.Is(err, wire.ErrNotConfigured), errors.Is(err, plugin.ErrUnavailable):
		return int32(pb.ErrorKind_ERROR_KIND_UNAVAILABLE)
	case errors.Is(err, plugin.ErrConfigInvalid):
		return int32(pb.ErrorKind_ERROR_KIND_CONFIG_INVALID)
	}
	return int32(memory.KindOf(err)) // a memory sentinel keeps its kind; anything else is INTERNAL
}

// grpcServer is the plugin side of the ToolProvider service: it only translates.
type grpcServer struct {
	pb.UnimplementedToolProviderServer
	slot *wire.Slot[Provider]
}

func (s *grpcServer) Call(ctx context.Context, req *pb.CallRequest) (*pb.CallResponse, error) {
	p, err := s.slot.Get()
	if err != nil {
		return nil, wire.ToStatus(err, errorKindOf)
	}
	res, err := p.Call(ctx, callFromProto(req))
	if err != nil {
		var failed *FailedError
		if errors.As(err, &failed) {
			return failedToProto(failed.Detail), nil
		}
		return nil, wire.ToStatus(err, errorKindOf)
	}
	return resultToProto(res), nil
}
