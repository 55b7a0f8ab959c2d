package memory

import (
	"context"
	"errors"

	pb "github.com/nexuskernel/nexus/sdk/internal/pb/nexus/plugin/v1"
	"github.com/nexuskernel/nexus/sdk/internal/wire"
)

// grpcServer is the plugin side of the MemoryProvider service: it only translates between the
// generated types and the Provider, and carries errors as kinds.
type grpcServer struct {
	pb.UnimplementedMemoryProviderServer
	slot *wire.Slot[Provider]
	// beforeIDs serves a minor before document ids (ServerPluginAtMinor): requests' Expect
	// goes unread and entries carry no id.
	beforeIDs bool
}

// minorIDs is the protocol minor that added Entry.id and Expect.
const minorIDs = 3

// entries clears the ids of a minor before them.
func (s *grpcServer) entries(es ...*pb.Entry) {
	if s.beforeIDs {
		for _, e := range es {
			e.Id = ""
		}
	}
}

// errorKindOf is the wire kind of a store error; one not configured yet is UNAVAILABLE.
func errorKindOf(err error) int32 {
	if errors.Is(err, wire.ErrNotConfigured) {
		return int32(KindUnavailable)
	}
	return int32(KindOf(err))
}

func toStatus(err error) error { return wire.ToStatus(err, errorKindOf) }

func (s *grpcServer) Ls(ctx context.Context, req *pb.LsRequest) (*pb.LsResponse, error) {
	p, err := s.slot.Get()
	if err != nil {
		return nil, toStatus(err)
	}
	resp, err := p.Ls(ctx, lsRequestFromProto(req))
	if err != nil {
		return nil, toStatus(err)
	}
	if resp == nil {
		return nil, toStatus(errNilResponse)
	}
	out := lsResponseToProto(resp)
	s.entries(out.Entries...)
	return out, nil
}

func (s *grpcServer) Read(ctx context.Context, req *pb.ReadRequest) (*pb.ReadResponse, error) {
	p, err := s.slot.Get()
	if err != nil {
		return nil, toStatus(err)
	}
	resp, err := p.Read(ctx, readRequestFromProto(req))
	if err != nil {
		return nil, toStatus(err)
	}
	if resp == nil {
		return nil, toStatus(errNilResponse)
	}
	out := readResponseToProto(resp)
	s.entries(out.Entry)
	return out, nil
}

func (s *grpcServer) Grep(ctx context.Context, req *pb.GrepRequest) (*pb.GrepResponse, error) {
	p, err := s.slot.Get()
	if err != nil {
		return nil, toStatus(err)
	}
	resp, err := p.Grep(ctx, grepRequestFromProto(req))
	if err != nil {
		return nil, toStatus(err)
	}
	if resp == nil {
		return nil, toStatus(errNilResponse)
	}
	return grepResponseToProto(resp), nil
}

func (s *grpcServer) Write(ctx context.Context, req *pb.WriteRequest) (*pb.WriteResponse, error) {
	p, err := s.slot.Get()
	if err != nil {
		return nil, toStatus(err)
	}
	r := writeRequestFromProto(req)
	if s.beforeIDs {
		r.Expect = nil
	}
	resp, err := p.Write(ctx, r)
	if err != nil {
		return nil, toStatus(err)
	}
	if resp == nil {
		return nil, toStatus(errNilResponse)
	}
	out := writeResponseToProto(resp)
	s.entries(out.Entry)
	return out, nil
}

func (s *grpcServer) Edit(ctx context.Context, req *pb.EditRequest) (*pb.EditResponse, error) {
	p, err := s.slot.Get()
	if err != nil {
		return nil, toStatus(err)
	}
	r := editRequestFromProto(req)
	if s.beforeIDs {
		r.Expect = nil
	}
	resp, err := p.Edit(ctx, r)
	if err != nil {
		return nil, toStatus(err)
	}
	if resp == nil {
		return nil, toStatus(errNilResponse)
	}
	out := editResponseToProto(resp)
	s.entries(out.Entry)
	return out, nil
}

func (s *grpcServer) Delete(ctx context.Context, req *pb.DeleteRequest) (*pb.DeleteResponse, error) {
	p, err := s.slot.Get()
	if err != nil {
		return nil, toStatus(err)
	}
	r := deleteRequestFromProto(req)
	if s.beforeIDs {
		r.Expect = nil
	}
	if _, err := p.Delete(ctx, r); err != nil {
		return nil, toStatus(err)
	}
	return &pb.DeleteResponse{}, nil
}

// errNilResponse is a store that answered neither a response nor an error: a store bug, sent
// as INTERNAL.
var errNilResponse = errors.New("memory: store answered no response")
