package plugin_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"

	"github.com/nexuskernel/nexus/sdk/plugin"
)

// headerRE reads the version line every protocol file starts with.
var headerRE = regexp.MustCompile(`(?m)\A// Nexus plugin protocol (\d+)\.(\d+)[.:]`)

// TestProtocolHeader: the version written in each .proto header is the one the Go constants
// negotiate and report. Adding an RPC or a field bumps both, or this fails.
func TestProtocolHeader(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob(filepath.Join("..", "..", "contracts", "proto", "nexus", "plugin", "v1", "*.proto"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != 3 {
		t.Fatalf("found %d protocol files, want plugin, memory and toolprovider: %v", len(files), files)
	}
	for _, f := range files {
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		m := headerRE.FindSubmatch(src)
		if m == nil {
			t.Errorf("%s: no \"// Nexus plugin protocol X.Y\" header on its first line", filepath.Base(f))
			continue
		}
		major, _ := strconv.Atoi(string(m[1]))
		minor, _ := strconv.Atoi(string(m[2]))
		if major != plugin.ProtocolMajor || minor != plugin.ProtocolMinor {
			t.Errorf("%s says protocol %d.%d; sdk/plugin says %d.%d", filepath.Base(f), major, minor, plugin.ProtocolMajor, plugin.ProtocolMinor)
		}
	}
}

func TestHandshake(t *testing.T) {
	t.Parallel()
	h := plugin.Handshake
	if h.MagicCookieKey != "NEXUS_PLUGIN" || h.MagicCookieValue != "c5b2f0a19e7d4c38b6e14a2d9f07c3e8" || h.ProtocolVersion != 1 {
		t.Errorf("handshake %+v", h)
	}
	if !plugin.KindMemory.Valid() || !plugin.KindToolProvider.Valid() || plugin.Kind("runner").Valid() {
		t.Error("kind validity")
	}
}
