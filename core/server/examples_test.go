package server

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/nexuskernel/nexus/core/model"
)

var envCall = regexp.MustCompile(`env\("([A-Za-z_][A-Za-z0-9_]*)"\)`)

// TestExamplesLoad loads every examples/*.hcl through the real configuration loader, with the
// variables its env("NAME") calls read set to dummy values, and builds its catalog with the real
// adapters: an example that stops loading fails here.
func TestExamplesLoad(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob("../../examples/*.hcl")
	if err != nil || len(files) < 4 {
		t.Fatalf("examples: %v %v", files, err)
	}
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) {
			t.Parallel()
			src, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			vars := map[string]string{}
			for _, m := range envCall.FindAllStringSubmatch(string(src), -1) {
				vars[m[1]] = "dummy-" + strings.ToLower(m[1])
			}
			l, err := FileLayerEnv(file, func(k string) string { return vars[k] })
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(string(src), "model_provider") {
				return // no models catalog: the built-in one serves (the README test starts it)
			}
			if l.Models == nil || len(l.Models.Models) == 0 {
				t.Fatal("the example declares a model provider but configures no model")
			}
			cat, err := model.NewCatalogWith(l.Models, modelAdapters(hclog.NewNullLogger(), Options{Now: time.Now, Version: "test"}))
			if err != nil {
				t.Fatal(err)
			}
			if _, ok := cat.Lookup(l.Models.DefaultModel); !ok {
				t.Errorf("default_model %q is not in the catalog", l.Models.DefaultModel)
			}
			for name := range vars {
				if _, err := FileLayerEnv(file, func(k string) string {
					if k == name {
						return ""
					}
					return vars[k]
				}); err == nil || !strings.Contains(err.Error(), name) {
					t.Errorf("without %s the example still loads: %v", name, err)
				}
			}
		})
	}
}

// hclBlock is one ```hcl fence of a Markdown file.
var hclBlock = regexp.MustCompile("(?s)```hcl\n(.*?)```")

// TestDocumentedProvidersLoad loads every hcl block of README.md and docs/providers.md that
// declares a model provider, as a settings file of its own: the configurations a reader copies
// from there must be ones the server accepts.
func TestDocumentedProvidersLoad(t *testing.T) {
	t.Parallel()
	n := 0
	for _, doc := range []string{"../../README.md", "../../docs/providers.md"} {
		src, err := os.ReadFile(doc)
		if err != nil {
			t.Fatal(err)
		}
		for i, m := range hclBlock.FindAllStringSubmatch(string(src), -1) {
			if !strings.Contains(m[1], "model_provider") {
				continue
			}
			n++
			block := m[1]
			t.Run(fmt.Sprintf("%s#%d", filepath.Base(doc), i+1), func(t *testing.T) {
				t.Parallel()
				file := filepath.Join(t.TempDir(), "nexus.hcl")
				if err := os.WriteFile(file, []byte(block), 0o600); err != nil {
					t.Fatal(err)
				}
				vars := map[string]string{}
				for _, m := range envCall.FindAllStringSubmatch(block, -1) {
					vars[m[1]] = "dummy-" + strings.ToLower(m[1])
				}
				l, err := FileLayerEnv(file, func(k string) string { return vars[k] })
				if err != nil {
					t.Fatalf("%v\n%s", err, block)
				}
				if l.Models == nil {
					t.Fatalf("the block configures no models:\n%s", block)
				}
				if _, err := model.NewCatalogWith(l.Models, modelAdapters(hclog.NewNullLogger(), Options{Now: time.Now, Version: "test"})); err != nil {
					t.Fatalf("%v\n%s", err, block)
				}
			})
		}
	}
	if n < 3 {
		t.Fatalf("found %d documented provider configurations; README.md alone shows three", n)
	}
}
