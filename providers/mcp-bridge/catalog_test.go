package mcpbridge

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/nexuskernel/nexus/sdk/announce"
	"github.com/nexuskernel/nexus/sdk/plugin"
	"github.com/nexuskernel/nexus/sdk/toolprovider/toolprovidertest"
)

func TestAnnouncementBoundsAndEntries(t *testing.T) {
	srv := mcp.NewServer(&mcp.Implementation{Name: "many", Version: "1"}, nil)
	noop := func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{}, nil
	}
	for i := 0; i < announce.MaxTools+8; i++ {
		srv.AddTool(&mcp.Tool{Name: fmt.Sprintf("t%03d", i), InputSchema: map[string]any{"type": "object"}}, noop)
	}
	srv.AddTool(&mcp.Tool{Name: "long_desc", Description: strings.Repeat("é", announce.MaxDescriptionBytes), InputSchema: map[string]any{"type": "object"}}, noop)
	srv.AddTool(&mcp.Tool{Name: "big_schema", Title: "Big", InputSchema: map[string]any{"type": "object", "description": strings.Repeat("x", announce.MaxInputSchemaBytes)}}, noop)
	b := newBridge(t, `{"servers":[{"name":"m","command":"x"}]}`, Options{Dial: inMemory(func(string) *mcp.Server { return srv })})
	toolprovidertest.CheckAnnouncement(t, b)
	a, _ := b.Announce(context.Background())
	if len(a.Tools) != announce.MaxTools {
		t.Fatalf("%d tools announced", len(a.Tools))
	}
	if n := strings.Count(string(a.Environment), `"reason":"announcement_bound"`); n != 10 {
		t.Errorf("%d withheld announcement_bound", n)
	}
	bs := toolNamed(a, "m_big_schema")
	if bs == nil || bs.InputSchema != nil || *bs.Description != "Big" {
		t.Errorf("big schema entry %+v", bs)
	}
	ld := toolNamed(a, "m_long_desc")
	if ld == nil || len(*ld.Description) > announce.MaxDescriptionBytes || len(*ld.Description) < announce.MaxDescriptionBytes-1 {
		t.Errorf("long description kept %d bytes", len(*ld.Description))
	}
}

func TestMatchPattern(t *testing.T) {
	for _, c := range []struct {
		p, n string
		want bool
	}{
		{"search_*", "search_tickets", true}, {"search_*", "research_x", false}, {"*", "", true},
		{"get_?", "get_a", true}, {"get_?", "get_ab", false}, {"a*b*c", "aXbYc", true}, {"a*b*c", "aXbY", false},
		{"toggle-*", "toggle-simulated-logging", true}, {"é?", "éa", true},
	} {
		if got := matchPattern(c.p, c.n); got != c.want {
			t.Errorf("matchPattern(%q, %q) = %v", c.p, c.n, got)
		}
	}
}

// A server listing 10,000 tools takes its fair share of the announcement and no more: every tool
// of the servers beside it is announced, and only its own excess is withheld.
func TestAnnouncementSharesTheBoundAmongServers(t *testing.T) {
	cfg, err := ParseConfig(plugin.Config{PluginName: "mcp", Raw: json.RawMessage(
		`{"servers":[{"name":"aaa","command":"x"},{"name":"big","command":"x"},{"name":"zzz","command":"x"}]}`)})
	if err != nil {
		t.Fatal(err)
	}
	list := func(n int, format string) *serverList {
		l := &serverList{}
		for i := 0; i < n; i++ {
			l.Tools = append(l.Tools, &mcp.Tool{Name: fmt.Sprintf(format, i), InputSchema: map[string]any{"type": "object"}})
		}
		return l
	}
	got := assemble(cfg, map[string]*serverList{"aaa": list(5, "s%d"), "big": list(10_000, "t%05d"), "zzz": list(5, "s%d")}, nil)
	a := got.announcement
	if len(a.Tools) != announce.MaxTools {
		t.Fatalf("%d tools announced, want the bound %d", len(a.Tools), announce.MaxTools)
	}
	for _, srv := range []string{"aaa", "zzz"} {
		for i := 0; i < 5; i++ {
			if toolNamed(a, fmt.Sprintf("%s_s%d", srv, i)) == nil {
				t.Errorf("%s_s%d was withheld for another server's tools", srv, i)
			}
		}
	}
	for _, w := range got.withheld {
		if w.Server != "big" || w.Reason != withheldBound {
			t.Errorf("withheld %+v", w)
		}
	}
	if n := len(got.withheld); n != 10_000-(announce.MaxTools-10) {
		t.Errorf("%d withheld, want %d", n, 10_000-(announce.MaxTools-10))
	}
}

// fairShares gives a small demand all it asks and shares the rest, the largest demand last.
func TestFairShares(t *testing.T) {
	got := fairShares(map[string]int{"a": 3, "b": 10_000, "c": 200, "d": 400}, 512)
	want := map[string]int{"a": 3, "b": 170, "c": 169, "d": 170}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("shares %v, want %v", got, want)
	}
}

// A description loses its control and bidirectional controls (line ends and tabs stay), and a
// tool announced without its input schema is listed with the withheld tools.
func TestDescriptionsCleanedAndDroppedSchemasListed(t *testing.T) {
	srv := mcp.NewServer(&mcp.Implementation{Name: "d", Version: "1"}, nil)
	noop := func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{}, nil
	}
	srv.AddTool(&mcp.Tool{Name: "spoof", Description: "Reads\u202e fdp.exe\x1b[31m\nsafely\u2066.\tDone 👨\u200d👩\u200d👧", InputSchema: map[string]any{"type": "object"}}, noop)
	srv.AddTool(&mcp.Tool{Name: "schemaless", Description: "array schema", InputSchema: map[string]any{"type": "object", "description": strings.Repeat("x", announce.MaxInputSchemaBytes)}}, noop)
	b := newBridge(t, `{"servers":[{"name":"d","command":"x"}]}`, Options{Dial: inMemory(func(string) *mcp.Server { return srv })})
	a, _ := b.Announce(context.Background())
	if d := toolNamed(a, "d_spoof"); d == nil || *d.Description != "Reads fdp.exe[31m\nsafely.\tDone 👨\u200d👩\u200d👧" {
		t.Errorf("description %q", *d.Description)
	}
	if s := toolNamed(a, "d_schemaless"); s == nil || s.InputSchema != nil {
		t.Fatalf("schemaless %+v", s)
	}
	if !strings.Contains(string(a.Environment), `{"server":"d","tool":"schemaless","reason":"input_schema_dropped"}`) {
		t.Errorf("the dropped schema is not listed: %s", a.Environment)
	}
}
