package kernel

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/nexuskernel/nexus/core/declare"
	"github.com/nexuskernel/nexus/core/envelope"
	"github.com/nexuskernel/nexus/core/registry"
	"github.com/nexuskernel/nexus/core/runs"
	"github.com/nexuskernel/nexus/sdk/announce"
	"github.com/nexuskernel/nexus/sdk/jsonwire"
)

const (
	laptop = "0190a5e2-0000-7000-8000-0000000000aa"
	mac    = "0190a5e2-0000-7000-8000-0000000000bb"
)

// fixture is a frozen declaration with every kind of entry: plain kernel tools, an alias, a
// nested and a flat function tool, a tool with an explicit strict, Runner-routed tools (one a
// Runner's skill callable), and the kernel skill callable; and its frozen skill catalog.
type fixture struct {
	compiler *declare.Compiler
	defs     []byte
	catalog  []byte
}

func newFixture(t testing.TB) fixture {
	t.Helper()
	c, err := declare.New(registry.New())
	if err != nil {
		t.Fatal(err)
	}
	tools := `[
 {"type":"function","function":{"name":"deploy","description":"Deploy a build.","parameters":{"type":"object","properties":{"env":{"type":"string"}},"required":["env"]}},"route":{"kind":"runner","runner_executor_public_id":"` + laptop + `","tool_name":"deploy"},"defer_loading":true},
 {"type":"function","function":{"name":"build_logs","description":"Fetch the last build's log.","parameters":{"type":"object","properties":{"lines":{"type":"integer"}}}},"route":{"kind":"runner","runner_executor_public_id":"` + mac + `","tool_name":"logs"}},
 {"type":"function","function":{"name":"mac_skill","description":"Load a skill from the Mac.","parameters":{"type":"object","properties":{"name":{"type":"string"}}}},"route":{"kind":"runner","runner_executor_public_id":"` + mac + `","tool_name":"skill"}},
 {"type":"function","name":"grep","description":"Search files for a pattern.","parameters":{"type":"object"}},
 {"type":"function","function":{"name":"exact","description":"Strict about its input.","parameters":{"type":"object","properties":{}},"strict":true}},
 {"type":"function","function":{"name":"Agent"},"canonical":"nexus.graph.delegate_task","omit":["lifetime"]}
]`
	set, err := c.Compile([]byte(tools))
	if err != nil {
		t.Fatal(err)
	}
	desc := "Runs it."
	tool := func(n string) announce.Tool {
		return announce.Tool{Name: n, Description: &desc, InputSchema: json.RawMessage(`{"type":"object"}`), EffectProfile: announce.Announced(announce.EffectReadOnly)}
	}
	runners := []declare.Runner{
		{PublicID: laptop, DisplayName: "Laptop", Eligible: true, Announcement: announce.Announcement{Tools: []announce.Tool{tool("deploy")}}},
		{PublicID: mac, DisplayName: "Mac", Eligible: true, Announcement: announce.Announcement{Tools: []announce.Tool{tool("logs"), tool("skill")},
			Documents: []announce.Document{{Name: "release-notes", Description: "How the Mac writes release notes."}, {Name: "signing", Description: "Code signing on macOS."}}}},
	}
	f, err := c.Accept(declare.Acceptance{Explicit: set, Runners: runners,
		Imports: &declare.Imports{KernelTools: []string{"nexus.tools.search", "nexus.tools.call", "nexus.skill.load", "nexus.runners.list"}},
		KernelSkills: []declare.KernelSkill{
			{Source: declare.SourceWorkspace, Name: "release-notes", Description: "How we write release notes."},
			{Source: declare.SourceUser, Name: "commit-style", Description: "How this team\nwrites commit messages."},
		}})
	if err != nil {
		t.Fatal(err)
	}
	cat, _ := f.SkillCatalog.MarshalJSON()
	return fixture{compiler: c, defs: f.ToolDefinitions.Bytes(), catalog: cat}
}

func (f fixture) index(t testing.TB) *SearchIndex {
	t.Helper()
	set, err := f.compiler.Compile(f.defs)
	if err != nil {
		t.Fatal(err)
	}
	ix, err := BuildSearchIndex(set, f.catalog)
	if err != nil {
		t.Fatal(err)
	}
	return ix
}

type searchAnswer struct {
	Tools []struct {
		Name       string            `json:"name"`
		Definition json.RawMessage   `json:"definition"`
		Route      json.RawMessage   `json:"route"`
		Skills     []json.RawMessage `json:"skills"`
	} `json:"tools"`
	Truncated bool `json:"truncated"`
}

func names(t testing.TB, body []byte) (out []string, truncated bool) {
	t.Helper()
	var a searchAnswer
	if err := json.Unmarshal(body, &a); err != nil {
		t.Fatalf("%s: %v", body, err)
	}
	for _, tl := range a.Tools {
		s := tl.Name
		for _, sk := range tl.Skills {
			var e struct{ Name string }
			_ = json.Unmarshal(sk, &e)
			s += "/" + e.Name
		}
		out = append(out, s)
	}
	return out, a.Truncated
}

// TestSearchMatching pins the matching (docs/agent-tools.md#tool-search-and-deferred-tools): an
// exact callable alone with all its skills, else every term as a case-insensitive substring of the
// entry's name, description and route, or of one skill's text with its entry's; frozen order; the
// limit and truncated.
func TestSearchMatching(t *testing.T) {
	t.Parallel()
	ix := newFixture(t).index(t)
	cases := []struct {
		q     string
		limit int
		want  []string
		trunc bool
	}{
		{"grep", 5, []string{"grep"}, false},
		// An exact callable is that entry alone, with all of its skills; "skill" is the kernel's.
		{"  mac_skill ", 5, []string{"mac_skill/release-notes/signing"}, false},
		{"skill", 5, []string{"skill/commit-style/release-notes"}, false},
		// Case-sensitive for the exact name, case-insensitive for terms.
		{"Skill", 5, []string{"mac_skill/release-notes/signing", "skill/commit-style/release-notes", "tool_search"}, false},
		{"release notes", 5, []string{"mac_skill/release-notes", "skill/release-notes"}, false},
		{"mac release", 5, []string{"mac_skill/release-notes"}, false},
		{"COMMIT messages", 5, []string{"skill/commit-style"}, false},
		{"signing macos", 5, []string{"mac_skill/signing"}, false},
		// A Runner's id and the served name are searchable, not only the callable.
		{laptop, 5, []string{"deploy"}, false},
		{strings.ToUpper(mac) + " logs", 5, []string{"build_logs"}, false},
		{"0190a5e2", 5, []string{"build_logs", "deploy", "mac_skill/release-notes/signing"}, false},
		{"0190a5e2", 2, []string{"build_logs", "deploy"}, true},
		{"build", 5, []string{"build_logs", "deploy"}, false},
		{"helper", 5, []string{"Agent"}, false},
		{"a", 20, []string{"Agent", "build_logs", "deploy", "exact", "grep", "mac_skill/release-notes/signing", "runners_list",
			"skill/commit-style/release-notes", "tool_call", "tool_search"}, false},
		{"a", 3, []string{"Agent", "build_logs", "deploy"}, true},
		{"nothing-matches-this", 5, nil, false},
		{"deploy nothing", 5, nil, false},
	}
	for _, c := range cases {
		got, trunc := names(t, ix.Search(c.q, c.limit))
		if diff := cmp.Diff(c.want, got); diff != "" || trunc != c.trunc {
			t.Errorf("%q limit %d (-want +got):\n%s truncated %v", c.q, c.limit, diff, trunc)
		}
		if scan := ix.Scan(c.q, c.limit); !bytes.Equal(scan, ix.Search(c.q, c.limit)) {
			t.Errorf("%q: the scan answers %s", c.q, scan)
		}
	}
}

// TestSearchItems pins the result items: the definition as provider projection gives it (alias
// facts, route and defer_loading removed, strict false added unless stated), the route only for
// Runner-routed entries, the skills exactly as frozen, keys in order.
func TestSearchItems(t *testing.T) {
	t.Parallel()
	ix := newFixture(t).index(t)
	want := `{"tools":[{"name":"deploy","definition":{"type":"function","function":{"name":"deploy","description":"Deploy a build.","parameters":{"type":"object","properties":{"env":{"type":"string"}},"required":["env"]},"strict":false}},"route":{"kind":"runner","runner_executor_public_id":"` + laptop + `","tool_name":"deploy"},"skills":[]}],"truncated":false}`
	if got := string(ix.Search("deploy", 5)); got != want {
		t.Errorf("deploy:\n got %s\nwant %s", got, want)
	}
	want = `{"tools":[{"name":"grep","definition":{"type":"function","name":"grep","description":"Search files for a pattern.","parameters":{"type":"object"},"strict":false},"skills":[]}],"truncated":false}`
	if got := string(ix.Search("grep", 5)); got != want {
		t.Errorf("flat:\n got %s\nwant %s", got, want)
	}
	want = `{"tools":[{"name":"exact","definition":{"type":"function","function":{"name":"exact","description":"Strict about its input.","parameters":{"type":"object","properties":{}},"strict":true}},"skills":[]}],"truncated":false}`
	if got := string(ix.Search("exact", 5)); got != want {
		t.Errorf("strict:\n got %s\nwant %s", got, want)
	}
	want = `{"tools":[{"name":"skill","definition":` + string(projected(t, "skill")) + `,"skills":[` +
		`{"callable":"skill","name":"commit-style","description":"How this team\nwrites commit messages.","source":"user"}]}],"truncated":false}`
	if got := string(ix.Search("commit", 5)); got != want {
		t.Errorf("skill:\n got %s\nwant %s", got, want)
	}
	var a searchAnswer
	if err := json.Unmarshal(ix.Search("mac_skill", 5), &a); err != nil {
		t.Fatal(err)
	}
	if got := string(a.Tools[0].Skills[0]); got != `{"callable":"mac_skill","name":"release-notes","description":"How the Mac writes release notes.","source":"runner","runner_executor_public_id":"`+mac+`"}` {
		t.Errorf("runner skill %s", got)
	}
	a = searchAnswer{}
	if err := json.Unmarshal(ix.Search("Agent", 5), &a); err != nil {
		t.Fatal(err)
	}
	def := string(a.Tools[0].Definition)
	if !strings.HasPrefix(def, `{"type":"function","function":{"name":"Agent","description":"`) || strings.Contains(def, "canonical") ||
		strings.Contains(def, `"omit"`) || strings.Contains(def, `"lifetime"`) || !strings.HasSuffix(def, `"strict":false}}`) || a.Tools[0].Route != nil {
		t.Errorf("alias definition %s", def)
	}
}

// projected is a plain kernel tool's definition with the strict default, as the catalog
// renders it.
func projected(t *testing.T, wire string) []byte {
	t.Helper()
	e, _ := registry.New().Resolve(wire)
	d, err := registry.Definition(e, registry.PlainSpelling)
	if err != nil {
		t.Fatal(err)
	}
	return append(bytes.TrimSuffix(d, []byte("}}")), []byte(`,"strict":false}}`)...)
}

// TestSearchAgreesWithScan checks the trigram index against the naive scan on random sets and
// queries: the same answer, byte for byte.
func TestSearchAgreesWithScan(t *testing.T) {
	t.Parallel()
	set, catalog := syntheticSet(t, 400, 7)
	ix, err := BuildSearchIndex(set, catalog)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewSource(11))
	words := append(append([]string{}, vocabulary...), "x", "qq", "zzzz", "tool_0001", "0190", "-", "_3")
	for i := 0; i < 3000; i++ {
		var terms []string
		for n := 1 + rng.Intn(3); n > 0; n-- {
			w := words[rng.Intn(len(words))]
			if k := rng.Intn(4); k > 0 && len(w) > k {
				w = w[rng.Intn(k):] // a substring of a word
			}
			if rng.Intn(3) == 0 {
				w = strings.ToUpper(w)
			}
			terms = append(terms, w)
		}
		q := strings.Join(terms, " ")
		limit := 1 + rng.Intn(MaxSearchLimit)
		if a, b := ix.Search(q, limit), ix.Scan(q, limit); !bytes.Equal(a, b) {
			t.Fatalf("%q limit %d:\nindex %s\n scan %s", q, limit, a, b)
		}
	}
}

// TestSearchBound: the result stays within the result bound of docs/api.md#the-executor-plane (the
// canonical JSON of {content, structured_content} at most 1 MiB), schemas whole; a candidate that
// does not fit is skipped and sets truncated, and is not replaced by a later match; the computed
// size is exact.
func TestSearchBound(t *testing.T) {
	t.Parallel()
	c, err := declare.New(registry.New())
	if err != nil {
		t.Fatal(err)
	}
	// Six tools whose schemas carry quote-heavy text: each is about 150 KB as stored, and
	// more than twice that in the bounded form, where content escapes it once more.
	var tools []string
	for i := 0; i < 6; i++ {
		pad := strings.Repeat(`say "hi" `, 12000+i*100)
		tools = append(tools, fmt.Sprintf(`{"type":"function","function":{"name":"big_%d","description":"Big tool %d.","parameters":{"type":"object","description":%q}}}`, i, i, pad))
	}
	set, err := c.Compile([]byte("[" + strings.Join(tools, ",") + "]"))
	if err != nil {
		t.Fatal(err)
	}
	ix, err := BuildSearchIndex(set, nil)
	if err != nil {
		t.Fatal(err)
	}
	body := ix.Search("big", 6)
	got, trunc := names(t, body)
	if !trunc || len(got) == 0 || len(got) == 6 {
		t.Fatalf("got %v truncated %v", got, trunc)
	}
	size := boundedSize(t, body)
	if size > envelope.MaxResultBytes {
		t.Fatalf("result is %d bytes bounded", size)
	}
	// The computed size is the real one, counted with "false" (one byte longer than "true" in
	// each of the two encodings).
	n := resultFixed
	for i, name := range got {
		e := ix.entries[ix.byName[name]]
		n += e.headEsc + e.headCanon
		if i > 0 {
			n += 2
		}
	}
	if n != size+2 {
		t.Fatalf("computed %d, real %d", n, size+2)
	}
	// Not replaced: with a limit of one the first candidate alone is considered.
	if one, trunc := names(t, ix.Search("big", 1)); len(one) != 1 || !trunc {
		t.Fatalf("limit 1: %v %v", one, trunc)
	}
	// A small match past the limit is not added in a skipped candidate's place; within the limit, a
	// later candidate that fits is added (docs/agent-tools.md#tool-search-and-deferred-tools checks
	// each one).
	small, err := c.Compile([]byte("[" + strings.Join(tools, ",") + `,{"type":"function","function":{"name":"big_z","description":"small","parameters":{"type":"object"}}}]`))
	if err != nil {
		t.Fatal(err)
	}
	ix, _ = BuildSearchIndex(small, nil)
	got2, trunc2 := names(t, ix.Search("big", 6))
	if diff := cmp.Diff(got, got2); diff != "" || !trunc2 {
		t.Fatalf("a match past the limit replaced a skipped one: %s", diff)
	}
	got3, trunc3 := names(t, ix.Search("big", 7))
	if diff := cmp.Diff(append(got, "big_z"), got3); diff != "" || !trunc3 {
		t.Fatalf("a fitting candidate after a skipped one: %s", diff)
	}
}

// boundedSize is the canonical size of {content, structured_content} for a JSON result.
func boundedSize(t *testing.T, body []byte) int {
	t.Helper()
	env, err := json.Marshal(map[string]any{"content": string(body), "structured_content": json.RawMessage(body)})
	if err != nil {
		t.Fatal(err)
	}
	canon, err := jsonwire.CanonicalValue(env)
	if err != nil {
		t.Fatal(err)
	}
	return len(canon)
}

// vocabulary is the word stock of the synthetic sets.
var vocabulary = []string{"build", "deploy", "logs", "file", "read", "write", "network", "cache", "image", "database",
	"query", "index", "search", "upload", "report", "metrics", "alert", "queue", "schedule", "backup", "restore", "user",
	"token", "secret", "config", "release", "notes", "commit", "branch", "merge", "test", "lint", "format", "docs"}

// syntheticSet is a frozen set of n function tools (one in ten Runner-routed, one in fifty a
// Runner skill callable with skills) with descriptions drawn from the vocabulary.
func syntheticSet(t testing.TB, n int, seed int64) (*declare.Set, []byte) {
	t.Helper()
	rng := rand.New(rand.NewSource(seed))
	c, err := declare.New(registry.New())
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	b.WriteString("[")
	type skill struct{ callable, name, desc, runner string }
	var skills []skill
	sentence := func(k int) string {
		var w []string
		for i := 0; i < k; i++ {
			w = append(w, vocabulary[rng.Intn(len(vocabulary))])
		}
		return strings.Join(w, " ")
	}
	for i := 0; i < n; i++ {
		if i > 0 {
			b.WriteString(",")
		}
		name := fmt.Sprintf("tool_%04d_%s", i, vocabulary[rng.Intn(len(vocabulary))])
		desc := strings.ToUpper(sentence(1)[:1]) + sentence(12) + "."
		params := `{"type":"object","properties":{"path":{"type":"string","description":"` + sentence(6) + `"},"limit":{"type":"integer"}},"required":["path"]}`
		switch {
		case i%50 == 7:
			runner := fmt.Sprintf("0190a5e2-0000-7000-8000-%012d", i)
			fmt.Fprintf(&b, `{"type":"function","function":{"name":%q,"description":%q,"parameters":%s},"route":{"kind":"runner","runner_executor_public_id":%q,"tool_name":"skill"},"defer_loading":true}`,
				name, desc, params, runner)
			for k := 0; k < 5; k++ {
				skills = append(skills, skill{name, fmt.Sprintf("skill-%d-%s", k, vocabulary[rng.Intn(len(vocabulary))]), sentence(10), runner})
			}
		case i%10 == 3:
			fmt.Fprintf(&b, `{"type":"function","function":{"name":%q,"description":%q,"parameters":%s},"route":{"kind":"runner","runner_executor_public_id":"0190a5e2-0000-7000-8000-%012d","tool_name":"served_%d"},"defer_loading":true}`,
				name, desc, params, i%7, i)
		default:
			fmt.Fprintf(&b, `{"type":"function","function":{"name":%q,"description":%q,"parameters":%s},"defer_loading":true}`, name, desc, params)
		}
	}
	b.WriteString("]")
	set, err := c.Compile([]byte(b.String()))
	if err != nil {
		t.Fatal(err)
	}
	var cat declare.SkillCatalog
	for _, s := range skills {
		cat = append(cat, declare.SkillEntry{Callable: s.callable, Name: s.name, Description: s.desc, Source: declare.SourceRunner, RunnerExecutorPublicID: s.runner})
	}
	raw, _ := cat.MarshalJSON()
	return set, raw
}

// TestDiscoveryArguments pins tool_search's and tool_call's refusals
// (docs/agent-tools.md#tool-search-and-deferred-tools,
// docs/agent-tools.md#tool-search-and-deferred-tools) and what a lawful tool_call answers: the
// placement of its child.
func TestDiscoveryArguments(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	d := &Discovery{Compiler: f.compiler}
	call := func(tool, in string) *runs.KernelOutcome {
		t.Helper()
		round := &runs.CallingRound{Key: "r1", ToolDefinitions: f.defs, SkillCatalog: f.catalog}
		kc := &runs.KernelCall{ToolName: tool, Input: json.RawMessage(in),
			Round: func(context.Context) (*runs.CallingRound, error) { return round, nil }}
		run := d.Search
		if tool == "tool_call" {
			run = d.Call
		}
		out, err := run(context.Background(), kc)
		if err != nil {
			t.Fatalf("%s %s: %v", tool, in, err)
		}
		return out
	}
	refusals := []struct{ tool, in, text string }{
		{"tool_search", `{}`, "invalid_arguments: query is required."},
		{"tool_search", `{"query":null}`, "invalid_arguments: query is required."},
		{"tool_search", `{"query":" "}`, "invalid_arguments: query is empty."},
		{"tool_search", `{"query":["a"]}`, "invalid_arguments: query must be a string."},
		{"tool_search", `{"query":"a","limit":0}`, "invalid_arguments: limit must be an integer from 1 to 20."},
		{"tool_search", `{"query":"a","limit":21}`, "invalid_arguments: limit must be an integer from 1 to 20."},
		{"tool_search", `{"query":"a","limit":"5"}`, "invalid_arguments: limit must be an integer from 1 to 20."},
		{"tool_call", `{"input":{}}`, "invalid_arguments: name is required."},
		{"tool_call", `{"name":"","input":{}}`, "invalid_arguments: name is empty."},
		{"tool_call", `{"name":3,"input":{}}`, "invalid_arguments: name must be a string."},
		{"tool_call", `{"name":"grep"}`, "invalid_arguments: input is required."},
		{"tool_call", `{"name":"grep","input":"{}"}`, "invalid_arguments: input must be an object."},
		{"tool_call", `{"name":"logs","input":{}}`, `tool_not_declared: "logs" is not a tool this run may call.`},
		{"tool_call", `{"name":"Grep","input":{}}`, `tool_not_declared: "Grep" is not a tool this run may call.`},
		{"tool_call", `{"name":"tool_call","input":{"name":"grep","input":{}}}`, "invalid_arguments: tool_call cannot call itself."},
	}
	for _, c := range refusals {
		out := call(c.tool, c.in)
		r := out.Result
		if r == nil || r.Content != c.text || !r.IsError || r.Title != c.tool+" refused" {
			t.Errorf("%s %s: %+v", c.tool, c.in, out)
			continue
		}
		word, detail, _ := strings.Cut(c.text, ": ")
		sc, _ := json.Marshal(struct {
			Error struct {
				Key    string `json:"key"`
				Detail string `json:"detail"`
			} `json:"error"`
		}{struct {
			Key    string `json:"key"`
			Detail string `json:"detail"`
		}{word, detail}})
		if string(r.StructuredContent) != string(sc) {
			t.Errorf("%s %s: structured %s", c.tool, c.in, r.StructuredContent)
		}
	}
	out := call("tool_search", `{"query":"grep","limit":5.0,"extra":true}`)
	if out.Result == nil || out.Result.IsError || out.Result.Title != "tool search" || out.Result.Content != string(out.Result.StructuredContent) ||
		!strings.HasPrefix(out.Result.Content, `{"tools":[{"name":"grep",`) {
		t.Fatalf("search: %+v", out.Result)
	}
	out = call("tool_call", `{"name":"deploy","input":{"env":"prod"},"note":"ignored"}`)
	want := &runs.Placement{Call: &runs.ChildCall{Name: "deploy", Input: json.RawMessage(`{"env":"prod"}`)}, Title: "tool call"}
	if diff := cmp.Diff(want, out.Place); diff != "" || out.Result != nil || out.Failure != nil {
		t.Fatalf("placement (-want +got):\n%s", diff)
	}
}

// TestIndexCache: an index is built once per frozen declaration and reused; another
// declaration gets its own; the least recently used goes once the bound is passed.
func TestIndexCache(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	d := &Discovery{Compiler: f.compiler, CacheBytes: 1}
	a, err := d.Index(f.defs, f.catalog)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := d.Index(f.defs, f.catalog)
	if a != b {
		t.Fatal("the same declaration was indexed twice")
	}
	c, _ := d.Index(f.defs, nil)
	if c == a {
		t.Fatal("a different catalog shared the index")
	}
	// The bound of one byte keeps only the most recent index.
	if again, _ := d.Index(f.defs, f.catalog); again == a {
		t.Fatal("an evicted index was kept")
	}
	if _, err := d.Index([]byte(`[{"bad":1}]`), nil); err == nil {
		t.Fatal("a declaration that does not compile was indexed")
	}
}
