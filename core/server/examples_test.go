package server

import (
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
	if err != nil || len(files) < 3 {
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
			if l.Models == nil || len(l.Models.Models) == 0 {
				t.Fatal("the example configures no model")
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
