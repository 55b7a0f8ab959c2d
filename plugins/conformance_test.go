package plugins

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"os"
	"testing"

	"github.com/hashicorp/go-hclog"
	"github.com/jmoiron/sqlx"
	_ "github.com/lib/pq"

	"github.com/nexuskernel/nexus/sdk/memory"
	"github.com/nexuskernel/nexus/sdk/memory/memorytest"
	"github.com/nexuskernel/nexus/sdk/plugin"
	"github.com/nexuskernel/nexus/sdk/toolprovider/toolprovidertest"
)

// launchScenario starts a scenario as a real plugin process (handshake, AutoMTLS, gRPC) through
// the host's own load sequence and kills it when t ends.
func launchScenario(t testing.TB, kind plugin.Kind, scenario string, config string) *instance {
	t.Helper()
	e := scenarioEntry(t, "kit", kind, scenario)
	e.Config = json.RawMessage(config)
	in, r := launch(context.Background(), launchSpec{entry: e, command: e.Command, dataDir: t.TempDir(), logger: hclog.NewNullLogger()}, 1)
	if r != nil {
		t.Fatalf("launch %s: %v", scenario, r)
	}
	t.Cleanup(in.kill)
	return in
}

// The memory kit over real subprocesses: every store, each case in a fresh plugin process.
func TestMemoryKitOverSubprocess(t *testing.T) {
	t.Parallel()
	stores := map[string]memorytest.Factory{
		"memory-inmem": func(t *testing.T) memory.Provider {
			return launchScenario(t, plugin.KindMemory, "memory-inmem", `{}`).memory
		},
		"memory-fs": func(t *testing.T) memory.Provider {
			return launchScenario(t, plugin.KindMemory, "memory-fs", `{"root":"`+t.TempDir()+`"}`).memory
		},
	}
	if url := os.Getenv("NEXUS_TEST_POSTGRES_URL"); url != "" {
		stores["memory-postgres"] = func(t *testing.T) memory.Provider {
			cfg, _ := json.Marshal(map[string]any{"dsn": url, "schema": pgSchema(t, url), "max_open_conns": 2})
			return launchScenario(t, plugin.KindMemory, "memory-postgres", string(cfg)).memory
		}
	} else {
		t.Log("NEXUS_TEST_POSTGRES_URL is not set: memory-postgres runs the kit over a subprocess only with a database")
	}
	for name, factory := range stores {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			memorytest.RunProvider(t, factory)
			memorytest.RunTools(t, factory)
		})
	}
}

// pgSchema names a fresh schema dropped when t ends.
func pgSchema(t *testing.T, url string) string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	schema := "nexus_memory_test_" + hex.EncodeToString(b[:])
	t.Cleanup(func() {
		db, err := sqlx.Open("postgres", url)
		if err != nil {
			t.Error(err)
			return
		}
		defer func() { _ = db.Close() }()
		if _, err := db.Exec(`DROP SCHEMA IF EXISTS ` + schema + ` CASCADE`); err != nil {
			t.Error(err)
		}
	})
	return schema
}

// The example's golden files over a real subprocess: byte for byte as in process.
func TestToolsExampleGoldenOverSubprocess(t *testing.T) {
	t.Parallel()
	in := launchScenario(t, plugin.KindToolProvider, "tools-example", `{}`)
	toolprovidertest.CheckAnnouncement(t, in.tools)
	toolprovidertest.RunGolden(t, in.tools, "../providers/tools-example/testdata/golden")
}
