//go:build e2e

package readmetest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/nexuskernel/nexus/core/store"
	"github.com/nexuskernel/nexus/core/store/storetest"
)

// Bounds of the test's waits. The first `make run` in a fresh clone compiles the whole module,
// which takes minutes on a busy two-core machine; a started server answers within seconds.
const (
	buildTimeout  = 15 * time.Minute
	readyTimeout  = 60 * time.Second
	scriptTimeout = 5 * time.Minute
	stopTimeout   = 20 * time.Second
)

// The environment the README's blocks must not inherit from whoever runs the test: the blocks
// set what they need themselves.
var scrubbed = []string{"NEXUS_TOKEN", "NEXUS_WORKSPACE", "NEXUS_EXECUTOR_TOKEN", "NEXUS_ADDR", "NEXUS_CONFIG",
	"NEXUS_DATA_DIR", "NEXUS_DATABASE_URL", "NEXUS_LISTEN", "NEXUS_PLUGIN_DIR", "NEXUS_LOG_LEVEL", "NEXUS_LOG_FORMAT"}

var (
	cloneOnce sync.Once
	cloneDir  string
	cloneErr  error
	// cloneParent is the empty directory the clone was made in, removed when the tests end.
	cloneParent string
)

// clone returns a fresh clone of the repository at its HEAD commit with bin/ built, shared by
// the tests of this package.
func clone(t *testing.T) string {
	t.Helper()
	cloneOnce.Do(func() {
		cloneDir, cloneErr = makeClone()
	})
	if cloneErr != nil {
		t.Fatal(cloneErr)
	}
	return cloneDir
}

func makeClone() (string, error) {
	root, err := git("", "rev-parse", "--show-toplevel")
	if err != nil {
		return "", err
	}
	head, err := git(root, "rev-parse", "HEAD")
	if err != nil {
		return "", err
	}
	// The clone is the only entry of an empty directory, as a stranger's first clone is: a test
	// or build step that reads a file beside the repository finds nothing there.
	parent, err := os.MkdirTemp("", "nexus-readme-")
	if err != nil {
		return "", err
	}
	cloneParent = parent
	dir := filepath.Join(parent, "nexus")
	if _, err := git("", "clone", "--quiet", "--no-checkout", root, dir); err != nil {
		return "", err
	}
	if _, err := git(dir, "checkout", "--quiet", "--detach", head); err != nil {
		return "", err
	}
	ctx, cancel := context.WithTimeout(context.Background(), buildTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "make", "build")
	cmd.Dir = dir
	cmd.Env = environ(nil)
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("make build in the clone: %v\n%s", err, out)
	}
	return dir, nil
}

func git(dir string, args ...string) (string, error) {
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out)), nil
}

// environ is this process's environment without the Nexus settings, plus extra.
func environ(extra map[string]string) []string {
	var out []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		keep := true
		for _, s := range scrubbed {
			if k == s {
				keep = false
			}
		}
		if keep {
			out = append(out, kv)
		}
	}
	for k, v := range extra {
		out = append(out, k+"="+v)
	}
	return out
}

func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// process is a command the test started in its own process group, with its output kept.
type process struct {
	cmd    *exec.Cmd
	out    *syncWriter
	exited chan struct{}
	// err is Wait's answer, read only after exited is closed.
	err error
}

func start(t *testing.T, dir string, env []string, name string, args ...string) *process {
	t.Helper()
	p := &process{cmd: exec.Command(name, args...), out: &syncWriter{w: &bytes.Buffer{}}, exited: make(chan struct{})}
	p.cmd.Dir, p.cmd.Env = dir, env
	p.cmd.Stdout, p.cmd.Stderr = p.out, p.out
	// Its own group, so that stopping make stops the server it started too.
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		p.err = p.cmd.Wait()
		close(p.exited)
	}()
	t.Cleanup(func() { p.stop(t) })
	return p
}

// stop sends SIGTERM to the process group and waits for the process, then kills what is left;
// it answers Wait's error.
func (p *process) stop(t *testing.T) error {
	select {
	case <-p.exited:
		return p.err
	default:
	}
	_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGTERM)
	select {
	case <-p.exited:
	case <-time.After(stopTimeout):
		_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
		<-p.exited
		t.Errorf("%s did not stop within %s of SIGTERM", p.cmd.Path, stopTimeout)
	}
	return p.err
}

func (p *process) output() string {
	p.out.mu.Lock()
	defer p.out.mu.Unlock()
	return p.out.w.String()
}

type syncWriter struct {
	mu sync.Mutex
	w  *bytes.Buffer
}

func (s *syncWriter) Write(b []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(b)
}

// waitReady waits until the server at addr answers /readyz with 200: its store answers and every
// configured plugin has had its first start.
func waitReady(t *testing.T, p *process, addr string, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		select {
		case <-p.exited:
			t.Fatalf("the server exited before it was ready: %v\n%s", p.err, p.output())
		default:
		}
		resp, err := http.Get("http://" + addr + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("the server was not ready within %s\n%s", timeout, p.output())
}

// block is one fenced block of README.md.
type block struct {
	lang, text string
	line       int
}

var fence = regexp.MustCompile("(?m)^```([A-Za-z0-9_-]*)\n")

// blocks returns the fenced blocks of a Markdown text, in order.
func blocks(t *testing.T, md string) []block {
	t.Helper()
	var out []block
	rest, offset := md, 0
	for {
		m := fence.FindStringSubmatchIndex(rest)
		if m == nil {
			return out
		}
		body := rest[m[1]:]
		end := strings.Index(body, "\n```")
		if end < 0 {
			t.Fatalf("README.md: the block at line %d is not closed", strings.Count(md[:offset+m[0]], "\n")+1)
		}
		out = append(out, block{lang: rest[m[2]:m[3]], text: body[:end+1], line: strings.Count(md[:offset+m[0]], "\n") + 1})
		skip := m[1] + end + len("\n```")
		rest, offset = rest[skip:], offset+skip
	}
}

// makeSetup finds a command line that runs make run or make test.
var makeSetup = regexp.MustCompile(`(?m)^\s*make\s+(run|test)\b`)

func isShell(lang string) bool { return lang == "sh" || lang == "bash" || lang == "shell" }

// TestREADME runs README.md as a newcomer would: in a fresh clone, the server started by the
// set-up block's make run, then every shell block in order in one shell.
func TestREADME(t *testing.T) {
	dir := clone(t)
	md, err := os.ReadFile(filepath.Join(dir, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	all := blocks(t, string(md))
	if len(all) == 0 || isShell(all[0].lang) || !regexp.MustCompile(`(?m)^make run\b`).MatchString(all[0].text) {
		t.Fatal("README.md's first block must be the set-up, not run by this test, starting the server with make run")
	}
	for _, b := range all {
		if isShell(b.lang) && makeSetup.MatchString(b.text) {
			t.Fatalf("README.md line %d: a shell block runs make test or make run; the test runs the set-up itself", b.line)
		}
	}
	script, n := shellScript(all)
	if n == 0 {
		t.Fatal("README.md has no shell block")
	}
	for _, d := range storetest.Dialects() {
		t.Run(string(d), func(t *testing.T) {
			// The blocks write into the clone (the data directory, logs): each store starts from
			// the committed tree with bin/ kept.
			if _, err := git(dir, "clean", "-ffdxq", "-e", "/bin/"); err != nil {
				t.Fatal(err)
			}
			addr := freeAddr(t)
			env := map[string]string{"NEXUS_LISTEN": addr}
			if d == store.Postgres {
				env["NEXUS_DATABASE_URL"] = storetest.FreshURL(t, d)
			}
			server := start(t, dir, environ(env), "make", "run")
			waitReady(t, server, addr, buildTimeout)

			out, err := runScript(dir, script, environ(map[string]string{"NEXUS_ADDR": "http://" + addr}))
			if err != nil {
				t.Fatalf("%s failed: %v\n%s\n--- server ---\n%s", failedBlock(out), err, out, server.output())
			}
			if got := strings.Count(string(out), blockMark); got != n {
				t.Fatalf("ran %d of %d blocks\n%s", got, n, out)
			}
			// A newcomer's clone keeps nothing of the blocks but what .gitignore names (the
			// data directory, bin/).
			if left, err := git(dir, "status", "--porcelain", "--untracked-files=all"); err != nil || left != "" {
				t.Fatalf("the blocks left files in the clone (%v):\n%s", err, left)
			}
			server.stop(t)
			waitGone(t, addr)
		})
	}
}

// blockMark opens each block's output, so that a failure names its block.
const blockMark = "### README.md block at line "

// shellScript joins the sh, bash and shell blocks into one bash script that stops at the first
// command that fails, each block announced on standard error; it answers the script and how many
// blocks it holds.
func shellScript(all []block) (string, int) {
	var script strings.Builder
	script.WriteString("set -euo pipefail\n")
	n := 0
	for _, b := range all {
		if !isShell(b.lang) {
			continue
		}
		n++
		fmt.Fprintf(&script, "echo '%s%d' >&2\n%s", blockMark, b.line, b.text)
	}
	return script.String(), n
}

// failedBlock names the block a failed script's output stopped in.
func failedBlock(out []byte) string {
	i := strings.LastIndex(string(out), blockMark)
	if i < 0 {
		return "the first block"
	}
	return strings.SplitN(string(out[i+len("### "):]), "\n", 2)[0]
}

// TestScriptStopsAtAFailingBlock: a block whose command fails fails the script, which names that
// block and runs none after it; text and hcl fences are not run.
func TestScriptStopsAtAFailingBlock(t *testing.T) {
	md := "# R\n\n```text\nexit 1\n```\n\n```sh\necho one\n```\n\n```bash\nfalse | cat\necho two\n```\n\n```shell\necho three\n```\n"
	script, n := shellScript(blocks(t, md))
	if n != 3 {
		t.Fatalf("%d shell blocks, want 3", n)
	}
	out, err := runScript(t.TempDir(), script, environ(nil))
	if err == nil {
		t.Fatalf("a failing block passed:\n%s", out)
	}
	if got := failedBlock(out); got != "README.md block at line 11" {
		t.Fatalf("the failure names %q:\n%s", got, out)
	}
	if strings.Contains(string(out), "two") || strings.Contains(string(out), "three") || !strings.Contains(string(out), "one") {
		t.Fatalf("the script ran past the failing command, or not up to it:\n%s", out)
	}
	ok, _ := shellScript(blocks(t, "```sh\necho fine\n```\n"))
	if out, err := runScript(t.TempDir(), ok, environ(nil)); err != nil {
		t.Fatalf("a passing block failed: %v\n%s", err, out)
	}
}

// runScript runs a bash script in its own process group and stops whatever it left running in
// the background (a runner, when a block failed before stopping it).
func runScript(dir, script string, env []string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(context.Background(), scriptTimeout)
	defer cancel()
	sh := exec.CommandContext(ctx, "bash", "-c", script)
	sh.Dir, sh.Env = dir, env
	sh.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	var out bytes.Buffer
	sh.Stdout, sh.Stderr = &out, &out
	err := sh.Start()
	if err == nil {
		err = sh.Wait()
		_ = syscall.Kill(-sh.Process.Pid, syscall.SIGTERM)
	}
	return out.Bytes(), err
}

// waitGone waits until nothing listens at addr any more: the server make started has stopped
// too, not only make.
func waitGone(t *testing.T, addr string) {
	t.Helper()
	deadline := time.Now().Add(stopTimeout)
	for time.Now().Before(deadline) {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			return
		}
		c.Close()
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("the server at %s still listens %s after SIGTERM", addr, stopTimeout)
}

// TestExamples starts every file of examples/: a settings file (.hcl) serves with a server
// that becomes ready with every plugin it names ready; a runner's tool file (*-tools.json) is
// served by nexus runner, which announces each of its tools; a systemd unit of deploy/ passes
// systemd-analyze verify; the plugin module tool-plugin/ builds and its settings file serves
// with the plugin ready. A file no check knows fails.
func TestExamples(t *testing.T) {
	dir := clone(t)
	entries, err := os.ReadDir(filepath.Join(dir, "examples"))
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) == 0 {
		t.Fatal("examples/ is empty")
	}
	for _, ent := range entries {
		name := ent.Name()
		path := filepath.Join("examples", name)
		switch {
		case strings.HasSuffix(name, ".hcl"):
			for _, d := range storetest.Dialects() {
				t.Run(name+"/"+string(d), func(t *testing.T) { serveSettings(t, dir, path, d) })
			}
		case strings.HasSuffix(name, "-tools.json"):
			t.Run(name, func(t *testing.T) { serveRunnerTools(t, dir, path) })
		case name == "deploy" && ent.IsDir():
			units, err := os.ReadDir(filepath.Join(dir, path))
			if err != nil {
				t.Fatal(err)
			}
			for _, u := range units {
				rel := filepath.Join(path, u.Name())
				if !strings.HasSuffix(u.Name(), ".service") {
					t.Errorf("no check knows %s: add one to this test", rel)
					continue
				}
				t.Run("deploy/"+u.Name(), func(t *testing.T) { verifyUnit(t, dir, rel) })
			}
		case name == "tool-plugin" && ent.IsDir():
			t.Run(name, func(t *testing.T) { serveToolPlugin(t, dir) })
		default:
			t.Errorf("no check knows examples/%s: add one to this test", name)
		}
	}
}

// envRef finds the env("NAME") references of a settings file.
var envRef = regexp.MustCompile(`env\("([A-Za-z_][A-Za-z0-9_]*)"\)`)

// exampleSecrets gives every variable a settings file reads with env("NAME") a made-up value, as
// the operator the example is written for would have set the real one: the server refuses to
// start on a missing secret, and no provider or MCP server is reached while the test serves.
func exampleSecrets(t *testing.T, dir, path string) map[string]string {
	t.Helper()
	if path == "" {
		return nil
	}
	text, err := os.ReadFile(filepath.Join(dir, path))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, m := range envRef.FindAllStringSubmatch(string(text), -1) {
		out[m[1]] = "example-secret-" + strings.ToLower(m[1])
	}
	return out
}

// serveBare starts the clone's server with the settings file path (none when empty) on a fresh
// data directory, with made-up values for the secrets it names (exampleSecrets), and returns
// its address and data directory.
func serveBare(t *testing.T, dir, path string, d store.Dialect) (*process, string, string) {
	t.Helper()
	addr, data := freeAddr(t), t.TempDir()
	args := []string{"serve", "--listen", addr, "--data-dir", data}
	if path != "" {
		args = append(args, "--config", path)
	}
	if d == store.Postgres {
		args = append(args, "--database-url", storetest.FreshURL(t, d))
	}
	p := start(t, dir, environ(exampleSecrets(t, dir, path)), filepath.Join(dir, "bin", "nexus"), args...)
	waitReady(t, p, addr, readyTimeout)
	return p, addr, data
}

func serveSettings(t *testing.T, dir, path string, d store.Dialect) {
	p, addr, data := serveBare(t, dir, path, d)
	tok, err := os.ReadFile(filepath.Join(data, "admin.token"))
	if err != nil {
		t.Fatal(err)
	}
	out := nexus(t, dir, addr, strings.TrimSpace(string(tok)), "plugins", "status", "--json")
	var st struct {
		Plugins []struct {
			Name, State string
		} `json:"plugins"`
	}
	if err := json.Unmarshal([]byte(out), &st); err != nil {
		t.Fatalf("plugins status --json: %v\n%s", err, out)
	}
	for _, pl := range st.Plugins {
		if pl.State != "ready" {
			t.Errorf("%s: plugin %s is %s\n%s", path, pl.Name, pl.State, p.output())
		}
	}
	if err := p.stop(t); err != nil {
		t.Fatalf("%s: the server did not exit 0 after SIGTERM: %v\n%s", path, err, p.output())
	}
}

func serveRunnerTools(t *testing.T, dir, path string) {
	_, addr, data := serveBare(t, dir, "", store.SQLite)
	tok, err := os.ReadFile(filepath.Join(data, "admin.token"))
	if err != nil {
		t.Fatal(err)
	}
	admin := strings.TrimSpace(string(tok))
	var file struct {
		Tools []struct {
			Name string `json:"name"`
		} `json:"tools"`
	}
	b, err := os.ReadFile(filepath.Join(dir, path))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &file); err != nil || len(file.Tools) == 0 {
		t.Fatalf("%s lists no tools: %v", path, err)
	}
	runnerTok := strings.TrimSpace(nexus(t, dir, addr, admin, "executor", "create", "example", "--quiet"))
	env := environ(map[string]string{"NEXUS_ADDR": "http://" + addr, "NEXUS_EXECUTOR_TOKEN": runnerTok})
	runner := start(t, dir, env, filepath.Join(dir, "bin", "nexus"), "runner", "--tools", path)
	for _, tool := range file.Tools {
		nexus(t, dir, addr, admin, "executor", "wait", "example", "--tool", tool.Name)
	}
	if err := runner.stop(t); err != nil {
		t.Fatalf("nexus runner did not exit 0 after SIGTERM: %v\n%s", err, runner.output())
	}
}

// nexus runs the clone's nexus against addr with token and returns its standard output.
func nexus(t *testing.T, dir, addr, token string, args ...string) string {
	t.Helper()
	cmd := exec.Command(filepath.Join(dir, "bin", "nexus"), args...)
	cmd.Dir = dir
	cmd.Env = environ(map[string]string{"NEXUS_ADDR": "http://" + addr, "NEXUS_TOKEN": token})
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("nexus %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return string(out)
}

func TestMain(m *testing.M) {
	code := m.Run()
	if cloneParent != "" {
		_ = os.RemoveAll(cloneParent)
	}
	os.Exit(code)
}
