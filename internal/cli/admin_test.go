package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/hashicorp/go-hclog"

	"github.com/nexuskernel/nexus/core/server"
	"github.com/nexuskernel/nexus/core/store"
	"github.com/nexuskernel/nexus/core/store/storetest"
	"github.com/nexuskernel/nexus/sdk/client"
)

// liveServer is a real server running in this process.
type liveServer struct {
	url, dataDir, admin string
	srv                 *server.Server
}

func startServer(t *testing.T, d store.Dialect) *liveServer {
	t.Helper()
	dataDir := filepath.Join(t.TempDir(), "nexus-data")
	layers := []server.Layer{{DataDir: &dataDir}}
	if d == store.Postgres {
		u := storetest.FreshURL(t, d)
		layers = append(layers, server.Layer{DatabaseURL: &u})
	}
	s, err := server.Resolve(layers...)
	if err != nil {
		t.Fatal(err)
	}
	srv, err := server.Open(context.Background(), s, hclog.NewNullLogger(), server.Options{
		Getenv: func(string) string { return "" }, TokenTerminal: func() bool { return false },
	})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, ln) }()
	t.Cleanup(func() {
		cancel()
		<-done
		_ = srv.Close()
	})
	tok, err := os.ReadFile(filepath.Join(dataDir, "admin.token"))
	if err != nil {
		t.Fatal(err)
	}
	return &liveServer{url: "http://" + ln.Addr().String(), dataDir: dataDir, admin: strings.TrimSpace(string(tok)), srv: srv}
}

// nexus runs the command line in this process against the server, as the admin unless env says
// otherwise, failing the test unless it exits 0.
func (ls *liveServer) nexus(t *testing.T, env map[string]string, args ...string) string {
	t.Helper()
	out, errs, code := ls.run(t, env, args...)
	if code != 0 {
		t.Fatalf("nexus %s: exit %d\n%s", strings.Join(args, " "), code, errs)
	}
	return out
}

func (ls *liveServer) run(t *testing.T, env map[string]string, args ...string) (string, string, int) {
	t.Helper()
	e := map[string]string{EnvAddr: ls.url, "NEXUS_DATA_DIR": ls.dataDir}
	for k, v := range env {
		e[k] = v
	}
	return inProcess(t, e, args...)
}

// refused runs a command that must fail with a refusal word.
func (ls *liveServer) refused(t *testing.T, env map[string]string, want string, args ...string) {
	t.Helper()
	_, errs, code := ls.run(t, env, args...)
	if code != 1 || !strings.Contains(errs, want) {
		t.Fatalf("nexus %s: exit %d, stderr %q; want exit 1 naming %q", strings.Join(args, " "), code, errs, want)
	}
}

// runStdin runs the command line against the server with stdin as its standard input.
func (ls *liveServer) runStdin(t *testing.T, environ map[string]string, stdin string, args ...string) (string, string, int) {
	t.Helper()
	e := map[string]string{EnvAddr: ls.url, "NEXUS_DATA_DIR": ls.dataDir}
	for k, v := range environ {
		e[k] = v
	}
	var out bytes.Buffer
	errf, err := os.CreateTemp(t.TempDir(), "stderr")
	if err != nil {
		t.Fatal(err)
	}
	defer errf.Close()
	code := run(&env{getenv: func(k string) string { return e[k] }, stdout: &out, stderr: errf, stdin: strings.NewReader(stdin)}, args)
	errb, _ := os.ReadFile(errf.Name())
	return out.String(), string(errb), code
}

// withStdinEnv is withStdin with more environment (another token).
func (ls *liveServer) withStdinEnv(t *testing.T, environ map[string]string, stdin string, args ...string) string {
	t.Helper()
	out, errs, code := ls.runStdin(t, environ, stdin, args...)
	if code != 0 {
		t.Fatalf("nexus %s: exit %d\n%s", strings.Join(args, " "), code, errs)
	}
	return out
}

// exits runs a command that must end with exit code want, and returns its standard output and
// standard error.
func (ls *liveServer) exits(t *testing.T, env map[string]string, want int, args ...string) (string, string) {
	t.Helper()
	out, errs, code := ls.run(t, env, args...)
	if code != want {
		t.Fatalf("nexus %s: exit %d, want %d\nstdout: %s\nstderr: %s", strings.Join(args, " "), code, want, out, errs)
	}
	return out, errs
}

var tokenLine = regexp.MustCompile(`(?m)^token\s+(nx[me]_[A-Za-z0-9_-]{43})\s+\(shown once`)

func TestAdminCommands(t *testing.T) {
	t.Parallel()
	for _, d := range storetest.Dialects() {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			ls := startServer(t, d)
			ctx := context.Background()
			admin := client.New(ls.url, ls.admin)

			// workspace create / list, as a table and as the API's body.
			out := ls.nexus(t, nil, "workspace", "create", "acme", "--name", "Acme Inc.")
			if !regexp.MustCompile(`(?m)^workspace\s+acme$`).MatchString(out) || !strings.Contains(out, "Acme Inc.") {
				t.Fatalf("workspace create:\n%s", out)
			}
			out = ls.nexus(t, nil, "workspace", "list")
			lines := strings.Split(strings.TrimSpace(out), "\n")
			if len(lines) != 3 || !strings.HasPrefix(lines[0], "HANDLE") || !strings.HasPrefix(lines[1], "acme ") || !strings.HasPrefix(lines[2], "default ") {
				t.Fatalf("workspace list:\n%s", out)
			}
			api, err := admin.Workspaces(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if out := ls.nexus(t, nil, "workspace", "list", "--json"); out != string(api.Raw) {
				t.Fatalf("workspace list --json = %s, want the API body %s", out, api.Raw)
			}
			wsID := strings.TrimSpace(ls.nexus(t, nil, "workspace", "create", "beta", "-q"))
			if w, err := admin.Workspace(ctx, "beta"); err != nil || w.Workspace.PublicID != wsID {
				t.Fatalf("workspace create -q printed %q; the workspace is %+v, %v", wsID, w, err)
			}

			// Several workspaces: the commands that need one ask for it.
			ls.refused(t, nil, "pass --workspace", "agent", "list")

			// user create: a person and their token.
			out = ls.nexus(t, nil, "user", "create", "alice", "--display-name", "Alice Liddell", "--role", "owner", "-w", "acme")
			m := tokenLine.FindStringSubmatch(out)
			if m == nil || !strings.Contains(out, "Alice Liddell") {
				t.Fatalf("user create:\n%s", out)
			}
			alice := map[string]string{EnvToken: m[1]}
			me, err := client.New(ls.url, m[1]).Me(ctx)
			if err != nil || me.Principal.Handle != "alice" {
				t.Fatalf("alice's token: %+v, %v", me, err)
			}
			bobTok := strings.TrimSpace(ls.nexus(t, nil, "user", "create", "bob", "-w", "acme", "-q"))

			// agent create with a steward named by handle; alice is the only workspace owner now
			// needed: NEXUS_WORKSPACE picks the workspace.
			out = ls.nexus(t, map[string]string{EnvWorkspace: "acme"}, "agent", "create", "helper", "--steward", "bob")
			if tokenLine.FindStringSubmatch(out) == nil {
				t.Fatalf("agent create:\n%s", out)
			}
			agents, err := admin.Agents(ctx, "acme")
			if err != nil || len(agents.Agents) != 1 {
				t.Fatalf("agents = %+v, %v", agents, err)
			}
			bobID := ""
			members, _ := admin.Members(ctx, "acme")
			for _, mb := range members.Members {
				if mb.Handle == "bob" {
					bobID = mb.PublicID
				}
			}
			if agents.Agents[0].StewardUserPublicID != bobID || agents.Agents[0].DisplayName != "helper" {
				t.Fatalf("agent = %+v, want steward bob (%s)", agents.Agents[0], bobID)
			}
			if out := ls.nexus(t, alice, "agent", "list", "-w", "acme", "--json"); !strings.Contains(out, `"handle":"helper"`) {
				t.Fatalf("agent list --json:\n%s", out)
			}
			out = ls.nexus(t, alice, "agent", "list", "-w", "acme")
			if !regexp.MustCompile(`(?m)^helper\s+helper\s+`).MatchString(out) {
				t.Fatalf("agent list:\n%s", out)
			}
			ls.refused(t, map[string]string{EnvToken: bobTok}, "not_authorized (403)", "agent", "create", "x", "-w", "acme")
			ls.refused(t, nil, "handle_taken (409)", "agent", "create", "helper", "-w", "acme")
			ls.refused(t, nil, "validation_failed (422)", "agent", "create", "Bad Handle", "-w", "acme")

			// member add / list / remove.
			out = ls.nexus(t, nil, "user", "create", "carol", "-w", "beta", "--json")
			var created struct {
				User struct {
					PublicID string `json:"public_id"`
				} `json:"user"`
			}
			if err := json.Unmarshal([]byte(out), &created); err != nil || created.User.PublicID == "" {
				t.Fatalf("user create --json: %s", out)
			}
			ls.nexus(t, nil, "member", "add", created.User.PublicID, "-w", "acme")
			ls.refused(t, nil, "already_member (409)", "member", "add", created.User.PublicID, "-w", "acme")
			out = ls.nexus(t, alice, "member", "list", "-w", "acme")
			rows := strings.Split(strings.TrimSpace(out), "\n")
			var kinds []string
			for _, r := range rows[1:] {
				f := strings.Fields(r)
				kinds = append(kinds, f[0]+":"+f[1])
			}
			if got := strings.Join(kinds, " "); got != "user:admin user:alice user:bob user:carol agent:helper" {
				t.Fatalf("member list:\n%s", out)
			}
			ls.nexus(t, nil, "member", "remove", "carol", "-w", "acme")
			ls.nexus(t, nil, "member", "remove", "helper", "-w", "acme")
			ls.refused(t, nil, "no member \"helper\"", "member", "remove", "helper", "-w", "acme")
			if out := ls.nexus(t, nil, "member", "list", "-w", "acme", "--json"); strings.Contains(out, "carol") || strings.Contains(out, "helper") {
				t.Fatalf("members after removal: %s", out)
			}

			// executor create / list / rotate / revoke.
			exTok := strings.TrimSpace(ls.nexus(t, alice, "executor", "create", "laptop", "-w", "acme", "-q"))
			runner := client.New(ls.url, exTok)
			id, err := runner.ExecutorIdentity(ctx)
			if err != nil || id.Executor.DisplayName != "laptop" || id.Executor.Kind != "runner" {
				t.Fatalf("executor identity: %+v, %v", id, err)
			}
			exID := id.Executor.PublicID
			ls.nexus(t, alice, "executor", "create", "search", "--kind", "tool_provider", "-w", "acme")
			out = ls.nexus(t, alice, "executor", "list")
			if !regexp.MustCompile(`(?m)^laptop\s+runner\s+active\s+online\s+`).MatchString(out) ||
				!regexp.MustCompile(`(?m)^search\s+tool_provider\s+active\s+not_yet_seen\s+-\s+`).MatchString(out) {
				t.Fatalf("executor list:\n%s", out)
			}
			if out := ls.nexus(t, alice, "executor", "list", "--kind", "tool_provider", "--json"); strings.Contains(out, "laptop") || !strings.Contains(out, "search") {
				t.Fatalf("executor list --kind tool_provider --json:\n%s", out)
			}
			ls.refused(t, alice, "parameter_invalid (400)", "executor", "list", "--kind", "robot")
			ls.refused(t, nil, "validation_failed (422)", "executor", "create", "x")
			newTok := strings.TrimSpace(ls.nexus(t, alice, "executor", "rotate", exID, "-q"))
			if _, err := runner.ExecutorIdentity(ctx); !isCode(err, "unauthorized") {
				t.Fatalf("old executor token after rotate: %v", err)
			}
			out = ls.nexus(t, alice, "executor", "revoke", exID)
			if !regexp.MustCompile(`(?m)^status\s+revoked$`).MatchString(out) {
				t.Fatalf("executor revoke:\n%s", out)
			}
			if _, err := client.New(ls.url, newTok).ExecutorIdentity(ctx); !isCode(err, "unauthorized") {
				t.Fatalf("executor token after revoke: %v", err)
			}
			ls.refused(t, alice, "executor_revoked (409)", "executor", "rotate", exID)
			if out := ls.nexus(t, alice, "executor", "list", "--status", "revoked"); !strings.Contains(out, exID) {
				t.Fatalf("executor list --status revoked:\n%s", out)
			}

			// token create / list / revoke.
			tok := strings.TrimSpace(ls.nexus(t, alice, "token", "create", "--label", "ci", "--expires-in", "1h", "-q"))
			out = ls.nexus(t, map[string]string{EnvToken: tok}, "token", "list")
			if !regexp.MustCompile(`(?m)\sci\s+\S+ \S+\s+\S+ \S+\s+\*$`).MatchString(out) || strings.Contains(out, "nxm_") {
				t.Fatalf("token list:\n%s", out)
			}
			ls.nexus(t, map[string]string{EnvToken: tok}, "token", "revoke", "current")
			ls.refused(t, map[string]string{EnvToken: tok}, "unauthorized (401)", "token", "list")
			var listed client.TokensResponse
			if err := json.Unmarshal([]byte(ls.nexus(t, alice, "token", "list", "--json")), &listed); err != nil || len(listed.Tokens) != 1 {
				t.Fatalf("alice's tokens: %+v, %v", listed, err)
			}
			ls.nexus(t, alice, "token", "revoke", listed.Tokens[0].PublicID)
			ls.refused(t, alice, "unauthorized (401)", "workspace", "list")
			ls.refused(t, nil, "--expires-in must be positive", "token", "create", "--expires-in", "-1h")
		})
	}
}

func isCode(err error, code string) bool {
	ce, ok := err.(*client.Error)
	return ok && ce.Code == code
}
