package toolprovider

import (
	"context"
	"errors"

	"github.com/hashicorp/go-hclog"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	pb "github.com/nexuskernel/nexus/sdk/internal/pb/nexus/plugin/v1"
	"github.com/nexuskernel/nexus/sdk/internal/wire"
	"github.com/nexuskernel/nexus/sdk/memory"
	"github.com/nexuskernel/nexus/sdk/plugin"
)

// providerSlot is the shared adapter's slot with the tool-provider kind's own readings of it.
type providerSlot wire.Slot[Provider]

func (s *providerSlot) get() (Provider, error)    { return (*wire.Slot[Provider])(s).Get() }
func (s *providerSlot) set(p Provider)            { (*wire.Slot[Provider])(s).Set(p) }
func (s *providerSlot) close(logger hclog.Logger) { (*wire.Slot[Provider])(s).Close(logger) }

// errorKindOf is the wire kind of a Call error.
func errorKindOf(err error) int32 {
	switch {
	case errors.Is(err, ErrUnknownTool):
		return int32(pb.ErrorKind_ERROR_KIND_UNKNOWN_TOOL)
	case errors.Is(err, ErrOutcomeUnknown):
		return int32(pb.ErrorKind_ERROR_KIND_OUTCOME_UNKNOWN)
	case errors.Is(err, wire.ErrNotConfigured), errors.Is(err, plugin.ErrUnavailable):
		return int32(pb.ErrorKind_ERROR_KIND_UNAVAILABLE)
	case errors.Is(err, plugin.ErrConfigInvalid):
		return int32(pb.ErrorKind_ERROR_KIND_CONFIG_INVALID)
	}
	return int32(memory.KindOf(err)) // a memory sentinel keeps its kind; anything else is INTERNAL
}

// errorKindOfMinor0 is errorKindOf as protocol minor 0 knew it: a lost answer was no kind of
// its own, so it travels as INTERNAL.
func errorKindOfMinor0(err error) int32 {
	if errors.Is(err, ErrOutcomeUnknown) {
		return int32(pb.ErrorKind_ERROR_KIND_INTERNAL)
	}
	return errorKindOf(err)
}

// grpcServer is the plugin side of the ToolProvider service: it only translates.
type grpcServer struct {
	pb.UnimplementedToolProviderServer
	slot *providerSlot
	// kindOf is the wire kind of a Call error at the minor served.
	kindOf func(error) int32
}

func (s *grpcServer) Call(ctx context.Context, req *pb.CallRequest) (*pb.CallResponse, error) {
	p, err := s.slot.get()
	if err != nil {
		return nil, wire.ToStatus(err, s.kindOf)
	}
	res, err := p.Call(ctx, callFromProto(req))
	if err != nil {
		var failed *FailedError
		if errors.As(err, &failed) {
			return failedToProto(failed.Detail), nil
		}
		return nil, wire.ToStatus(err, s.kindOf)
	}
	if res.Failed {
		return failedToProto(res.FailureDetail), nil
	}
	return resultToProto(res), nil
}

// errNoReannouncer is the Unimplemented answer of a provider whose announcement never changes:
// what a plugin at protocol minor 0 answers too, so the host treats both alike.
var errNoReannouncer = status.Error(codes.Unimplemented, "the provider's announcement never changes")

// WatchAnnouncement sends the current revision, then every change the provider reports, until
// the host ends the stream or the plugin stops.
func (s *grpcServer) WatchAnnouncement(_ *pb.WatchAnnouncementRequest, stream grpc.ServerStreamingServer[pb.AnnouncementChanged]) error {
	p, err := s.slot.get()
	if err != nil {
		return wire.ToStatus(err, errorKindOf)
	}
	r, ok := p.(Reannouncer)
	if !ok {
		return errNoReannouncer
	}
	ctx := stream.Context()
	// Subscribed before the current revision is read, so a change in between is sent after it.
	changes := r.AnnouncementChanges(ctx)
	if err := stream.Send(&pb.AnnouncementChanged{Revision: r.AnnouncementRevision()}); err != nil {
		return err
	}
	for {
		select {
		case <-ctx.Done():
			return nil
		case rev, open := <-changes:
			if !open {
				return nil
			}
			if err := stream.Send(&pb.AnnouncementChanged{Revision: rev}); err != nil {
				return err
			}
		}
	}
}

// revision answers the configured provider's announcement revision; 0 when it keeps none.
func (s *providerSlot) revision() uint64 {
	p, err := s.get()
	if err != nil {
		return 0
	}
	if r, ok := p.(Reannouncer); ok {
		return r.AnnouncementRevision()
	}
	return 0
}
