package memorytest

import (
	"context"
	"testing"

	goplugin "github.com/hashicorp/go-plugin"

	"github.com/nexuskernel/nexus/sdk/memory"
	"github.com/nexuskernel/nexus/sdk/plugin"
)

// OverGRPC wraps factory so that every store it makes is reached through the real gRPC shims:
// the store is served by memory.ServerPlugin and dialled by memory.ClientPlugin over an
// in-process go-plugin pair (no subprocess), then configured like a plugin. Running the kit
// over it proves the converters and that typed errors survive the wire as the same sentinels.
func OverGRPC(factory Factory) Factory {
	return func(t *testing.T) memory.Provider {
		t.Helper()
		store := factory(t)
		return Dial(t, memory.ServeConfig{
			Info: plugin.Info{Name: "memorytest", Version: "0.0.0"},
			Configure: func(context.Context, plugin.Config) (memory.Provider, error) {
				return store, nil
			},
		})
	}
}

// Dial serves cfg over an in-process gRPC pair, configures it with an empty config block and
// answers the host's client. The pair is closed when t ends.
func Dial(t testing.TB, cfg memory.ServeConfig) memory.Client {
	t.Helper()
	key := plugin.KindMemory.PluginSetKey()
	client, _ := goplugin.TestPluginGRPCConn(t, false, map[string]goplugin.Plugin{key: memory.ServerPlugin(cfg)})
	t.Cleanup(func() {
		// Close shuts the server down through go-plugin's controller; stopping it again races.
		_ = client.Close()
	})
	raw, err := client.Dispense(key)
	if err != nil {
		t.Fatalf("dispense memory: %v", err)
	}
	c, ok := raw.(memory.Client)
	if !ok {
		t.Fatalf("dispensed %T, not a memory.Client", raw)
	}
	if err := c.Configure(context.Background(), plugin.Config{PluginName: "memorytest"}); err != nil {
		t.Fatalf("configure: %v", err)
	}
	return c
}
