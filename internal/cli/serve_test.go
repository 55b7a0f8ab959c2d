package cli

import (
	"bytes"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
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
