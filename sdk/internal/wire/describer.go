package wire

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"sync/atomic"

	"google.golang.org/grpc"

	"github.com/nexuskernel/nexus/sdk/announce"
	pb "github.com/nexuskernel/nexus/sdk/internal/pb/nexus/plugin/v1"
	"github.com/nexuskernel/nexus/sdk/plugin"
)

// PluginServer serves the Plugin service of one plugin process: Info as the kind package's Serve
// filled it, Configure through the kind's hook, and the announcement the configured value makes.
type PluginServer struct {
	pb.UnimplementedPluginServer

	info plugin.Info
	// configure builds the kind's value from the config; announce answers its announcement.
	configure func(ctx context.Context, cfg plugin.Config) error
	announce  func(ctx context.Context) (announce.Announcement, error)
	// revision answers the revision of what announce answers now; nil keeps none (0).
	revision func() uint64

	mu         sync.Mutex
	configured bool
}

// NewPluginServer returns the Plugin service for a plugin with info. configure is called on
// each Configure; announce only after one succeeded (before, Describe answers an empty
// announcement).
func NewPluginServer(info plugin.Info, configure func(context.Context, plugin.Config) error, announce func(context.Context) (announce.Announcement, error)) *PluginServer {
	return &PluginServer{info: info, configure: configure, announce: announce}
}

// WithRevision makes Describe report revision's answer as the announcement's revision
// (protocol 1.1). It is read before the announcement is built, so a change made in between is
// reported again by the next revision, never lost.
func (s *PluginServer) WithRevision(revision func() uint64) *PluginServer {
	s.revision = revision
	return s
}

// Describe implements the Plugin service.
func (s *PluginServer) Describe(ctx context.Context, _ *pb.DescribeRequest) (*pb.DescribeResponse, error) {
	s.mu.Lock()
	configured := s.configured
	s.mu.Unlock()
	resp := &pb.DescribeResponse{Info: InfoToProto(s.info), Announcement: &pb.Announcement{}}
	if configured {
		if s.revision != nil {
			resp.AnnouncementRevision = s.revision()
		}
		a, err := s.announce(ctx)
		if err != nil {
			return nil, ToStatus(err, PluginKindOf)
		}
		resp.Announcement = AnnouncementToProto(a)
	}
	return resp, nil
}

// Configure implements the Plugin service.
func (s *PluginServer) Configure(ctx context.Context, req *pb.ConfigureRequest) (*pb.ConfigureResponse, error) {
	raw := json.RawMessage(req.GetConfigJson())
	if len(raw) == 0 {
		raw = json.RawMessage("{}")
	}
	cfg := plugin.Config{PluginName: req.GetPluginName(), DataDir: req.GetDataDir(), Raw: raw, MaxConcurrency: int(req.GetMaxConcurrency())}
	if err := s.configure(ctx, cfg); err != nil {
		return nil, ToStatus(err, PluginKindOf)
	}
	s.mu.Lock()
	s.configured = true
	s.mu.Unlock()
	return &pb.ConfigureResponse{}, nil
}

// PluginClient is the host's side of the Plugin service; it implements plugin.Describer.
type PluginClient struct {
	client pb.PluginClient
	// minor is the plugin's protocol minor from its last Describe; -1 before the first.
	minor atomic.Int64
}

var _ plugin.Describer = (*PluginClient)(nil)

// NewPluginClient dials the Plugin service over conn.
func NewPluginClient(conn grpc.ClientConnInterface) *PluginClient {
	c := &PluginClient{client: pb.NewPluginClient(conn)}
	c.minor.Store(-1)
	return c
}

// Describe implements plugin.Describer.
func (c *PluginClient) Describe(ctx context.Context) (plugin.Info, announce.Announcement, error) {
	info, a, _, err := c.DescribeRevision(ctx)
	return info, a, err
}

// DescribeRevision is Describe with the announcement's revision, 0 when the plugin keeps none
// (always so for a plugin at protocol minor 0).
func (c *PluginClient) DescribeRevision(ctx context.Context) (plugin.Info, announce.Announcement, uint64, error) {
	resp, err := c.client.Describe(ctx, &pb.DescribeRequest{HostProtocolMinor: plugin.ProtocolMinor})
	if err != nil {
		return plugin.Info{}, announce.Announcement{}, 0, pluginError(ctx, err)
	}
	info := InfoFromProto(resp.GetInfo())
	c.minor.Store(int64(info.ProtocolMinor))
	return info, AnnouncementFromProto(resp.GetAnnouncement()), resp.GetAnnouncementRevision(), nil
}

// PeerMinor answers the protocol minor the plugin reported in its last Describe, or -1 before
// the first.
func (c *PluginClient) PeerMinor() int {
	return int(c.minor.Load())
}

// Configure implements plugin.Describer.
func (c *PluginClient) Configure(ctx context.Context, cfg plugin.Config) error {
	raw := cfg.Raw
	if len(raw) == 0 {
		raw = json.RawMessage("{}")
	}
	_, err := c.client.Configure(ctx, &pb.ConfigureRequest{PluginName: cfg.PluginName, ConfigJson: raw, DataDir: cfg.DataDir,
		MaxConcurrency: uint32(max(cfg.MaxConcurrency, 0))})
	if err != nil {
		return pluginError(ctx, err)
	}
	return nil
}

// pluginError rebuilds a Plugin-service failure: CONFIG_INVALID is plugin.ErrConfigInvalid, a
// lost process plugin.ErrPluginShutdown, and everything else plugin.ErrUnavailable, a start the
// host retries.
func pluginError(ctx context.Context, err error) error {
	r := FromStatus(err)
	if terr := Transport(ctx, r); terr != nil {
		return terr
	}
	if r.Typed && r.Kind == pb.ErrorKind_ERROR_KIND_CONFIG_INVALID {
		return fmt.Errorf("%w: %s", plugin.ErrConfigInvalid, r.Message)
	}
	return fmt.Errorf("%w: %s", plugin.ErrUnavailable, r.Message)
}
