package mcpbridge

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/nexuskernel/nexus/sdk/announce"
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
