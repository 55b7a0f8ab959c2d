package plugins

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

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

// prefetch is how many plugin processes the subprocess kit starts ahead of the cases: a start
// waits on process launch and two TLS key generations more than on CPU, so overlapping a few
// keeps the kit's wall time close to its CPU time.
const prefetch = 4

// prelaunched answers a factory whose stores are real plugin processes started ahead by a few
// goroutines; each case gets a fresh process (a fresh, empty store) and kills it at its end.
func prelaunched(t *testing.T, kind plugin.Kind, scenario string, config func() string) memorytest.Factory {
	// The test's temporary directory exists before the cleanup below is registered, so that its
	// removal runs after that cleanup has stopped the launches, which make directories in it: a
	// launch whose directory was removed under it fails.
	_ = t.TempDir()
	ch := make(chan *instance, prefetch)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	t.Cleanup(func() {
		cancel()
		wg.Wait()
		close(ch)
		for in := range ch {
			in.kill()
		}
	})
	for range prefetch {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				e := scenarioEntry(t, "kit", kind, scenario)
				e.Config = json.RawMessage(config())
				in, r := launch(ctx, launchSpec{entry: e, command: e.Command, dataDir: t.TempDir(), logger: hclog.NewNullLogger()}, 1)
				if r != nil {
					if ctx.Err() == nil {
						t.Errorf("launch %s: %v", scenario, r)
					}
					return
				}
				select {
				case ch <- in:
				case <-ctx.Done():
					in.kill()
					return
				}
			}
		}()
	}
	return func(t *testing.T) memory.Provider {
		select {
		case in := <-ch:
			t.Cleanup(in.kill)
			return in.memory
		case <-time.After(60 * time.Second):
			t.Fatal("no plugin process started within a minute")
			return nil
		}
	}
}

// The memory kit over real subprocesses, for the two plugin stores: each case in a fresh
// plugin process, so typed errors are proven across a real process boundary (the in-memory
// reference store runs the kit over an in-process pair in sdk/memory/memorytest).
func TestMemoryKitOverSubprocess(t *testing.T) {
	t.Parallel()
	t.Run("memory-fs", func(t *testing.T) {
		t.Parallel()
		root := t.TempDir()
		var n atomic.Int64
		factory := prelaunched(t, plugin.KindMemory, "memory-fs", func() string {
			return `{"root":"` + filepath.Join(root, strconv.FormatInt(n.Add(1), 10)) + `"}`
		})
		memorytest.RunProvider(t, factory)
		memorytest.RunTools(t, factory)
	})
	t.Run("memory-postgres", func(t *testing.T) {
		t.Parallel()
		url := os.Getenv("NEXUS_TEST_POSTGRES_URL")
		if url == "" {
			t.Skip("NEXUS_TEST_POSTGRES_URL is not set: the PostgreSQL store needs a real database")
		}
		// Named before the factory, so that the schemas are dropped after its cleanup has
		// stopped the launches: a schema dropped under a launch fails it.
		schema := pgSchemas(t, url)
		factory := prelaunched(t, plugin.KindMemory, "memory-postgres", func() string {
			cfg, _ := json.Marshal(map[string]any{"dsn": url, "schema": schema(), "max_open_conns": 2})
			return string(cfg)
		})
		memorytest.RunProvider(t, factory)
		memorytest.RunTools(t, factory)
	})
}

// pgSchemas answers a source of fresh schema names; every schema it named is dropped when t
// ends, by a cleanup registered now, which runs after the cleanups registered later.
func pgSchemas(t testing.TB, url string) func() string {
	var mu sync.Mutex
	var named []string
	t.Cleanup(func() {
		db, err := sqlx.Open("postgres", url)
		if err != nil {
			t.Error(err)
			return
		}
		defer func() { _ = db.Close() }()
		mu.Lock()
		defer mu.Unlock()
		for _, schema := range named {
			if _, err := db.Exec(`DROP SCHEMA IF EXISTS ` + schema + ` CASCADE`); err != nil {
				t.Error(err)
			}
		}
	})
	return func() string {
		var b [6]byte
		_, _ = rand.Read(b[:])
		schema := "nexus_memory_test_" + hex.EncodeToString(b[:])
		mu.Lock()
		named = append(named, schema)
		mu.Unlock()
		return schema
	}
}

// The example's golden files over a real subprocess: byte for byte as in process.
func TestToolsExampleGoldenOverSubprocess(t *testing.T) {
	t.Parallel()
	in := launchScenario(t, plugin.KindToolProvider, "tools-example", `{}`)
	toolprovidertest.CheckAnnouncement(t, in.tools)
	toolprovidertest.RunGolden(t, in.tools, "../providers/tools-example/testdata/golden")
}
