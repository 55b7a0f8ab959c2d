package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nexuskernel/nexus/core/executors"
	"github.com/nexuskernel/nexus/core/store"
	"github.com/nexuskernel/nexus/core/store/storetest"
	"github.com/nexuskernel/nexus/internal/testserver"
	"github.com/nexuskernel/nexus/plugins"
)

// rootsConfig runs memory-fs from the built binaries at root; "" leaves the root to its default,
// the plugin's data directory, which is each instance's own (docs/operations.md#several-instances).
func rootsConfig(t *testing.T, root string) string {
	cfg := "{ fsync = false }"
	if root != "" {
		cfg = fmt.Sprintf("{ root = %q, fsync = false }", root)
	}
	return fmt.Sprintf(`
kernel {
  sweep_interval = "50ms"
}
plugin_dirs = [%q]

plugin "memory-fs" {
  kind    = "memory"
  command = "nexus-memory-fs"
  config  = %s
}
`, pluginBinaries(t), cfg)
}

// rootsTimings rereads the roots of a held plugin often, so that the test sees it load soon
// after the other root's instance leaves.
func rootsTimings() plugins.Timings {
	t := pluginTimings
	t.RootRecheck = 100 * time.Millisecond
	return t
}

// rootsInstance is one instance of a memory-root test with its plugin helpers.
func rootsInstance(t *testing.T, srv *testserver.Instance) *pluginServer {
	return &pluginServer{plane: &plane{t: t, srv: srv, admin: srv.Client(), ctx: context.Background()}}
}

// readyz answers /readyz's status and body.
func readyz(t *testing.T, in *testserver.Instance) (int, string) {
	t.Helper()
	resp, err := http.Get(in.URL + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestMemoryRootSplitRefused: two instances on one PostgreSQL, each with memory-fs at its own
// data directory. The second holds its memory-fs unready with memory_root_split, naming the root
// in use, in its plugin status, /readyz and log; the override door refuses memory-fs with 409
// memory_root_split on either instance, listing both roots, and changes nothing; the first
// instance serves on. Once the first leaves, the second loads by itself and the door accepts.
func TestMemoryRootSplitRefused(t *testing.T) {
	t.Parallel()
	if storetest.PostgresURL() == "" {
		t.Log("several instances share PostgreSQL; SQLite serves one (TestSecondSQLiteServeExits)")
		return
	}
	cfg := rootsConfig(t, "")
	one := testserver.Start(t, testserver.Options{Dialect: store.Postgres, Config: cfg, PluginTimings: rootsTimings()})
	p1 := rootsInstance(t, one)
	p1.waitPlugin("memory-fs", func(s plugins.Status) bool { return s.State == plugins.StateReady })
	fsID := p1.executorOf("memory-fs")
	rootOne := filepath.Join(one.DataDir, "plugins", "memory-fs")

	two := testserver.Start(t, testserver.Options{Peer: one, Config: cfg, PluginTimings: rootsTimings(),
		NotReadyBecause: executors.CodeMemoryRootSplit})
	p2 := rootsInstance(t, two)
	rootTwo := filepath.Join(two.DataDir, "plugins", "memory-fs")
	st := p2.waitPlugin("memory-fs", func(s plugins.Status) bool { return s.State == plugins.StateRefused })
	if st.Refusal == nil || st.Refusal.Code != executors.CodeMemoryRootSplit ||
		!strings.Contains(st.Refusal.Message, "root "+rootTwo+" (ROOT_ID ") || !strings.Contains(st.Refusal.Message, "the root in use, "+rootOne+" (ROOT_ID ") {
		t.Fatalf("the second instance's memory-fs: %+v", st)
	}
	if out, err := p2.nexusCLI("plugins", "status", "memory-fs"); err != nil || !strings.Contains(out, "refused") ||
		!strings.Contains(out, "\nmemory-fs: memory_root_split: This instance's memory-fs root "+rootTwo) {
		t.Fatalf("nexus plugins status on the second instance: %v\n%s", err, out)
	}
	if code, body := readyz(t, two); code != http.StatusServiceUnavailable || !strings.Contains(body, `"plugins: memory-fs: memory_root_split: This instance's memory-fs root `+rootTwo) {
		t.Fatalf("second /readyz: %d %s", code, body)
	}
	if !strings.Contains(two.Logs(), "plugin held unready: its storage root is not the one in use") || !strings.Contains(two.Logs(), "code=memory_root_split") {
		t.Fatalf("the second instance's log does not say why memory-fs is unready:\n%s", two.Logs())
	}
	if code, body := readyz(t, one); code != http.StatusOK {
		t.Fatalf("first /readyz: %d %s", code, body)
	}

	put := []byte(`{"tool_provider_overrides":{"nexus.memory":"` + fsID + `"},"expected_lock_version":0}`)
	for _, p := range []*pluginServer{p1, p2} {
		code, _, body := p.raw(http.MethodPut, "/agent_api/v1/workspaces/default/tool_provider_overrides", one.AdminToken, put, nil)
		var doc struct {
			Error struct {
				Code   string                `json:"code"`
				Path   string                `json:"path"`
				Plugin string                `json:"plugin"`
				Roots  []executors.SplitRoot `json:"roots"`
			} `json:"error"`
		}
		if err := json.Unmarshal(body, &doc); err != nil {
			t.Fatal(err)
		}
		e := doc.Error
		if code != http.StatusConflict || e.Code != executors.CodeMemoryRootSplit || e.Path != "tool_provider_overrides.nexus.memory" ||
			e.Plugin != "memory-fs" || len(e.Roots) != 2 || e.Roots[0].Root != rootOne || !e.Roots[0].Serving ||
			e.Roots[1].Root != rootTwo || e.Roots[1].Serving || e.Roots[0].RootID == e.Roots[1].RootID {
			t.Fatalf("override during the split: %d %s", code, body)
		}
	}
	code, _, body := p1.raw(http.MethodGet, "/agent_api/v1/workspaces/default/tool_provider_overrides", one.AdminToken, nil, nil)
	if code != http.StatusOK || strings.TrimSpace(string(body)) != `{"tool_provider_overrides":{},"lock_version":0}` {
		t.Fatalf("the refused override changed the map: %d %s", code, body)
	}

	// The first instance leaves: the second's root is the only one, so it loads by itself, and
	// the door takes the override.
	if err := one.Stop(); err != nil {
		t.Fatal(err)
	}
	p2.waitPlugin("memory-fs", func(s plugins.Status) bool { return s.State == plugins.StateReady })
	if code, body := readyz(t, two); code != http.StatusOK {
		t.Fatalf("second /readyz once alone: %d %s", code, body)
	}
	p2.putOverride(fsID, 0)
}

// TestMemoryRootShared: two instances on one PostgreSQL whose memory-fs share one root both
// serve it, the override door accepts it, and memory written through either instance's runs
// is listed alike by runs on both.
func TestMemoryRootShared(t *testing.T) {
	t.Parallel()
	if storetest.PostgresURL() == "" {
		t.Log("several instances share PostgreSQL; SQLite serves one (TestSecondSQLiteServeExits)")
		return
	}
	cfg := rootsConfig(t, filepath.Join(t.TempDir(), "shared"))
	one := testserver.Start(t, testserver.Options{Dialect: store.Postgres, Config: cfg, PluginTimings: rootsTimings()})
	two := testserver.Start(t, testserver.Options{Peer: one, Config: cfg, PluginTimings: rootsTimings()})
	p1, p2 := rootsInstance(t, one), rootsInstance(t, two)
	for _, p := range []*pluginServer{p1, p2} {
		p.waitPlugin("memory-fs", func(s plugins.Status) bool { return s.State == plugins.StateReady })
	}
	p1.putOverride(p1.executorOf("memory-fs"), 0)

	// Each instance creates runs that write; whichever instance's plugin claims a call, the
	// document lands in the one root.
	var runs []string
	for i := range 6 {
		c := one.Client()
		if i%2 == 1 {
			c = two.Client()
		}
		created, err := c.CreateRun(context.Background(), "default", memoryRun(fmt.Sprintf("Note.\n!mock\nround 1\ncall memory_write {\"path\":\"workspace/n%d.md\",\"content\":\"n\"}\nround 2\nsay done", i)), "")
		if err != nil {
			t.Fatal(err)
		}
		runs = append(runs, created.Run.PublicID)
	}
	for _, run := range runs {
		if r := waitRun(t, one.Client(), run, time.Minute); r.Status != "completed" {
			t.Fatalf("writing run %s: %s", run, r.Status)
		}
	}
	ls := "List.\n!mock\nround 1\ncall memory_ls {}\nround 2\nsay {{last_result}}"
	var answers []string
	for _, in := range []*testserver.Instance{one, two, one, two} {
		created, err := in.Client().CreateRun(context.Background(), "default", memoryRun(ls), "")
		if err != nil {
			t.Fatal(err)
		}
		r := waitRun(t, in.Client(), created.Run.PublicID, time.Minute)
		if r.Status != "completed" || r.Answer == nil {
			t.Fatalf("listing run on %s: %s", in, r.Status)
		}
		answers = append(answers, *r.Answer)
	}
	for i := range 6 {
		if !strings.Contains(answers[0], fmt.Sprintf("n%d.md", i)) {
			t.Fatalf("the listing misses n%d.md: %q", i, answers[0])
		}
	}
	for _, a := range answers[1:] {
		if a != answers[0] {
			t.Fatalf("the instances list memory differently:\n%q\n%q", answers[0], a)
		}
	}
}
