package wire

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/nexuskernel/nexus/sdk/announce"
	pb "github.com/nexuskernel/nexus/sdk/internal/pb/nexus/plugin/v1"
	"github.com/nexuskernel/nexus/sdk/plugin"
)

// TestDescribeRevision: Describe reads the revision before it builds the announcement, so a
// change made while it builds answers the older revision and is announced again; before
// Configure, and without a revision source, it reports 0.
func TestDescribeRevision(t *testing.T) {
	t.Parallel()
	var rev atomic.Uint64
	rev.Store(4)
	configure := func(context.Context, plugin.Config) error { return nil }
	changing := func(context.Context) (announce.Announcement, error) {
		rev.Add(1) // the list changes while the announcement is built
		return announce.Announcement{}, nil
	}
	s := NewPluginServer(plugin.Info{Name: "p"}, configure, changing).WithRevision(rev.Load)
	ctx := context.Background()
	if resp, err := s.Describe(ctx, &pb.DescribeRequest{}); err != nil || resp.GetAnnouncementRevision() != 0 {
		t.Fatalf("before Configure: %v %v", resp, err)
	}
	if _, err := s.Configure(ctx, &pb.ConfigureRequest{}); err != nil {
		t.Fatal(err)
	}
	resp, err := s.Describe(ctx, &pb.DescribeRequest{})
	if err != nil || resp.GetAnnouncementRevision() != 4 || rev.Load() != 5 {
		t.Fatalf("describe answered revision %d (now %d), %v; want the revision read before building, 4", resp.GetAnnouncementRevision(), rev.Load(), err)
	}
	plain := NewPluginServer(plugin.Info{Name: "p"}, configure, changing)
	_, _ = plain.Configure(ctx, &pb.ConfigureRequest{})
	if resp, err := plain.Describe(ctx, &pb.DescribeRequest{}); err != nil || resp.GetAnnouncementRevision() != 0 {
		t.Fatalf("without a revision source: %v %v", resp, err)
	}
}
