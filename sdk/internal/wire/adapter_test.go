package wire

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/hashicorp/go-hclog"
	goplugin "github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"

	"github.com/nexuskernel/nexus/sdk/announce"
	pb "github.com/nexuskernel/nexus/sdk/internal/pb/nexus/plugin/v1"
	"github.com/nexuskernel/nexus/sdk/plugin"
)

// value is a kind's configured value in these tests; closer counts its Close calls.
type value interface{ Name() string }

type named string

func (n named) Name() string { return string(n) }

type closer struct {
	closed int
	err    error
}

func (c *closer) Name() string { return "closer" }
func (c *closer) Close() error { c.closed++; return c.err }

// testKind serves the Plugin service only; registered records the minor Register was given.
func testKind(registered *int) Kind[value] {
	return Kind[value]{
		Kind:    plugin.KindMemory,
		Package: "testkind",
		Noun:    "value",
		Announce: func(_ context.Context, v value) (announce.Announcement, error) {
			return announce.Announcement{Environment: json.RawMessage(`{"served_by":"` + v.Name() + `"}`)}, nil
		},
		Register: func(s *grpc.Server, describer *PluginServer, _ *Slot[value], minor int) {
			*registered = minor
			pb.RegisterPluginServer(s, describer)
		},
		Dial: func(conn grpc.ClientConnInterface) any { return NewPluginClient(conn) },
	}
}

// adapterPair serves a in process and answers the host's Plugin client.
func adapterPair(t *testing.T, a *Adapter[value]) *PluginClient {
	t.Helper()
	client, _ := goplugin.TestPluginGRPCConn(t, false, map[string]goplugin.Plugin{"k": a})
	t.Cleanup(func() { _ = client.Close() })
	raw, err := client.Dispense("k")
	if err != nil {
		t.Fatal(err)
	}
	return raw.(*PluginClient)
}

// TestAdapterServes: Info gets the kind, major 1 and the minor served; the announcement is
// empty before Configure and the configured value's after it.
func TestAdapterServes(t *testing.T) {
	t.Parallel()
	registered := -1
	configure := func(_ context.Context, cfg plugin.Config) (value, error) { return named(cfg.PluginName), nil }
	a := ServerAdapter(testKind(&registered), plugin.Info{Name: "p", Version: "1.0.0", Kind: plugin.KindToolProvider}, configure, plugin.ProtocolMinor)
	c := adapterPair(t, a)
	ctx := context.Background()
	info, ann, err := c.Describe(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if info.Kind != plugin.KindMemory || info.Name != "p" || info.Version != "1.0.0" ||
		len(info.ProtocolVersions) != 1 || info.ProtocolVersions[0] != plugin.ProtocolMajor || info.ProtocolMinor != plugin.ProtocolMinor {
		t.Errorf("info %+v", info)
	}
	if registered != plugin.ProtocolMinor {
		t.Errorf("Register got minor %d, want %d", registered, plugin.ProtocolMinor)
	}
	if len(ann.Environment) != 0 {
		t.Errorf("announcement before Configure: %+v", ann)
	}
	if err := c.Configure(ctx, plugin.Config{PluginName: "main"}); err != nil {
		t.Fatal(err)
	}
	if _, ann, err = c.Describe(ctx); err != nil || string(ann.Environment) != `{"served_by":"main"}` {
		t.Errorf("announcement after Configure: %+v, %v", ann, err)
	}
}

// TestAdapterMinorClamped: a minor past the current one is the current one, below 0 is 0.
func TestAdapterMinorClamped(t *testing.T) {
	t.Parallel()
	configure := func(context.Context, plugin.Config) (value, error) { return named("v"), nil }
	for _, c := range []struct{ asked, want int }{{-3, 0}, {0, 0}, {plugin.ProtocolMinor + 4, plugin.ProtocolMinor}} {
		registered := -1
		info, _, err := adapterPair(t, ServerAdapter(testKind(&registered), plugin.Info{}, configure, c.asked)).Describe(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if info.ProtocolMinor != c.want || registered != c.want {
			t.Errorf("minor %d: served %d, registered %d, want %d", c.asked, info.ProtocolMinor, registered, c.want)
		}
	}
}

// TestAdapterRefusals: a Configure that builds nothing is ErrUnavailable (retried), its own
// ErrConfigInvalid stays that, and an adapter without Configure serves nothing.
func TestAdapterRefusals(t *testing.T) {
	t.Parallel()
	registered := -1
	var built value
	var fail error
	configure := func(context.Context, plugin.Config) (value, error) { return built, fail }
	c := adapterPair(t, ServerAdapter(testKind(&registered), plugin.Info{}, configure, plugin.ProtocolMinor))
	ctx := context.Background()
	if err := c.Configure(ctx, plugin.Config{}); !errors.Is(err, plugin.ErrUnavailable) {
		t.Errorf("Configure that built nothing: %v, want ErrUnavailable", err)
	}
	fail = plugin.ErrConfigInvalid
	if err := c.Configure(ctx, plugin.Config{}); !errors.Is(err, plugin.ErrConfigInvalid) {
		t.Errorf("Configure refusing: %v, want ErrConfigInvalid", err)
	}
	err := ServerAdapter[value](testKind(&registered), plugin.Info{}, nil, 0).GRPCServer(nil, grpc.NewServer())
	if err == nil || err.Error() != "testkind: ServeConfig.Configure is required" {
		t.Errorf("no Configure: %v", err)
	}
}

// TestSlot: an empty slot is ErrNotConfigured; Close closes an io.Closer once a call, only logs
// its failure, and leaves an empty slot and a value that is no Closer be.
func TestSlot(t *testing.T) {
	t.Parallel()
	var s Slot[value]
	if _, err := s.Get(); !errors.Is(err, ErrNotConfigured) {
		t.Errorf("empty slot: %v", err)
	}
	s.Close(hclog.NewNullLogger())
	s.Set(named("a"))
	if v, err := s.Get(); err != nil || v.Name() != "a" {
		t.Errorf("Get %v, %v", v, err)
	}
	s.Close(hclog.NewNullLogger())
	c := &closer{err: errors.New("child did not exit")}
	s.Set(c)
	s.Close(hclog.NewNullLogger())
	if c.closed != 1 {
		t.Errorf("closed %d times, want 1", c.closed)
	}
}
