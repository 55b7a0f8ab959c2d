package cli

import (
	"bytes"
	"net"
	"os"
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

// TestHangupLogsItsReloadOnce: a SIGHUP reloads the plugin catalog and the log says so once.
func TestHangupLogsItsReloadOnce(t *testing.T) {
	t.Parallel()
	addr := freeAddr(t)
	cmd := nexusCmd(t, "serve", "--listen", addr, "--data-dir", filepath.Join(t.TempDir(), "d"))
	var stderr syncBuffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	defer func() {
		_ = cmd.Process.Kill()
		<-exited
	}()
	waitHealthy(t, addr, exited)
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
