package cli

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/spf13/cobra"

	"github.com/nexuskernel/nexus/core/identity"
	"github.com/nexuskernel/nexus/core/registry"
	"github.com/nexuskernel/nexus/core/store"
	"github.com/nexuskernel/nexus/core/store/storetest"
)

// helperEnv makes the test binary act as the nexus command, as go-plugin's own tests re-execute
// themselves: the subprocess is the real command line with real signals.
const helperEnv = "NEXUS_CLI_TEST_HELPER"

func TestMain(m *testing.M) {
	if os.Getenv(helperEnv) == "1" {
		os.Exit(Main(os.Args[1:]))
	}
	os.Exit(m.Run())
}

// nexusCmd returns the test binary re-executed as `nexus args…`.
func nexusCmd(t *testing.T, args ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(os.Environ(), helperEnv+"=1")
	return cmd
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

func waitHealthy(t *testing.T, addr string, exited <-chan error) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case err := <-exited:
			t.Fatalf("server exited before it was healthy: %v", err)
		default:
		}
		resp, err := http.Get("http://" + addr + "/healthz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatal("server did not become healthy")
}

// inProcess runs the command line in this process with a scrubbed environment.
func inProcess(t *testing.T, environ map[string]string, args ...string) (string, string, int) {
	t.Helper()
	var out bytes.Buffer
	errf, err := os.CreateTemp(t.TempDir(), "stderr")
	if err != nil {
		t.Fatal(err)
	}
	defer errf.Close()
	e := &env{getenv: func(k string) string { return environ[k] }, stdout: &out, stderr: errf}
	code := run(e, args)
	errb, _ := os.ReadFile(errf.Name())
	return out.String(), string(errb), code
}

// TestServeSubprocess is the newcomer's path: serve on the default store layout, fetch the
// catalog with the admin token, list it with the CLI, then stop with SIGTERM and exit 0.
func TestServeSubprocess(t *testing.T) {
	t.Parallel()
	for _, d := range storetest.Dialects() {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			dataDir := filepath.Join(t.TempDir(), "nexus-data")
			addr := freeAddr(t)
			args := []string{"serve", "--listen", addr, "--data-dir", dataDir, "--log-format", "json"}
			if d == store.Postgres {
				args = append(args, "--database-url", storetest.FreshURL(t, d))
			}
			cmd := nexusCmd(t, args...)
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			exited := make(chan error, 1)
			go func() { exited <- cmd.Wait() }()
			defer func() {
				if cmd.ProcessState == nil {
					_ = cmd.Process.Kill()
				}
			}()
			waitHealthy(t, addr, exited)

			tok, err := os.ReadFile(filepath.Join(dataDir, "admin.token"))
			if err != nil {
				t.Fatal(err)
			}
			req, _ := http.NewRequest("GET", "http://"+addr+"/agent_api/v1/tools", nil)
			req.Header.Set("Authorization", "Bearer "+strings.TrimSpace(string(tok)))
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			want := registry.New().CatalogBody()
			if resp.StatusCode != 200 || !bytes.Equal(body, want) {
				t.Fatalf("catalog: status %d, body equal %v", resp.StatusCode, bytes.Equal(body, want))
			}

			// The CLI finds the token in the data directory by itself.
			out, errs, code := inProcess(t, nil, "tools", "--json", "--server", addr, "--data-dir", dataDir)
			if code != 0 || out != string(want) {
				t.Fatalf("tools --json: exit %d, stderr %s, body equal %v", code, errs, out == string(want))
			}
			out, errs, code = inProcess(t, map[string]string{EnvAddr: "http://" + addr, EnvToken: strings.TrimSpace(string(tok))}, "tools")
			if code != 0 || !strings.Contains(out, "delegate_task") || !strings.Contains(out, "nexus.graph.delegate_task") || strings.Count(out, "\n") != 21 {
				t.Fatalf("tools: exit %d, stderr %s, out:\n%s", code, errs, out)
			}
			out, errs, code = inProcess(t, map[string]string{EnvAddr: "http://" + addr, EnvToken: strings.TrimSpace(string(tok))}, "models")
			if code != 0 || !strings.Contains(out, "REF") || !strings.Contains(out, "mock/scripted") || !strings.Contains(out, "mock/text-only") ||
				!strings.Contains(out, "200000") || !strings.Contains(out, "0/0 USD") {
				t.Fatalf("models: exit %d, stderr %s, out:\n%s", code, errs, out)
			}
			out, errs, code = inProcess(t, nil, "models", "--json", "--limit", "1", "--server", addr, "--data-dir", dataDir)
			if code != 0 || !strings.HasPrefix(out, `{"models":[{"ref":"mock/scripted"`) || !strings.Contains(out, `"next_offset":1`) {
				t.Fatalf("models --json: exit %d, stderr %s, out %s", code, errs, out)
			}
			out, errs, code = inProcess(t, map[string]string{EnvAddr: "http://" + addr, EnvToken: strings.TrimSpace(string(tok))}, "instances")
			if code != 0 || !strings.Contains(out, "HEARTBEAT") || !strings.Contains(out, "inst_") || strings.Count(out, "(this one)") != 1 ||
				!strings.Contains(out, "heartbeat every 2s; an instance silent for 10s is taken over") {
				t.Fatalf("instances: exit %d, stderr %s, out:\n%s", code, errs, out)
			}
			out, errs, code = inProcess(t, nil, "instances", "--json", "--server", addr, "--data-dir", dataDir)
			if code != 0 || !strings.HasPrefix(out, `{"instances":[{"id":"inst_`) || !strings.Contains(out, `"self":true`) {
				t.Fatalf("instances --json: exit %d, stderr %s, out %s", code, errs, out)
			}
			_, errs, code = inProcess(t, nil, "tools", "--server", addr, "--token", "nxm_"+strings.Repeat("x", 40))
			if code != 1 || !strings.Contains(errs, "unauthorized (401)") {
				t.Fatalf("tools with an unknown token: exit %d, stderr %s", code, errs)
			}

			if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
				t.Fatal(err)
			}
			select {
			case err := <-exited:
				if err != nil {
					t.Fatalf("exit after SIGTERM: %v\n%s", err, stderr.String())
				}
			case <-time.After(20 * time.Second):
				t.Fatal("server did not exit after SIGTERM")
			}
			log := stderr.String()
			for _, want := range []string{`"bootstrapped workspace default with user admin"`, `"token_file"`, `"stopped"`} {
				if !strings.Contains(log, want) {
					t.Errorf("log lacks %s:\n%s", want, log)
				}
			}
			if strings.Contains(log, strings.TrimSpace(string(tok))) {
				t.Error("the generated token was logged to a non-terminal")
			}

			// A restart bootstraps nothing and the token still works; break-glass mints another.
			mintArgs := []string{"token", "mint", "--user", "admin", "--data-dir", dataDir}
			if d == store.Postgres {
				mintArgs = append(mintArgs, "--database-url", args[len(args)-1])
			}
			out, errs, code = inProcess(t, nil, mintArgs...)
			if code != 0 {
				t.Fatalf("token mint: exit %d: %s", code, errs)
			}
			minted := strings.TrimSpace(out)
			st, err := store.Open(context.Background(), databaseOf(d, dataDir, args), store.Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close()
			p, err := identity.NewAuthenticator(st, nil).Member(context.Background(), minted)
			if err != nil || p.Handle != "admin" {
				t.Fatalf("minted token: %+v, %v", p, err)
			}
			_, errs, code = inProcess(t, nil, append(mintArgs[:2:2], "--user", "ghost", "--data-dir", dataDir)...)
			if d == store.SQLite && (code != 1 || !strings.Contains(errs, `"ghost"`)) {
				t.Fatalf("token mint for an unknown user: exit %d: %s", code, errs)
			}
		})
	}
}

func databaseOf(d store.Dialect, dataDir string, args []string) string {
	if d == store.Postgres {
		return args[len(args)-1]
	}
	return filepath.Join(dataDir, "nexus.db")
}

func TestMigrateCommands(t *testing.T) {
	t.Parallel()
	dataDir := t.TempDir()
	out, errs, code := inProcess(t, nil, "migrate", "status", "--data-dir", dataDir)
	if code != 0 || !strings.Contains(out, "pending") || strings.Contains(out, "applied ") {
		t.Fatalf("status before: exit %d %s\n%s", code, errs, out)
	}
	out, errs, code = inProcess(t, nil, "migrate", "--data-dir", dataDir)
	if code != 0 || !strings.Contains(out, "applied 00001") {
		t.Fatalf("migrate: exit %d %s\n%s", code, errs, out)
	}
	out, _, code = inProcess(t, nil, "migrate", "--data-dir", dataDir)
	if code != 0 || !strings.Contains(out, "nothing to apply") {
		t.Fatalf("second migrate: exit %d\n%s", code, out)
	}
	out, _, code = inProcess(t, map[string]string{"NEXUS_DATA_DIR": dataDir}, "migrate", "status")
	if code != 0 || strings.Contains(out, "pending") || !strings.Contains(out, "applied") {
		t.Fatalf("status after: exit %d\n%s", code, out)
	}
}

func TestSettingsFromCommandLine(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	file := filepath.Join(dir, "nexus.hcl")
	if err := os.WriteFile(file, []byte(`listen = "127.0.0.1:1"`+"\nlog_level = \"debug\"\nlog_format = \"json\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	e := &env{getenv: func(k string) string {
		return map[string]string{"NEXUS_CONFIG": file, "NEXUS_LISTEN": "127.0.0.1:2", "NEXUS_LOG_LEVEL": "warn"}[k]
	}, stdout: io.Discard, stderr: os.Stderr}
	root := newRoot(e)
	serve, _, err := root.Find([]string{"serve"})
	if err != nil {
		t.Fatal(err)
	}
	if err := serve.ParseFlags([]string{"--listen", "127.0.0.1:3", "--plugin-dir", "a", "--plugin-dir", "b"}); err != nil {
		t.Fatal(err)
	}
	s, err := e.settings(serve, &globals{}, serveFlagsOf(t, serve))
	if err != nil {
		t.Fatal(err)
	}
	got := fmt.Sprintf("%s %s %s %v %s", s.Listen, s.LogLevel, s.LogFormat, s.PluginDirs, s.ConfigFile)
	want := fmt.Sprintf("127.0.0.1:3 warn json [a b] %s", file)
	if got != want {
		t.Fatalf("settings = %s, want %s", got, want)
	}
}

// serveFlagsOf reads the serve command's parsed flag values back into a serverFlags.
func serveFlagsOf(t *testing.T, cmd *cobra.Command) *serverFlags {
	t.Helper()
	fs := cmd.Flags()
	f := &serverFlags{}
	f.listen, _ = fs.GetString("listen")
	f.pluginDirs, _ = fs.GetStringArray("plugin-dir")
	f.logLevel, _ = fs.GetString("log-level")
	f.logFormat, _ = fs.GetString("log-format")
	f.databaseURL, _ = fs.GetString("database-url")
	return f
}
