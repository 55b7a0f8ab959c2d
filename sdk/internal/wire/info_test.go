package wire

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	pb "github.com/nexuskernel/nexus/sdk/internal/pb/nexus/plugin/v1"
	"github.com/nexuskernel/nexus/sdk/plugin"
)

func TestInfoRoundTrip(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name     string
		in, want plugin.Info
	}{
		{"memory", plugin.Info{Name: "memory-fs", Version: "1.0.0", Kind: plugin.KindMemory, ProtocolVersions: []int{1}, ProtocolMinor: 0},
			plugin.Info{Name: "memory-fs", Version: "1.0.0", Kind: plugin.KindMemory, ProtocolVersions: []int{1}, ProtocolMinor: 0}},
		{"tool provider, two majors", plugin.Info{Name: "t", Kind: plugin.KindToolProvider, ProtocolVersions: []int{1, 2}, ProtocolMinor: 3},
			plugin.Info{Name: "t", Kind: plugin.KindToolProvider, ProtocolVersions: []int{1, 2}, ProtocolMinor: 3}},
		{"unknown kind reads empty", plugin.Info{Name: "r", Kind: "runner"}, plugin.Info{Name: "r"}},
		{"negative minor clamps", plugin.Info{ProtocolMinor: -1}, plugin.Info{}},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			if diff := cmp.Diff(c.want, InfoFromProto(InfoToProto(c.in))); diff != "" {
				t.Error(diff)
			}
		})
	}
	if KindFromProto(pb.Kind(99)) != "" {
		t.Error("an unknown enum value must read as no kind")
	}
}
