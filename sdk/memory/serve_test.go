package memory_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	goplugin "github.com/hashicorp/go-plugin"

	"github.com/nexuskernel/nexus/sdk/announce"
	"github.com/nexuskernel/nexus/sdk/memory"
	"github.com/nexuskernel/nexus/sdk/memory/memorytest"
	"github.com/nexuskernel/nexus/sdk/plugin"
)

// pair serves cfg in process and answers the host's client, unconfigured.
func pair(t *testing.T, cfg memory.ServeConfig) memory.Client {
	t.Helper()
	client, _ := goplugin.TestPluginGRPCConn(t, false, map[string]goplugin.Plugin{"memory": memory.ServerPlugin(cfg)})
	t.Cleanup(func() { _ = client.Close() }) // Close shuts the server down through its controller
	raw, err := client.Dispense("memory")
	if err != nil {
		t.Fatal(err)
	}
	return raw.(memory.Client)
}

type announcing struct {
	*memorytest.MemStore
	a announce.Announcement
}

func (a announcing) Announce(context.Context) (announce.Announcement, error) { return a.a, nil }

func TestDescribeAndConfigure(t *testing.T) {
	t.Parallel()
	var got plugin.Config
	c := pair(t, memory.ServeConfig{
		Info: plugin.Info{Name: "memory-x", Version: "1.2.3", Kind: plugin.KindToolProvider},
		Configure: func(_ context.Context, cfg plugin.Config) (memory.Provider, error) {
			got = cfg
			return memorytest.NewMemStore(), nil
		},
	})
	wantInfo := plugin.Info{Name: "memory-x", Version: "1.2.3", Kind: plugin.KindMemory, ProtocolVersions: []int{1}, ProtocolMinor: plugin.ProtocolMinor}
	info, a, err := c.Describe(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(wantInfo, info); diff != "" {
		t.Errorf("info before Configure (-want +got):\n%s", diff)
	}
	if len(a.Tools) != 0 {
		t.Errorf("announcement before Configure: %+v", a)
	}
	// A store call before Configure is unavailable, not a crash.
	if _, err := c.Ls(t.Context(), &memory.LsRequest{Scope: memorytest.Workspace}); !errors.Is(err, memory.ErrUnavailable) {
		t.Errorf("ls before Configure: %v", err)
	}
	if err := c.Configure(t.Context(), plugin.Config{PluginName: "mem-main", DataDir: "/d", Raw: []byte(`{"a":1}`), MaxConcurrency: 12}); err != nil {
		t.Fatal(err)
	}
	if got.PluginName != "mem-main" || got.DataDir != "/d" || string(got.Raw) != `{"a":1}` || got.MaxConcurrency != 12 {
		t.Errorf("configure delivered %+v", got)
	}
	_, a, err = c.Describe(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(memory.KernelAnnouncement(memory.DefaultTimeout), a); diff != "" {
		t.Errorf("default announcement (-want +got):\n%s", diff)
	}
	if r := announce.ValidatePlugin(announce.PluginKindMemory, a); r != nil {
		t.Errorf("the default announcement is refused: %v", r)
	}
}

func TestAnnouncer(t *testing.T) {
	t.Parallel()
	want := memory.KernelAnnouncement(memory.DefaultTimeout)
	want.Environment = []byte(`{"store":"x"}`)
	c := pair(t, memory.ServeConfig{Configure: func(context.Context, plugin.Config) (memory.Provider, error) {
		return announcing{memorytest.NewMemStore(), want}, nil
	}})
	if err := c.Configure(t.Context(), plugin.Config{}); err != nil {
		t.Fatal(err)
	}
	_, a, err := c.Describe(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, a); diff != "" {
		t.Error(diff)
	}
}

func TestConfigureErrors(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name string
		err  error
		want error
	}{
		{"config invalid refuses", fmt.Errorf("root: %w", plugin.ErrConfigInvalid), plugin.ErrConfigInvalid},
		{"unavailable retries", fmt.Errorf("db: %w", plugin.ErrUnavailable), plugin.ErrUnavailable},
		{"any other error retries", errors.New("boom"), plugin.ErrUnavailable},
		{"no store retries", nil, plugin.ErrUnavailable},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			cl := pair(t, memory.ServeConfig{Configure: func(context.Context, plugin.Config) (memory.Provider, error) { return nil, c.err }})
			if err := cl.Configure(t.Context(), plugin.Config{}); !errors.Is(err, c.want) {
				t.Errorf("got %v, want %v", err, c.want)
			}
		})
	}
}

func TestProfiles(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		tool       string
		want       announce.EffectProfile
		replayable bool
	}{
		{"memory_ls", memory.ProfileRead, true},
		{"memory_read", memory.ProfileRead, true},
		{"memory_grep", memory.ProfileRead, true},
		{"memory_write", memory.ProfileWrite, true},
		{"nexus.memory.delete", memory.ProfileWrite, true},
		{"memory_edit", memory.ProfileEdit, false},
	} {
		got, ok := memory.Profile(c.tool)
		if !ok || got != c.want || announce.Replayable(&got) != c.replayable {
			t.Errorf("%s: %+v %v", c.tool, got, ok)
		}
	}
	if _, ok := memory.Profile("delegate_task"); ok {
		t.Error("a non-memory tool has no memory profile")
	}
	// the JSON (docs/agent-tools.md#memory-and-skills), byte for byte.
	for _, c := range []struct {
		p    announce.EffectProfile
		json string
	}{
		{memory.ProfileRead, `{"kind":"read_only","destructive":false,"effect_scope":"closed","idempotency":"intrinsic","reconciliation":"none"}`},
		{memory.ProfileWrite, `{"kind":"write","destructive":true,"effect_scope":"closed","idempotency":"intrinsic","reconciliation":"lookup"}`},
		{memory.ProfileEdit, `{"kind":"write","destructive":true,"effect_scope":"closed","idempotency":"none","reconciliation":"lookup"}`},
	} {
		parsed, err := announce.ParseEffectProfile([]byte(c.json))
		if err != nil || parsed != c.p {
			t.Errorf("%s: parsed %+v (%v), have %+v", c.json, parsed, err, c.p)
		}
	}
}

// TestServeAtMinor2: a store served as protocol 1.2 reports minor 2, answers entries without
// ids and writes whatever a request's Expect says, as a binary built before 1.3 does; the host
// must not rely on it keeping a condition.
func TestServeAtMinor2(t *testing.T) {
	t.Parallel()
	client, _ := goplugin.TestPluginGRPCConn(t, false, map[string]goplugin.Plugin{"memory": memory.ServerPluginAtMinor(memory.ServeConfig{
		Info:      plugin.Info{Name: "memory-old", Version: "1.2.0"},
		Configure: func(context.Context, plugin.Config) (memory.Provider, error) { return memorytest.NewMemStore(), nil },
	}, 2)})
	t.Cleanup(func() { _ = client.Close() })
	raw, err := client.Dispense("memory")
	if err != nil {
		t.Fatal(err)
	}
	c := raw.(memory.Client)
	if err := c.Configure(t.Context(), plugin.Config{PluginName: "memory-old"}); err != nil {
		t.Fatal(err)
	}
	info, _, err := c.Describe(t.Context())
	if err != nil || info.ProtocolMinor != 2 {
		t.Fatalf("info %+v, %v", info, err)
	}
	w, err := c.Write(t.Context(), &memory.WriteRequest{Scope: memorytest.Workspace, Name: "a.md", Content: "x", WrittenAt: memorytest.T0})
	if err != nil || w.Entry.ID != "" {
		t.Fatalf("write: %+v %v", w, err)
	}
	stale := &memory.Expect{ID: memory.NewID(), Version: 9}
	if _, err := c.Write(t.Context(), &memory.WriteRequest{Scope: memorytest.Workspace, Name: "a.md", Content: "y", WrittenAt: memorytest.T0, Expect: stale}); err != nil {
		t.Fatalf("a 1.2 store keeps no condition, yet: %v", err)
	}
	ls, err := c.Ls(t.Context(), &memory.LsRequest{Scope: memorytest.Workspace})
	if err != nil || len(ls.Entries) != 1 || ls.Entries[0].ID != "" || ls.Entries[0].Version != 2 {
		t.Fatalf("ls: %+v %v", ls, err)
	}
	if _, err := c.Delete(t.Context(), &memory.DeleteRequest{Scope: memorytest.Workspace, Name: "a.md", Expect: stale}); err != nil {
		t.Fatalf("delete: %v", err)
	}
}
