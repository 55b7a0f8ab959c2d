package declare

import (
	"strings"
	"testing"

	"github.com/nexuskernel/nexus/sdk/client"
)

// TestRecutRoundTrip is the last row (docs/development.md#the-declaration-compiler): the SDK's
// compact entry for S01, compiled by the kernel, is an Agent whose description is the recut text
// with the set's spellings and whose description fact keeps the macros.
func TestRecutRoundTrip(t *testing.T) {
	t.Parallel()
	c := fixture(t)
	templates := client.Templates{"nexus.graph.delegate_task": c.resolve("delegate_task").entry.Template}
	entry, err := client.AliasSpec{Name: "Agent", Canonical: "nexus.graph.delegate_task",
		Recut: &client.Recut{Anchor: "call {{wait}} to block on one.", Replacement: "it reports back to you later."}}.Entry(templates)
	if err != nil {
		t.Fatal(err)
	}
	set, err := c.Compile([]byte("[" + string(entry) + "]"))
	if err != nil {
		t.Fatal(err)
	}
	e, _ := set.Lookup("Agent")
	fn, _ := e.Value.Get("function")
	got, _ := fn.GetString("description")
	if !strings.HasSuffix(got, "Put several Agent calls in one message to run jobs in parallel; it reports back to you later.") {
		t.Fatalf("description %q", got)
	}
	fact, _ := e.Value.GetString("description")
	if !strings.Contains(fact, "Put several {{delegate_task}} calls") {
		t.Fatalf("description fact %q", fact)
	}
}
