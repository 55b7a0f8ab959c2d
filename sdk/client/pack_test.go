package client

import (
	"encoding/json"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// contractTemplates are the templates the contract pack pins, as the kernel serves them.
func contractTemplates(t *testing.T) Templates {
	t.Helper()
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
	return TemplatesFrom(pack.Tools)
}

// claudeCode is the shipped pack the tests apply.
func claudeCode(t *testing.T) *Pack {
	t.Helper()
	p, err := ShippedPack("claude-code")
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestShippedPacks: the packs that ship, each named as its file, each parsing.
func TestShippedPacks(t *testing.T) {
	t.Parallel()
	if got := ShippedPacks(); strings.Join(got, ",") != "claude-code" {
		t.Fatalf("shipped packs %v", got)
	}
	for _, name := range ShippedPacks() {
		p, err := ShippedPack(name)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if p.Name != name || p.Description == "" {
			t.Errorf("%s: name %q, description %q", name, p.Name, p.Description)
		}
	}
	p := claudeCode(t)
	var names []string
	for _, a := range p.Aliases {
		names = append(names, a.Name+"="+a.Canonical)
	}
	if got := strings.Join(names, " "); got != "Agent=nexus.graph.delegate_task Skill=nexus.skill.load TaskOutput=nexus.graph.wait" {
		t.Fatalf("claude-code aliases %s", got)
	}
}

// TestShippedPacksFitTheContractPack renders every shipped pack against the templates the
// contract pack pins: a pack that anchors on a template the contract pack lacks fails with
// template_missing, and a kernel re-cut that moves an anchor (which regenerates the contract
// pack) fails here, in CI, instead of at a client's next declaration.
func TestShippedPacksFitTheContractPack(t *testing.T) {
	t.Parallel()
	templates := contractTemplates(t)
	for _, name := range ShippedPacks() {
		p, err := ShippedPack(name)
		if err != nil {
			t.Fatal(err)
		}
		entries, err := p.Entries(templates)
		if err != nil {
			t.Fatalf("%s no longer fits the pinned templates: %v", name, err)
		}
		if len(entries) != len(p.Aliases) {
			t.Fatalf("%s: %d entries for %d aliases", name, len(entries), len(p.Aliases))
		}
	}
	entries, err := claudeCode(t).Entries(templates)
	if err != nil {
		t.Fatal(err)
	}
	recut, err := ApplyRecut(templates["nexus.graph.delegate_task"], Recut{
		Anchor: "or set `wait: true` if your very next step does", Replacement: "or set `run_in_background: false` if your very next step does"})
	if err != nil {
		t.Fatal(err)
	}
	agent, _ := json.Marshal(recut)
	want := []string{
		`{"type":"function","function":{"name":"Agent"},"canonical":"nexus.graph.delegate_task","params":{"run_in_background":{"maps_to":"wait","invert":true,` +
			`"description":"true (the default): the helper works in the background and its report arrives later as a <task_result> message. false: your next round waits for the report, which becomes this call's result."}},` +
			`"description":` + strings.NewReplacer(`\u003c`, "<", `\u003e`, ">").Replace(string(agent)) + `}`,
		`{"type":"function","function":{"name":"Skill"},"canonical":"nexus.skill.load","params":{"skill":{"maps_to":"name"}}}`,
		`{"type":"function","function":{"name":"TaskOutput"},"canonical":"nexus.graph.wait","params":{"task_id":{"maps_to":"task"},"timeout":{"maps_to":"timeout_ms"}}}`,
	}
	var got []string
	for _, e := range entries {
		got = append(got, string(e))
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("claude-code entries (-want +got):\n%s", diff)
	}
	if !strings.Contains(recut, "Call {{wait}} when a step depends on the\nreport, or set `run_in_background: false` if your very next step does") {
		t.Fatalf("the recut text: %s", recut)
	}
}

// TestPackRecutMovedFailsLoudly: a kernel that re-cut the paragraph the Agent recut anchors on
// fails the whole pack with *AnchorMoved naming the alias, the template and the anchor; a
// template the catalog does not serve fails it with template_missing. No entry comes back.
func TestPackRecutMovedFailsLoudly(t *testing.T) {
	t.Parallel()
	p := claudeCode(t)
	pinned := contractTemplates(t)
	for _, tc := range []struct {
		name     string
		template func(string) (string, bool)
		reason   AnchorMovedReason
		text     string
	}{
		{"re-cut", func(s string) (string, bool) {
			return strings.Replace(s, "or set `wait: true` if your very next step does", "or set `wait` to true when your next step needs it", 1), true
		}, AnchorMissing,
			"adaptation pack \"claude-code\": sdk: alias \"Agent\": recut anchor not found in the template of nexus.graph.delegate_task; re-cut the entry (anchor begins \"or set `wait: true` if your very next step does\")"},
		{"repeated", func(s string) (string, bool) {
			return s + "\n\nAgain: or set `wait: true` if your very next step does.", true
		}, AnchorNotUnique,
			"adaptation pack \"claude-code\": sdk: alias \"Agent\": recut anchor occurs 2 times in the template of nexus.graph.delegate_task; lengthen the anchor (anchor begins \"or set `wait: true` if your very next step does\")"},
		{"not served", func(string) (string, bool) { return "", false }, TemplateMissing,
			`adaptation pack "claude-code": sdk: alias "Agent": no template served for nexus.graph.delegate_task; list the kernel catalog first`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			templates := Templates{}
			for k, v := range pinned {
				templates[k] = v
			}
			if s, ok := tc.template(pinned["nexus.graph.delegate_task"]); ok {
				if s == pinned["nexus.graph.delegate_task"] {
					t.Fatal("the edit changed nothing: the pinned template no longer holds the anchor")
				}
				templates["nexus.graph.delegate_task"] = s
			} else {
				delete(templates, "nexus.graph.delegate_task")
			}
			entries, err := p.Entries(templates)
			m := anchorMoved(t, err)
			if m.Reason != tc.reason || m.Alias != "Agent" || m.Canonical != "nexus.graph.delegate_task" || entries != nil {
				t.Fatalf("%+v, entries %s", m, entries)
			}
			if err.Error() != tc.text {
				t.Fatalf("error\n%s\nwant\n%s", err, tc.text)
			}
			if _, err := p.Apply(json.RawMessage(`[{"type":"function","name":"notes"}]`), templates); !errors.As(err, &m) {
				t.Fatalf("Apply: %v", err)
			}
		})
	}
}

// TestParsePackRefusals: every way a pack is wrong in itself is ErrInvalidPack, with what is
// wrong; an alias spec's own errors wrap ErrInvalidAliasSpec too.
func TestParsePackRefusals(t *testing.T) {
	t.Parallel()
	const agent = `{"name":"Agent","canonical":"nexus.graph.delegate_task"}`
	for _, tc := range []struct {
		name, raw, want string
		spec            bool
	}{
		{"not JSON", `{"name":`, "not one JSON value", false},
		{"trailing data", `{"name":"p","aliases":[` + agent + `]} {}`, "not one JSON value", false},
		{"null", `null`, "a pack is an object, not null", false},
		{"not an object", `[]`, "cannot unmarshal array", false},
		{"repeated key", `{"name":"p","name":"q","aliases":[` + agent + `]}`, "an object repeats a key", false},
		{"unknown key", `{"name":"p","version":1,"aliases":[` + agent + `]}`, `unknown field "version"`, false},
		{"unknown alias key", `{"name":"p","aliases":[{"name":"A","canonical":"nexus.human.ask","recut_text":"x"}]}`, `unknown field "recut_text"`, false},
		{"unknown recut key", `{"name":"p","aliases":[{"name":"A","canonical":"nexus.human.ask","recut":{"anchor":"a","with":"b"}}]}`, `unknown field "with"`, false},
		{"wrong type", `{"name":"p","aliases":[{"name":"A","canonical":"nexus.human.ask","omit":"multi"}]}`, "cannot unmarshal string", false},
		{"no name", `{"aliases":[` + agent + `]}`, `name "" is not lowercase letters`, false},
		{"bad name", `{"name":"Claude Code","aliases":[` + agent + `]}`, `name "Claude Code" is not lowercase letters`, false},
		{"long name", `{"name":"` + strings.Repeat("p", 64) + `","aliases":[` + agent + `]}`, "is not lowercase letters, digits and hyphens (at most 63)", false},
		{"no aliases", `{"name":"p"}`, `pack "p" has no aliases`, false},
		{"empty aliases", `{"name":"p","aliases":[]}`, `pack "p" has no aliases`, false},
		{"repeated alias", `{"name":"p","aliases":[` + agent + `,` + agent + `]}`, `pack "p" names alias "Agent" twice`, false},
		{"alias without canonical", `{"name":"p","aliases":[{"name":"A"}]}`, `pack "p", aliases[0]: sdk: invalid alias spec: an alias needs a name and a canonical`, true},
		{"description and recut", `{"name":"p","aliases":[{"name":"A","canonical":"nexus.human.ask","description":"d","recut":{"anchor":"a","replacement":"b"}}]}`, `alias "A" sets both a description and a recut`, true},
		{"empty anchor", `{"name":"p","aliases":[{"name":"A","canonical":"nexus.human.ask","recut":{"anchor":"","replacement":"b"}}]}`, `alias "A": the recut anchor is empty`, true},
		{"param to nothing", `{"name":"p","aliases":[{"name":"A","canonical":"nexus.human.ask","params":{"q":{"maps_to":"prompt"},"b":{}}}]}`, `alias "A": parameter "b" maps to nothing`, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			p, err := ParsePack([]byte(tc.raw))
			if !errors.Is(err, ErrInvalidPack) || p != nil {
				t.Fatalf("%v, %+v: want ErrInvalidPack", err, p)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("%q lacks %q", err, tc.want)
			}
			if errors.Is(err, ErrInvalidAliasSpec) != tc.spec {
				t.Fatalf("%v: ErrInvalidAliasSpec %v, want %v", err, !tc.spec, tc.spec)
			}
		})
	}
	p, err := ParsePack([]byte(`{"name":"p-2","aliases":[` + agent + `]}`))
	if err != nil || p.Name != "p-2" || len(p.Aliases) != 1 || p.Aliases[0].Name != "Agent" {
		t.Fatalf("%+v %v", p, err)
	}
}

// TestShippedPackUnknown: a name no shipped pack has is ErrUnknownPack, listing the shipped
// ones; a name outside the form (a path) never reaches the files.
func TestShippedPackUnknown(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"nope", "", "../tools", "claude-code.json", "Claude-Code"} {
		p, err := ShippedPack(name)
		if !errors.Is(err, ErrUnknownPack) || p != nil {
			t.Fatalf("%q: %v", name, err)
		}
		if want := `sdk: no such adaptation pack: "` + name + `" (shipped: claude-code)`; err.Error() != want {
			t.Fatalf("%q: %s, want %s", name, err, want)
		}
	}
}

// TestPackApply: the pack's entries join a declaration: entries of the aliases' names (flat or
// nested) are replaced, the others keep their order and bytes, an empty declaration in any
// spelling takes the entries alone, and a declaration that is not an array is an error.
func TestPackApply(t *testing.T) {
	t.Parallel()
	p := claudeCode(t)
	templates := contractTemplates(t)
	entries, err := p.Entries(templates)
	if err != nil {
		t.Fatal(err)
	}
	alone := "[" + string(entries[0]) + "," + string(entries[1]) + "," + string(entries[2]) + "]"
	for _, empty := range []string{"", "null", " [ ] ", "[]"} {
		got, err := p.Apply(json.RawMessage(empty), templates)
		if err != nil || string(got) != alone {
			t.Fatalf("%q: %s %v", empty, got, err)
		}
	}
	declaration := `[{"type":"function","name":"notes","description":"Keep a note <b>.","parameters":{"type":"object"}},` +
		`{"type":"function","function":{"name":"Agent"},"canonical":"nexus.graph.delegate_task"},` +
		`{"type":"function","name":"Skill","description":"a tool of that name"},` +
		`{"type":"function","function":{"name":"wait","description":"x","parameters":{}}}]`
	got, err := p.Apply(json.RawMessage(declaration), templates)
	if err != nil {
		t.Fatal(err)
	}
	want := `[{"type":"function","name":"notes","description":"Keep a note <b>.","parameters":{"type":"object"}},` +
		`{"type":"function","function":{"name":"wait","description":"x","parameters":{}}},` + strings.Trim(alone, "[]") + `]`
	if string(got) != want {
		t.Fatalf("applied\n%s\nwant\n%s", got, want)
	}
	again, err := p.Apply(got, templates)
	if err != nil || string(again) != want {
		t.Fatalf("applying twice changed the declaration:\n%s %v", again, err)
	}
	for _, bad := range []string{`{"tools":[]}`, `"x"`, `[1,`} {
		if _, err := p.Apply(json.RawMessage(bad), templates); err == nil || !strings.Contains(err.Error(), "the declaration is not a JSON array") {
			t.Fatalf("%s: %v", bad, err)
		}
	}
}
