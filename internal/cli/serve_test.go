package cli

import (
	"bytes"
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// TestServeOnATakenPortLeavesNothing: the port is bound before the store is opened, migrated or
// bootstrapped, so a server that cannot listen leaves its data directory as it found it.
func TestServeOnATakenPortLeavesNothing(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	for _, existing := range []bool{false, true} {
		dataDir := filepath.Join(t.TempDir(), "nexus-data")
		if existing {
			if err := os.Mkdir(dataDir, 0o700); err != nil {
				t.Fatal(err)
			}
		}
		_, errs, code := inProcess(t, nil, "serve", "--listen", ln.Addr().String(), "--data-dir", dataDir)
		if code == 0 || !strings.Contains(errs, "address already in use") {
			t.Fatalf("serve on a taken port: exit %d, stderr %s", code, errs)
		}
		entries, err := os.ReadDir(dataDir)
		switch {
		case !existing && !os.IsNotExist(err):
			t.Fatalf("the data directory was made: %v %v", entries, err)
		case existing && (err != nil || len(entries) != 0):
			t.Fatalf("the data directory holds %v (%v)", entries, err)
		}
	}
}

// syncBuffer is a buffer a subprocess writes and the test reads.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// servedProcess is the test binary run as `nexus serve`, its standard error kept.
type servedProcess struct {
	cmd    *exec.Cmd
	stderr *syncBuffer
	// exited carries Wait's answer once; done is closed after it.
	exited chan error
	done   chan struct{}
}

// startServe starts the test binary as `nexus args…`; it is killed when the test ends.
func startServe(t *testing.T, args ...string) *servedProcess {
	t.Helper()
	p := &servedProcess{cmd: nexusCmd(t, args...), stderr: &syncBuffer{}, exited: make(chan error, 1), done: make(chan struct{})}
	p.cmd.Stderr = p.stderr
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		p.exited <- p.cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(func() {
		_ = p.cmd.Process.Kill()
		<-p.done
	})
	return p
}

// TestHangupLogsItsReloadOnce: a SIGHUP reloads the plugin catalog and the log says so once.
func TestHangupLogsItsReloadOnce(t *testing.T) {
	t.Parallel()
	addr := freeAddr(t)
	p := startServe(t, "serve", "--listen", addr, "--data-dir", filepath.Join(t.TempDir(), "d"))
	cmd, stderr := p.cmd, p.stderr
	waitHealthy(t, addr, p.exited)
	if err := cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	reload := regexp.MustCompile(`nexus[\w.]*: reload`)
	for !reload.MatchString(stderr.String()) && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	time.Sleep(300 * time.Millisecond) // room for a second line, were there one
	var lines []string
	for _, l := range strings.Split(stderr.String(), "\n") {
		if reload.MatchString(l) {
			lines = append(lines, l)
		}
	}
	if len(lines) != 1 {
		t.Fatalf("SIGHUP logged %d reload lines:\n%s", len(lines), strings.Join(lines, "\n"))
	}
}

// TestSecondSQLiteServeExits: while one `nexus serve` serves a SQLite database, a second serve on
// it exits non-zero at start, naming the holder, whether it names the same data directory or
// another one whose --database-url is the same file, and writes nothing (no data directory of
// its own, no instance registered); `nexus migrate` refuses; `nexus token mint` mints and says
// it did so beside the server; the first keeps serving. The lock goes with the process: after a
// SIGKILL, migrate runs.
func TestSecondSQLiteServeExits(t *testing.T) {
	t.Parallel()
	dataDir := filepath.Join(t.TempDir(), "nexus-data")
	addr := freeAddr(t)
	first := nexusCmd(t, "serve", "--listen", addr, "--data-dir", dataDir)
	if err := first.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- first.Wait() }()
	defer func() {
		_ = first.Process.Kill()
		<-exited
	}()
	waitHealthy(t, addr, exited)
	db := filepath.Join(dataDir, "nexus.db")
	before, err := os.ReadDir(dataDir)
	if err != nil {
		t.Fatal(err)
	}

	otherDir := filepath.Join(t.TempDir(), "other-data")
	holder := "process " + strconv.Itoa(first.Process.Pid) + " holds its lock " + db + ".lock"
	for name, args := range map[string][]string{
		"same data directory":    {"--data-dir", dataDir},
		"same file from another": {"--data-dir", otherDir, "--database-url", db},
	} {
		second := nexusCmd(t, append([]string{"serve", "--listen", freeAddr(t)}, args...)...)
		var stderr bytes.Buffer
		second.Stderr = &stderr
		err := second.Run()
		var xe *exec.ExitError
		if !errors.As(err, &xe) || xe.ExitCode() != 1 ||
			!strings.Contains(stderr.String(), "nexus: the SQLite database "+db+" is in use: "+holder) ||
			!strings.Contains(stderr.String(), "One server serves a SQLite database: stop the other first, or give this one its own --data-dir") {
			t.Fatalf("%s: second serve: %v\n%s", name, err, stderr.String())
		}
	}
	if _, err := os.Stat(otherDir); !os.IsNotExist(err) {
		t.Fatalf("the refused serve made its data directory: %v", err)
	}
	after, err := os.ReadDir(dataDir)
	if err != nil || len(after) != len(before) {
		t.Fatalf("the data directory changed: %v then %v (%v)", before, after, err)
	}

	_, errs, code := inProcess(t, nil, "migrate", "--data-dir", dataDir)
	if code != 1 || !strings.Contains(errs, holder) || !strings.Contains(errs, "The server migrates at its start; stop it to migrate by hand") {
		t.Fatalf("migrate beside the server: exit %d: %s", code, errs)
	}
	out, errs, code := inProcess(t, nil, "token", "mint", "--user", "admin", "--data-dir", dataDir)
	if code != 0 || !strings.HasPrefix(out, "nxm_") || !strings.Contains(errs, holder) ||
		!strings.Contains(errs, "minting anyway: one short write, which the server's database takes in turn") {
		t.Fatalf("token mint beside the server: exit %d, out %q: %s", code, out, errs)
	}
	// The first serves on, the minted token included, and only it registered an instance.
	token := strings.TrimSpace(out)
	out, errs, code = inProcess(t, nil, "instances", "--server", "http://"+addr, "--token", token)
	if code != 0 || strings.Count(out, "inst_") != 1 {
		t.Fatalf("instances after the refusals: exit %d: %s\n%s", code, errs, out)
	}

	if err := first.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	<-exited
	exited <- nil
	out, errs, code = inProcess(t, nil, "migrate", "--data-dir", dataDir)
	if code != 0 || !strings.Contains(out, "nothing to apply") {
		t.Fatalf("migrate after the server died: exit %d: %s\n%s", code, errs, out)
	}
}
