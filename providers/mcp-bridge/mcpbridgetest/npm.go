package mcpbridgetest

import (
	"bytes"
	"context"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The public MCP servers the end-to-end suite runs, at the versions npm/package.json pins
// (npm/package-lock.json pins their dependencies). The suite asserts their exact tool names and
// texts, so a version change is a deliberate edit of both files.
const (
	EverythingPackage = "@modelcontextprotocol/server-everything"
	FilesystemPackage = "@modelcontextprotocol/server-filesystem"
	MemoryPackage     = "@modelcontextprotocol/server-memory"
	PublicVersion     = "2026.8.31"
)

// installTimeout bounds npm ci: about 40 MB, seconds once npm has cached it.
const installTimeout = 5 * time.Minute

//go:embed npm/package.json npm/package-lock.json
var npmFiles embed.FS

// PublicServers are the installed servers: node and each package's entry point.
type PublicServers struct {
	Node, Everything, Filesystem, Memory string
}

// InstallPublicServers installs the pinned servers with npm ci into a cache directory keyed by
// the lock file's digest ($NEXUS_TEST_CACHE/mcp-npm/<sha256>, else under the user cache
// directory) and answers their paths. A file lock serialises concurrent test binaries; a marker
// written last makes later runs reuse the install. Without node and npm, or when the install
// fails, the test is skipped, unless NEXUS_TEST_REQUIRE_NPM=1 (CI), where it fails.
func InstallPublicServers(t testing.TB) PublicServers {
	t.Helper()
	require := os.Getenv("NEXUS_TEST_REQUIRE_NPM") == "1"
	give := func(format string, args ...any) {
		t.Helper()
		if require {
			t.Fatalf(format, args...)
		}
		t.Skipf(format, args...)
	}
	node, errNode := exec.LookPath("node")
	npm, errNpm := exec.LookPath("npm")
	if errNode != nil || errNpm != nil {
		give("mcp e2e: node and npm are needed to install the public MCP servers (%s, %s); install Node.js 18 or later with npm, e.g. apt-get install nodejs npm", EverythingPackage, FilesystemPackage)
	}
	out, err := exec.Command(node, "--version").Output()
	if err != nil {
		give("mcp e2e: node --version: %v", err)
	}
	ver := strings.TrimPrefix(strings.TrimSpace(string(out)), "v")
	if major, _ := strconv.Atoi(strings.SplitN(ver, ".", 2)[0]); major < 18 {
		give("mcp e2e: Node.js 18 or later is needed, found %s", ver)
	}
	pkg, _ := npmFiles.ReadFile("npm/package.json")
	lock, _ := npmFiles.ReadFile("npm/package-lock.json")
	sum := sha256.Sum256(append(append([]byte{}, pkg...), lock...))
	base := os.Getenv("NEXUS_TEST_CACHE")
	if base == "" {
		if base, err = os.UserCacheDir(); err != nil {
			base = os.TempDir()
		}
	}
	dir := filepath.Join(base, "mcp-npm", hex.EncodeToString(sum[:]))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		give("mcp e2e: %v", err)
	}
	lf, err := os.OpenFile(filepath.Join(dir, ".lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		give("mcp e2e: %v", err)
	}
	defer lf.Close()
	if err := syscall.Flock(int(lf.Fd()), syscall.LOCK_EX); err != nil {
		give("mcp e2e: lock: %v", err)
	}
	defer syscall.Flock(int(lf.Fd()), syscall.LOCK_UN)
	marker := filepath.Join(dir, ".installed")
	if _, err := os.Stat(marker); err != nil {
		for name, body := range map[string][]byte{"package.json": pkg, "package-lock.json": lock} {
			if err := os.WriteFile(filepath.Join(dir, name), body, 0o644); err != nil {
				give("mcp e2e: %v", err)
			}
		}
		ctx, cancel := context.WithTimeout(context.Background(), installTimeout)
		defer cancel()
		cmd := exec.CommandContext(ctx, npm, "ci", "--no-audit", "--no-fund", "--ignore-scripts")
		cmd.Dir = dir
		var logs bytes.Buffer
		cmd.Stdout, cmd.Stderr = &logs, &logs
		if err := cmd.Run(); err != nil {
			lines := strings.Split(strings.TrimSpace(logs.String()), "\n")
			give("mcp e2e: npm ci failed: %v\n%s", err, strings.Join(lines[max(0, len(lines)-20):], "\n"))
		}
		if err := os.WriteFile(marker, []byte(PublicVersion+"\n"), 0o644); err != nil {
			give("mcp e2e: %v", err)
		}
	}
	entry := func(pkg string) string {
		p := filepath.Join(dir, "node_modules", filepath.FromSlash(pkg), "dist", "index.js")
		if _, err := os.Stat(p); err != nil {
			give("mcp e2e: %s is not installed: %v", pkg, err)
		}
		return p
	}
	return PublicServers{Node: node, Everything: entry(EverythingPackage), Filesystem: entry(FilesystemPackage), Memory: entry(MemoryPackage)}
}
