package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/nexuskernel/nexus/plugins"
	mcpbridge "github.com/nexuskernel/nexus/providers/mcp-bridge"
	"github.com/nexuskernel/nexus/sdk/plugin"
)

var hclBlock = regexp.MustCompile("(?s)```hcl\n(.*?)```")

// TestDocumentedConfigurationsLoad reads every settings block that names nexus-mcp-bridge, in
// examples/ and docs/, through the real catalog reader and the bridge's configuration check: a
// documented configuration that stops loading fails here.
func TestDocumentedConfigurationsLoad(t *testing.T) {
	var sources []string
	examples, _ := filepath.Glob("../../examples/*.hcl")
	for _, f := range examples {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(b), "nexus-mcp-bridge") {
			sources = append(sources, string(b))
		}
	}
	doc, err := os.ReadFile("../../docs/plugins.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range hclBlock.FindAllStringSubmatch(string(doc), -1) {
		if strings.Contains(m[1], "nexus-mcp-bridge") {
			sources = append(sources, m[1])
		}
	}
	if len(sources) < 2 {
		t.Fatalf("found %d configurations, want the example and the documented one", len(sources))
	}
	for i, src := range sources {
		path := filepath.Join(t.TempDir(), "nexus.hcl")
		if err := os.WriteFile(path, []byte(src), 0o600); err != nil {
			t.Fatal(err)
		}
		cat, err := plugins.ParseCatalogFile(path)
		if err != nil {
			t.Fatalf("configuration %d: %v", i, err)
		}
		n := 0
		for _, e := range cat.Entries {
			if filepath.Base(e.Command) != "nexus-mcp-bridge" {
				continue
			}
			n++
			if _, err := mcpbridge.ParseConfig(plugin.Config{Raw: e.Config}); err != nil {
				t.Errorf("configuration %d, plugin %s: %v", i, e.Name, err)
			}
		}
		if n == 0 {
			t.Errorf("configuration %d has no nexus-mcp-bridge plugin", i)
		}
	}
}
