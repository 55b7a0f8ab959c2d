package kernel_test

import (
	"sort"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/nexuskernel/nexus/core/kernel"
	"github.com/nexuskernel/nexus/core/registry"
)

// TestFullDispatchTable: the dispatch table the server runs has a handler for exactly the
// registry's canonical names, both ways, so no live tool fails tool_not_served and no handler
// serves a name the catalog does not publish.
func TestFullDispatchTable(t *testing.T) {
	t.Parallel()
	got := kernel.Full(kernel.Services{}).Canonicals()
	sort.Strings(got)
	var want []string
	for _, e := range registry.New().Entries() {
		want = append(want, e.Canonical)
	}
	sort.Strings(want)
	if len(want) != 20 {
		t.Fatalf("the registry lists %d kernel tools, want twenty", len(want))
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("dispatch table (-registry +handlers):\n%s", diff)
	}
}
