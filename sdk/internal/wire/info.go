package wire

import (
	"math"

	pb "github.com/nexuskernel/nexus/sdk/internal/pb/nexus/plugin/v1"
	"github.com/nexuskernel/nexus/sdk/plugin"
)

// KindToProto converts a plugin kind; anything else is UNSPECIFIED.
func KindToProto(k plugin.Kind) pb.Kind {
	switch k {
	case plugin.KindMemory:
		return pb.Kind_KIND_MEMORY
	case plugin.KindToolProvider:
		return pb.Kind_KIND_TOOL_PROVIDER
	}
	return pb.Kind_KIND_UNSPECIFIED
}

// KindFromProto converts a peer's kind; UNSPECIFIED and unknown values read as "", which no
// catalog kind equals.
func KindFromProto(k pb.Kind) plugin.Kind {
	switch k {
	case pb.Kind_KIND_MEMORY:
		return plugin.KindMemory
	case pb.Kind_KIND_TOOL_PROVIDER:
		return plugin.KindToolProvider
	}
	return ""
}

// InfoToProto converts Info for the wire.
func InfoToProto(i plugin.Info) *pb.Info {
	out := &pb.Info{Name: i.Name, Version: i.Version, Kind: KindToProto(i.Kind), ProtocolMinor: clampUint32(i.ProtocolMinor)}
	for _, v := range i.ProtocolVersions {
		out.ProtocolVersions = append(out.ProtocolVersions, clampUint32(v))
	}
	return out
}

// InfoFromProto converts a peer's Info.
func InfoFromProto(p *pb.Info) plugin.Info {
	out := plugin.Info{
		Name: p.GetName(), Version: p.GetVersion(), Kind: KindFromProto(p.GetKind()),
		ProtocolMinor: int(p.GetProtocolMinor()),
	}
	for _, v := range p.GetProtocolVersions() {
		out.ProtocolVersions = append(out.ProtocolVersions, int(v))
	}
	return out
}

func clampUint32(v int) uint32 {
	return uint32(min(max(v, 0), math.MaxUint32))
}
