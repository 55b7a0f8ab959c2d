package server

import (
	"os"
	"strings"
	"testing"

	"github.com/nexuskernel/nexus/core/store"
)

// TestAPIDocumentListsEveryRoute keeps docs/api.md complete: every route the wired server serves
// is named there as `METHOD PATH`, the form of its heading.
func TestAPIDocumentListsEveryRoute(t *testing.T) {
	t.Parallel()
	doc, err := os.ReadFile("../../docs/api.md")
	if err != nil {
		t.Fatal(err)
	}
	srv, _ := openServer(t, store.SQLite, Options{})
	routes := srv.api.Routes()
	if len(routes) < 70 {
		t.Fatalf("the server serves %d routes; the test expects the whole API", len(routes))
	}
	for _, r := range routes {
		if !strings.Contains(string(doc), "### `"+r+"`") {
			t.Errorf("docs/api.md has no heading for %s", r)
		}
	}
}
