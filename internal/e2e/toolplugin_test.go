package e2e

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nexuskernel/nexus/core/store"
	"github.com/nexuskernel/nexus/internal/testserver"
	"github.com/nexuskernel/nexus/plugins"
)

// toolPluginDir is the example plugin module, a module of its own inside the repository
// (docs/plugins.md#writing-a-tool-plugin-step-by-step); `go test ./...` at the root does not
// reach it, so this test builds, vets and tests it.
const toolPluginDir = "../../examples/tool-plugin"

// goIn runs the go command in dir with the module's go.mod and go.sum as they are committed
// (-mod=readonly): a dependency the example's go.sum lacks fails here, not in a stranger's copy.
func goIn(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("go", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOFLAGS="+strings.TrimSpace(os.Getenv("GOFLAGS")+" -mod=readonly"), "GOWORK=off")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("go %s in %s: %v\n%s\n(after a change of the SDK's dependencies, run go mod tidy in examples/tool-plugin)", strings.Join(args, " "), dir, err, out)
	}
	return string(out)
}

// TestToolPluginModule: the example plugin module passes vet, staticcheck and its own kit test,
// builds with go build, and, loaded from a plugin block with its checksum and config, answers a
// run's call of its tool.
//
// It is not parallel: its compilers and analysers would take the CPU from the suite's load and
// latency tests (TestPluginMemoryUnderLoad counts wake-ups a busy machine delays), so it runs
// before them, alone.
func TestToolPluginModule(t *testing.T) {
	goIn(t, toolPluginDir, "vet", "./...")
	// staticcheck is the root module's pinned tool; the nested module is analysed in its own
	// directory, where it resolves its own module.
	staticcheck := strings.TrimSpace(goIn(t, "../..", "tool", "-n", "staticcheck"))
	sc := exec.Command(staticcheck, "./...")
	sc.Dir = toolPluginDir
	sc.Env = append(os.Environ(), "GOWORK=off")
	if out, err := sc.CombinedOutput(); err != nil {
		t.Fatalf("staticcheck in %s: %v\n%s", toolPluginDir, err, out)
	}
	goIn(t, toolPluginDir, "test", "-count=1", "./...")

	bin := filepath.Join(t.TempDir(), "nexus-wordcount")
	goIn(t, toolPluginDir, "build", "-o", bin, ".")
	b, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(b)
	config := fmt.Sprintf(`
plugin "wordcount" {
  kind    = "tool_provider"
  command = %q
  sha256  = %q
  config  = { max_chars = 40 }
}
`, bin, hex.EncodeToString(sum[:]))
	srv := testserver.Start(t, testserver.Options{Dialect: store.SQLite, Config: config, PluginTimings: pluginTimings})
	p := &pluginServer{plane: &plane{t: t, srv: srv, admin: srv.Client(), ctx: context.Background()}}
	st := p.waitPlugin("wordcount", func(s plugins.Status) bool { return s.State == plugins.StateReady || s.State == plugins.StateRefused })
	if st.State != plugins.StateReady {
		t.Fatalf("the example plugin is %s: %+v\n%s", st.State, st.Refusal, srv.Logs())
	}
	run := p.modelRun("mock/scripted", `Count.
!mock
round 1
call word_count {"text":"Ship on Friday.\nThen rest."}
call word_count {"text":"a text longer than the forty characters the block allows"}
round 2
say done`, []any{plain("word_count")}, nil, "bypass", nil)
	counted := p.waitTask(run, "r2t0", "completed", "failed")
	if counted.Task.Status != "completed" || deref(counted.Task.Output) != "5 words, 2 lines, 26 characters" ||
		!strings.Contains(string(counted.Raw), `"words":5`) {
		t.Fatalf("word_count: %s", counted.Raw)
	}
	// The block's config reached the plugin: its bound refuses the long text as an error the
	// model reads.
	long := p.waitTask(run, "r2t1", "completed", "failed")
	if long.Task.Status != "completed" || !strings.Contains(string(long.Raw), `"is_error":true`) ||
		deref(long.Task.Output) != "invalid input: text has 56 characters, more than 40" {
		t.Fatalf("word_count over max_chars: %s", long.Raw)
	}
	p.waitRunStatus(run, "completed")
}
