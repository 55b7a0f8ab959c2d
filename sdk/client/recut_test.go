package client

import (
	"encoding/json"
	"errors"
	"os"
	"strings"
	"testing"
)

// delegateTemplate is the fixture's delegate_task template of the declaration rules' worked
// examples (docs/api.md#runs).
const delegateTemplate = "Start a background subagent for one job. Put several {{delegate_task}} calls in one message to run jobs in parallel; call {{wait}} to block on one."

func anchorMoved(t *testing.T, err error) *AnchorMoved {
	t.Helper()
	var m *AnchorMoved
	if !errors.As(err, &m) {
		t.Fatalf("err = %v, want *AnchorMoved", err)
	}
	return m
}

// TestRecutExamples runs the rows S01 to S06 (docs/api.md#runs).
func TestRecutExamples(t *testing.T) {
	t.Parallel()
	// S01
	got, err := ApplyRecut(delegateTemplate, Recut{Anchor: "call {{wait}} to block on one.", Replacement: "it reports back to you later."})
	if want := "Start a background subagent for one job. Put several {{delegate_task}} calls in one message to run jobs in parallel; it reports back to you later."; err != nil || got != want {
		t.Fatalf("S01: %q %v", got, err)
	}
	// S02
	_, err = ApplyRecut(delegateTemplate, Recut{Anchor: "call {{ask}}"})
	if m := anchorMoved(t, err); m.Reason != AnchorMissing || m.Occurrences != 0 || m.AnchorHead != "call {{ask}}" {
		t.Fatalf("S02: %+v", m)
	}
	// S03
	_, err = ApplyRecut(delegateTemplate, Recut{Anchor: "o"})
	if m := anchorMoved(t, err); m.Reason != AnchorNotUnique || m.Occurrences < 2 {
		t.Fatalf("S03: %+v", m)
	}
	// S04
	if _, err = ApplyRecut(delegateTemplate, Recut{Anchor: ""}); !errors.Is(err, ErrInvalidAliasSpec) {
		t.Fatalf("S04: %v", err)
	}
	// S05
	got, err = ApplyRecut(delegateTemplate, Recut{Anchor: "call {{wait}} to block on one.", Replacement: `$1 and \0`})
	if err != nil || !strings.HasSuffix(got, `in parallel; $1 and \0`) {
		t.Fatalf("S05: %q %v", got, err)
	}
	// S06
	spec := AliasSpec{Name: "Agent", Canonical: "nexus.graph.delegate_task", Recut: &Recut{Anchor: "x", Replacement: "y"}}
	_, err = spec.Entry(Templates{})
	if m := anchorMoved(t, err); m.Reason != TemplateMissing || m.Alias != "Agent" || m.Canonical != "nexus.graph.delegate_task" {
		t.Fatalf("S06: %+v", m)
	}
}

// TestApplyRecutUnits covers the unit list beyond the examples
// (docs/agent-tools.md#the-approval-gate).
func TestApplyRecutUnits(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		template, anchor, replacement string
		want                          string
		reason                        AnchorMovedReason
		occurrences                   int
	}{
		{"one two three", "two", "2", "one 2 three", "", 0},
		{"one two three", "two ", "", "one three", "", 0},
		{"two and two", "two", "x", "", AnchorNotUnique, 2},
		{"aaa", "aa", "b", "", AnchorNotUnique, 2},
		{"abc", "abcd", "x", "", AnchorMissing, 0},
		{"a\nb", "a\nb", "c", "c", "", 0},
	} {
		got, err := ApplyRecut(tc.template, Recut{Anchor: tc.anchor, Replacement: tc.replacement})
		if tc.reason == "" {
			if err != nil || got != tc.want {
				t.Errorf("%q in %q: %q %v", tc.anchor, tc.template, got, err)
			}
			continue
		}
		if m := anchorMoved(t, err); m.Reason != tc.reason || m.Occurrences != tc.occurrences {
			t.Errorf("%q in %q: %+v", tc.anchor, tc.template, m)
		}
	}
	long := strings.Repeat("x", 100) + "\nsecond line"
	_, err := ApplyRecut("nothing", Recut{Anchor: "  " + long})
	if m := anchorMoved(t, err); m.AnchorHead != strings.Repeat("x", 80) {
		t.Errorf("anchor head %q", m.AnchorHead)
	}
}

// TestAnchorMovedTexts are the error texts (docs/agent-tools.md#the-approval-gate).
func TestAnchorMovedTexts(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		err  *AnchorMoved
		want string
	}{
		{&AnchorMoved{Alias: "Agent", Canonical: "nexus.graph.delegate_task", Reason: TemplateMissing},
			`sdk: alias "Agent": no template served for nexus.graph.delegate_task; list the kernel catalog first`},
		{&AnchorMoved{Alias: "Agent", Canonical: "nexus.graph.delegate_task", Reason: AnchorMissing, AnchorHead: "false: this turn waits"},
			`sdk: alias "Agent": recut anchor not found in the template of nexus.graph.delegate_task; re-cut the entry (anchor begins "false: this turn waits")`},
		{&AnchorMoved{Alias: "Agent", Canonical: "nexus.graph.delegate_task", Reason: AnchorNotUnique, Occurrences: 2, AnchorHead: "the"},
			`sdk: alias "Agent": recut anchor occurs 2 times in the template of nexus.graph.delegate_task; lengthen the anchor (anchor begins "the")`},
	} {
		if got := tc.err.Error(); got != tc.want {
			t.Errorf("got  %s\nwant %s", got, tc.want)
		}
	}
}

// TestAliasSpecEntry: the compact entry's keys and order, the recut applied with its macros
// left for the kernel, and the AliasSpec errors.
func TestAliasSpecEntry(t *testing.T) {
	t.Parallel()
	deferred := true
	templates := Templates{"nexus.graph.delegate_task": delegateTemplate}
	spec := AliasSpec{
		Name: "Agent", Canonical: "nexus.graph.delegate_task",
		Params:       map[string]AliasParam{"run_in_background": {MapsTo: "wait", Invert: true, Description: "true: background <b>."}, "later": {MapsTo: "model"}},
		Omit:         []string{"lifetime"},
		Recut:        &Recut{Anchor: "call {{wait}} to block on one.", Replacement: "it reports back to you later."},
		DeferLoading: &deferred,
	}
	raw, err := spec.Entry(templates)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"type":"function","function":{"name":"Agent"},"canonical":"nexus.graph.delegate_task",` +
		`"params":{"later":{"maps_to":"model"},"run_in_background":{"maps_to":"wait","invert":true,"description":"true: background <b>."}},` +
		`"omit":["lifetime"],"description":"Start a background subagent for one job. Put several {{delegate_task}} calls in one message to run jobs in parallel; it reports back to you later.",` +
		`"defer_loading":true}`
	if string(raw) != want {
		t.Fatalf("entry\n%s\nwant\n%s", raw, want)
	}
	if strings.Contains(string(raw), "recut") {
		t.Fatal("the entry carries the recut")
	}
	plain, err := AliasSpec{Name: "Ask", Canonical: "nexus.human.ask"}.Entry(nil)
	if err != nil || string(plain) != `{"type":"function","function":{"name":"Ask"},"canonical":"nexus.human.ask"}` {
		t.Fatalf("plain alias %s %v", plain, err)
	}
	_, err = AliasSpec{Name: "Agent", Canonical: "nexus.graph.delegate_task", Recut: &Recut{Anchor: "o"}}.Entry(templates)
	if m := anchorMoved(t, err); m.Alias != "Agent" || m.Reason != AnchorNotUnique {
		t.Fatalf("%+v", m)
	}
	for _, bad := range []AliasSpec{
		{Canonical: "nexus.human.ask"},
		{Name: "A"},
		{Name: "A", Canonical: "nexus.human.ask", Description: "d", Recut: &Recut{Anchor: "x"}},
		{Name: "A", Canonical: "nexus.human.ask", Params: map[string]AliasParam{"p": {}}},
		{Name: "A", Canonical: "nexus.graph.delegate_task", Recut: &Recut{}},
	} {
		if _, err := bad.Entry(templates); !errors.Is(err, ErrInvalidAliasSpec) {
			t.Errorf("%+v: %v", bad, err)
		}
	}
}

// TestRecutAgainstContractPack applies a sample recut to the delegate_task template the contract
// pack pins, so a kernel text change that moves the anchor fails here
// (docs/agent-tools.md#the-approval-gate).
func TestRecutAgainstContractPack(t *testing.T) {
	t.Parallel()
	raw, err := os.ReadFile("../../contracts/nexus/v1/tools.json")
	if err != nil {
		t.Fatal(err)
	}
	var pack struct {
		Tools []CatalogTool `json:"tools"`
	}
	if err := json.Unmarshal(raw, &pack); err != nil {
		t.Fatal(err)
	}
	templates := TemplatesFrom(pack.Tools)
	spec := AliasSpec{Name: "Agent", Canonical: "nexus.graph.delegate_task",
		Recut: &Recut{Anchor: "Put several {{delegate_task}} calls in one message", Replacement: "Put several {{delegate_task}} calls in one reply"}}
	entry, err := spec.Entry(templates)
	if err != nil {
		t.Fatalf("the sample recut no longer fits the pinned template: %v", err)
	}
	if !strings.Contains(string(entry), "calls in one reply") {
		t.Fatalf("entry %s", entry)
	}
}
