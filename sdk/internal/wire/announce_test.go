package wire

import (
	"encoding/json"
	"math"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/nexuskernel/nexus/sdk/announce"
	pb "github.com/nexuskernel/nexus/sdk/internal/pb/nexus/plugin/v1"
)

func ptr[T any](v T) *T { return &v }

func TestAnnouncementRoundTrip(t *testing.T) {
	t.Parallel()
	full := announce.Announcement{
		Tools: []announce.Tool{{
			Name: "example_echo", Description: ptr("Echo."), InputSchema: json.RawMessage(`{"type":"object"}`),
			EffectProfile: announce.Announced(announce.EffectPure), TimeoutMS: ptr(int64(10000)),
		}, {
			// Absence stays visible: no profile, no description, no schema, no timeout.
			Name: "bare",
		}, {
			Name: "no_destructive", EffectProfile: &announce.AnnouncedProfile{Kind: "pure", EffectScope: "closed", Idempotency: "intrinsic", Reconciliation: "none"},
		}, {
			Name: "empty_description", Description: ptr(""),
		}},
		Documents:   []announce.Document{{Name: "example-guide", Description: "How to use the example tools."}},
		Environment: json.RawMessage(`{"provider":"tools-example"}`),
	}
	for _, c := range []struct {
		name     string
		in, want announce.Announcement
	}{
		{"full", full, full},
		{"empty", announce.Announcement{}, announce.Announcement{}},
		{"negative timeout is sent as 0", announce.Announcement{Tools: []announce.Tool{{Name: "t", TimeoutMS: ptr(int64(-5))}}},
			announce.Announcement{Tools: []announce.Tool{{Name: "t", TimeoutMS: ptr(int64(0))}}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			if diff := cmp.Diff(c.want, AnnouncementFromProto(AnnouncementToProto(c.in))); diff != "" {
				t.Error(diff)
			}
		})
	}
	// A timeout past int64 stays out of range rather than wrapping negative.
	huge := AnnouncementFromProto(&pb.Announcement{Tools: []*pb.ToolAnnouncement{{Name: "t", TimeoutMs: ptr(uint64(math.MaxUint64))}}})
	if *huge.Tools[0].TimeoutMS != math.MaxInt64 {
		t.Errorf("huge timeout read as %d", *huge.Tools[0].TimeoutMS)
	}
	if got := AnnouncementFromProto(nil); !cmp.Equal(got, announce.Announcement{}) {
		t.Errorf("nil announcement read as %+v", got)
	}
}
