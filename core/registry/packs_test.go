package registry

import (
	"encoding/json"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// shippedPacksDir holds the adaptation packs Nexus ships, relative to this package.
var shippedPacksDir = filepath.Join("..", "..", "contracts", "nexus", "v1", "packs")

// TestContractPackPinsEveryAnchor: the contract pack carries exactly the templates the shipped
// adaptation packs anchor a recut on (docs/agent-tools.md#adaptation-packs). A pack anchoring on
// another template would drift unseen, since no test would pin the text it edits; a template
// pinned for no pack would make a re-cut of it regenerate the contract pack for nothing.
func TestContractPackPinsEveryAnchor(t *testing.T) {
	t.Parallel()
	files, err := os.ReadDir(shippedPacksDir)
	if err != nil {
		t.Fatal(err)
	}
	anchored := map[string]bool{}
	packs := 0
	for _, f := range files {
		if !strings.HasSuffix(f.Name(), ".json") {
			continue
		}
		raw, err := os.ReadFile(filepath.Join(shippedPacksDir, f.Name()))
		if err != nil {
			t.Fatal(err)
		}
		var pack struct {
			Aliases []struct {
				Canonical string           `json:"canonical"`
				Recut     *json.RawMessage `json:"recut"`
			} `json:"aliases"`
		}
		if err := json.Unmarshal(raw, &pack); err != nil {
			t.Fatalf("%s: %v", f.Name(), err)
		}
		packs++
		for _, a := range pack.Aliases {
			if a.Recut != nil {
				anchored[a.Canonical] = true
			}
		}
	}
	if packs == 0 {
		t.Fatal("no shipped pack found")
	}
	var got []string
	for c := range anchored {
		got = append(got, c)
	}
	sort.Strings(got)
	if strings.Join(got, ",") != ContractPackCanonical {
		t.Fatalf("the shipped packs anchor on %v; the contract pack pins %s", got, ContractPackCanonical)
	}
	r := New()
	for _, c := range got {
		if _, ok := r.byCanonical[c]; !ok {
			t.Fatalf("a pack anchors on %s, which the registry does not serve", c)
		}
	}
}
