package server

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/nexuskernel/nexus/core/liveness"
	"github.com/nexuskernel/nexus/core/registry"
	"github.com/nexuskernel/nexus/core/store"
	"github.com/nexuskernel/nexus/core/store/storetest"
)

func openServer(t *testing.T, d store.Dialect, opts Options) (*Server, Settings) {
	t.Helper()
	s, err := Resolve()
	if err != nil {
		t.Fatal(err)
	}
	s.DataDir = t.TempDir()
	if d == store.Postgres {
		s.DatabaseURL = storetest.FreshURL(t, d)
	}
	if opts.Getenv == nil {
		opts.Getenv = func(string) string { return "" }
	}
	opts.TokenTerminal = func() bool { return false }
	srv, err := Open(context.Background(), s, hclog.NewNullLogger(), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	return srv, s
}

func TestServeCatalogThenDrain(t *testing.T) {
	t.Parallel()
	for _, d := range storetest.Dialects() {
		t.Run(string(d), func(t *testing.T) {
			srv, s := openServer(t, d, Options{})
			_, addr, tok, stop := serveFor(t, srv, s)
			req, _ := http.NewRequest("GET", "http://"+addr+"/agent_api/v1/tools", nil)
			req.Header.Set("Authorization", "Bearer "+tok)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 200 || string(body) != string(registry.New().CatalogBody()) {
				t.Fatalf("catalog: status %d, %d bytes", resp.StatusCode, len(body))
			}
			if err := stop(); err != nil {
				t.Fatalf("Serve after cancel: %v, want nil", err)
			}
			if _, err := net.Dial("tcp", addr); err == nil {
				t.Fatal("the listener still accepts after shutdown")
			}
		})
	}
}

func TestDrainTimeout(t *testing.T) {
	t.Parallel()
	srv, s := openServer(t, store.SQLite, Options{DrainTimeout: 200 * time.Millisecond})
	_, addr, token, stop := serveFor(t, srv, s)
	// A door reading a body that never arrives keeps its request in flight, so the drain cannot
	// complete. The interim 100 Continue is the server's word that the door is reading it.
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	head := "POST /agent_api/v1/workspaces HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + token +
		"\r\nContent-Type: application/json\r\nContent-Length: 100\r\nExpect: 100-continue\r\n\r\n"
	if _, err := c.Write([]byte(head)); err != nil {
		t.Fatal(err)
	}
	if err := c.SetReadDeadline(time.Now().Add(30 * time.Second)); err != nil {
		t.Fatal(err)
	}
	status, err := bufio.NewReader(c).ReadString('\n')
	if err != nil || !strings.HasPrefix(status, "HTTP/1.1 100 ") {
		t.Fatalf("interim response = %q, %v; want 100 Continue", status, err)
	}
	if err := stop(); !errors.Is(err, ErrDrainTimeout) {
		t.Fatalf("Serve = %v, want ErrDrainTimeout", err)
	}
}

func TestOpenRefusesNewerSchema(t *testing.T) {
	t.Parallel()
	for _, d := range storetest.Dialects() {
		t.Run(string(d), func(t *testing.T) {
			srv, s := openServer(t, d, Options{})
			ctx := context.Background()
			_, known, err := srv.Store().SchemaVersions(ctx)
			if err != nil {
				t.Fatal(err)
			}
			q := `INSERT INTO goose_db_version (version_id, is_applied) VALUES (?, ?)`
			if d == store.Postgres {
				q = `INSERT INTO goose_db_version (version_id, is_applied) VALUES ($1, $2)`
			}
			if _, err := srv.Store().DB().ExecContext(ctx, q, known+1, true); err != nil {
				t.Fatal(err)
			}
			if reasons := srv.notReady(ctx); len(reasons) != 1 || !strings.Contains(reasons[0], "newer") {
				t.Fatalf("readiness on a newer schema = %v", reasons)
			}
			// A second server on the database: on SQLite it would stop at the lock the first
			// holds (TestSQLiteServesOneServer), so the first lets it go for this test.
			if err := srv.lock.Release(); err != nil {
				t.Fatal(err)
			}
			_, err = Open(ctx, s, hclog.NewNullLogger(), Options{Getenv: func(string) string { return "" }})
			if !errors.Is(err, store.ErrSchemaTooNew) {
				t.Fatalf("Open on a newer schema = %v, want ErrSchemaTooNew", err)
			}
		})
	}
}

func TestOpenRefusesBadBootstrapToken(t *testing.T) {
	t.Parallel()
	s, _ := Resolve()
	s.DataDir = t.TempDir()
	_, err := Open(context.Background(), s, hclog.NewNullLogger(), Options{Getenv: func(k string) string {
		if k == "NEXUS_BOOTSTRAP_TOKEN" {
			return "not-a-token"
		}
		return ""
	}})
	if err == nil || !strings.Contains(err.Error(), "NEXUS_BOOTSTRAP_TOKEN") {
		t.Fatalf("Open = %v, want a message naming NEXUS_BOOTSTRAP_TOKEN", err)
	}
}

func TestReadyWhenStoreAnswers(t *testing.T) {
	t.Parallel()
	srv, _ := openServer(t, store.SQLite, Options{})
	// Until the plugins had their first attempt the server is not ready (docs/operations.md#health).
	if r := srv.notReady(context.Background()); len(r) != 1 || r[0] != "plugins: starting" {
		t.Fatalf("before the plugins start: reasons %v", r)
	}
	if err := srv.StartPlugins(context.Background()); err != nil {
		t.Fatal(err)
	}
	// Until the engine registered the instance, its heartbeat is not current
	// (docs/operations.md#several-instances).
	if r := srv.notReady(context.Background()); len(r) != 1 || r[0] != liveness.ReasonNotRegistered {
		t.Fatalf("before the engine starts: reasons %v", r)
	}
	if err := srv.engine.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer srv.engine.Stop()
	if r := srv.notReady(context.Background()); len(r) != 0 {
		t.Fatalf("fresh server not ready: %v", r)
	}
	srv.Store().Close()
	if r := srv.notReady(context.Background()); len(r) != 1 || !strings.HasPrefix(r[0], "store: ") {
		t.Fatalf("closed store: reasons %v", r)
	}
}

// TestSQLiteServesOneServer: a second Open of a SQLite database a server holds is
// ErrDatabaseInUse and leaves the second data directory unmade; once the first closes, the
// database opens again. PostgreSQL takes several.
func TestSQLiteServesOneServer(t *testing.T) {
	t.Parallel()
	for _, d := range storetest.Dialects() {
		t.Run(string(d), func(t *testing.T) {
			srv, s := openServer(t, d, Options{})
			second := s
			second.DataDir = filepath.Join(t.TempDir(), "second")
			second.DatabaseURL = s.Database()
			opts := Options{Getenv: func(string) string { return "" }}
			other, err := Open(context.Background(), second, hclog.NewNullLogger(), opts)
			if d == store.Postgres {
				if err != nil {
					t.Fatalf("a second instance on PostgreSQL: %v", err)
				}
				_ = other.Close()
				return
			}
			if !errors.Is(err, store.ErrDatabaseInUse) {
				t.Fatalf("a second server on the SQLite database: %v, want ErrDatabaseInUse", err)
			}
			if _, err := os.Stat(second.DataDir); !os.IsNotExist(err) {
				t.Fatalf("the refused server made its data directory: %v", err)
			}
			if err := srv.Close(); err != nil {
				t.Fatal(err)
			}
			again, err := Open(context.Background(), second, hclog.NewNullLogger(), opts)
			if err != nil {
				t.Fatalf("after the first closed: %v", err)
			}
			_ = again.Close()
		})
	}
}
