package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/tools/txtar"

	"github.com/nexuskernel/nexus/core/declare"
	"github.com/nexuskernel/nexus/core/profiles/profilestest"
	"github.com/nexuskernel/nexus/core/registry"
	"github.com/nexuskernel/nexus/core/store"
	"github.com/nexuskernel/nexus/core/store/storetest"
	"github.com/nexuskernel/nexus/sdk/announce"
	"github.com/nexuskernel/nexus/sdk/client"
	"github.com/nexuskernel/nexus/sdk/jsonwire"
)

// updateGolden rewrites this package's golden files: go test ./core/httpapi -run Profile -update.
var updateGolden = flag.Bool("update", false, "rewrite golden files")

const (
	profilePath  = "/agent_api/v1/profile/configuration"
	assemblyPath = "/agent_api/v1/tools/assembly"
	runner51     = "01900000-0000-7000-8000-000000000051"
	runner52     = "01900000-0000-7000-8000-000000000052"
)

// TestProfileDoorsWhoMayCall: both doors take an agent's member token; a user is 403 not_agent
// before anything of the body is read; a missing, unknown or executor token is 401.
func TestProfileDoorsWhoMayCall(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		f := newFixture(t, s)
		url := f.live(t)
		_, exTok := f.newExecutor(t, f.admin, "default", "runner", "laptop")
		for _, c := range []struct{ method, path, body string }{
			{"GET", profilePath, ""},
			{"PUT", profilePath, `[]`},
			{"POST", assemblyPath, `[]`},
		} {
			send(t, c.method, url+c.path, f.admin, c.body).refused(t, 403, "not_agent")
			send(t, c.method, url+c.path, "", c.body).refused(t, 401, "unauthorized")
			send(t, c.method, url+c.path, exTok, c.body).refused(t, 401, "unauthorized")
			send(t, c.method, url+c.path, "nxm_"+strings.Repeat("A", 43), c.body).refused(t, 401, "unauthorized")
		}
		// The agent may; the user's refusals stored nothing.
		if got := send(t, "GET", url+profilePath, f.agent, "").ok(t); got != `{"configuration":`+emptyConfiguration+`,"imports":{"pins":null,"problems":[]}}` {
			t.Fatalf("GET before the first PUT: %s", got)
		}
	})
}

// emptyConfiguration is the read-back before the first PUT (docs/api.md#runs).
const emptyConfiguration = `{"tool_definitions":[],"kernel_tools":[],"runner_executor_public_ids":[],"runner_tool_names":null,` +
	`"tool_provider_tools":[],"eager_tool_names":[],"pin_imports":false,"approval_mode":null,"approval_rules":null,"default_model":null,"instructions":null}`

// TestProfileConfigurationExample: the example request against the fixture registry
// (docs/api.md#runs). The response is a golden file; GET answers the same bytes; and the read-back,
// stored again, re-declares to the same bytes (idempotence).
func TestProfileConfigurationExample(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		f := newFixture(t, s)
		url := f.liveFixtureRegistry(t)
		ar, err := txtar.ParseFile(filepath.Join("testdata", "profile_example.txtar"))
		if err != nil {
			t.Fatal(err)
		}
		request := section(t, ar, "request")
		put := send(t, "PUT", url+profilePath, f.agent, request).ok(t)
		if *updateGolden && s.Dialect() == store.SQLite {
			setSection(ar, "response", put)
			if err := os.WriteFile(filepath.Join("testdata", "profile_example.txtar"), txtar.Format(ar), 0o644); err != nil {
				t.Fatal(err)
			}
		} else if want := section(t, ar, "response"); put != want {
			t.Fatalf("PUT response differs from the golden file (go test -update to accept):\n%s", cmp.Diff(pretty(want), pretty(put)))
		}
		// What the example's text shows of the response.
		defs := memberOf(t, put, "configuration", "tool_definitions")
		if names := callables(t, defs); strings.Join(names, ",") != "Agent,remote_read,skill" {
			t.Fatalf("stored callables %v", names)
		}
		agent := string(defs.Items()[0].Encode())
		for _, want := range []string{"Put several Agent calls", "Agent is never handed on", `"run_in_background":{"type":"boolean","default":true,`} {
			if !strings.Contains(agent, want) {
				t.Errorf("Agent's render lacks %q: %s", want, agent)
			}
		}
		if skill := string(defs.Items()[2].Encode()); !strings.HasSuffix(skill, `"canonical":"nexus.skill.load","defer_loading":true}`) {
			t.Errorf("skill entry: %s", skill)
		}

		get := send(t, "GET", url+profilePath, f.agent, "").ok(t)
		if get != put {
			t.Fatalf("GET differs from the PUT's answer:\n%s", cmp.Diff(put, get))
		}
		again := send(t, "PUT", url+profilePath, f.agent, get).ok(t)
		if again != put {
			t.Fatalf("re-declaring the read-back changed it:\n%s", cmp.Diff(put, again))
		}
		row, err := store.AgentProfileOf(context.Background(), s.Reader(), agentID(t, f))
		if err != nil || row.Revision != 2 {
			t.Fatalf("stored revision %v, %v", row, err)
		}
	})
}

func agentID(t *testing.T, f *fixture) int64 {
	t.Helper()
	var id int64
	if err := f.store.Reader().Get(context.Background(), &id, `SELECT id FROM agents WHERE handle = 'bot'`); err != nil {
		t.Fatal(err)
	}
	return id
}

// callables lists the callable names of a set, in order.
func callables(t *testing.T, set jsonwire.Value) []string {
	t.Helper()
	var out []string
	for _, e := range set.Items() {
		name, ok := e.GetString("name")
		if fn, isNested := e.Get("function"); isNested {
			name, ok = fn.GetString("name")
		}
		if !ok {
			t.Fatalf("entry without a name: %s", e.Encode())
		}
		out = append(out, name)
	}
	return out
}

// section is a txtar section without its final line feed.
func section(t *testing.T, ar *txtar.Archive, name string) string {
	t.Helper()
	for _, f := range ar.Files {
		if f.Name == name {
			return strings.TrimSuffix(string(f.Data), "\n")
		}
	}
	t.Fatalf("no section %q", name)
	return ""
}

func setSection(ar *txtar.Archive, name, data string) {
	for i := range ar.Files {
		if ar.Files[i].Name == name {
			ar.Files[i].Data = []byte(data + "\n")
			return
		}
	}
	ar.Files = append(ar.Files, txtar.File{Name: name, Data: []byte(data + "\n")})
}

// pretty indents JSON for a readable diff.
func pretty(s string) string {
	var b bytes.Buffer
	if json.Indent(&b, []byte(s), "", "  ") != nil {
		return s
	}
	return b.String()
}

// oversizedRender is a list of compact aliases of delegate_task whose authored form is small
// but whose stored render is over the declaration bound: stage B of the refusal algorithm, the
// one declaration bound a request under the 1 MiB body bound can reach.
func oversizedRender(t *testing.T, c *declare.Compiler) string {
	t.Helper()
	one, err := c.Compile([]byte(`[{"name":"A","canonical":"delegate_task"}]`))
	if err != nil {
		t.Fatal(err)
	}
	n := declare.MaxDeclarationBytes/one.EncodedSize() + 1
	items := make([]string, n)
	for i := range items {
		items[i] = `{"name":"A` + strings.Repeat("a", i/26) + string(rune('a'+i%26)) + `","canonical":"delegate_task"}`
	}
	list := "[" + strings.Join(items, ",") + "]"
	if len(list) >= DefaultBodyLimit/2 {
		t.Fatalf("the authored list is %d bytes; it must stay well under the body bound", len(list))
	}
	return list
}

func liveCompiler(t *testing.T) *declare.Compiler {
	t.Helper()
	c, err := declare.New(registry.New())
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// grammarCases produce every grammar word of docs/agent-tools.md#declaration-refusals and the
// profile's own words, each as a configuration object, with the field and the path (under
// configuration.) the refusal names.
func grammarCases(t *testing.T) []struct{ name, cfg, field, word, path string } {
	return []struct{ name, cfg, field, word, path string }{
		{"invalid", `{"tool_definitions":[{"type":"function","name":"x","extra":1}]}`, "tool_definitions", "invalid", "tool_definitions[0].extra"},
		{"invalid list", `{"tool_definitions":"x"}`, "tool_definitions", "invalid", "tool_definitions"},
		{"invalid recut", `{"tool_definitions":[{"name":"Agent","canonical":"delegate_task","recut":{"anchor":"a","replacement":"b"}}]}`, "tool_definitions", "invalid", "tool_definitions[0].recut"},
		{"content_too_large", `{"tool_definitions":` + oversizedRender(t, liveCompiler(t)) + `}`, "tool_definitions", "content_too_large", "tool_definitions"},
		{"duplicate_tool_name", `{"tool_definitions":[{"type":"function","name":"x"},{"type":"function","name":"x"}]}`, "tool_definitions", "duplicate_tool_name", "tool_definitions[1]"},
		{"kernel_tool_redefined", `{"tool_definitions":[{"type":"function","name":"wait"}]}`, "tool_definitions", "kernel_tool_redefined", "tool_definitions[0]"},
		{"alias_canonical_unknown", `{"tool_definitions":[{"name":"A","canonical":"acme.fs.read"}]}`, "tool_definitions", "alias_canonical_unknown", "tool_definitions[0].canonical"},
		{"alias_name_reserved", `{"tool_definitions":[{"name":"ask","canonical":"nexus.graph.wait"}]}`, "tool_definitions", "alias_name_reserved", "tool_definitions[0].name"},
		{"alias_param_unknown", `{"tool_definitions":[{"name":"A","canonical":"delegate_task","params":{"bg":{"maps_to":"background"}}}]}`, "tool_definitions", "alias_param_unknown", "tool_definitions[0].params.bg.maps_to"},
		{"alias_invert_needs_boolean", `{"tool_definitions":[{"name":"A","canonical":"delegate_task","params":{"t":{"maps_to":"prompt","invert":true,"description":"d"}}}]}`, "tool_definitions", "alias_invert_needs_boolean", "tool_definitions[0].params.t.invert"},
		{"alias_param_description_required", `{"tool_definitions":[{"name":"A","canonical":"delegate_task","params":{"bg":{"maps_to":"wait","invert":true}}}]}`, "tool_definitions", "alias_param_description_required", "tool_definitions[0].params.bg"},
		{"invalid_tool_route", `{"tool_definitions":[{"type":"function","name":"r","route":{"kind":"mcp"}}]}`, "tool_definitions", "invalid_tool_route", "tool_definitions[0].route"},
		{"runner_target_required", `{"tool_definitions":[{"type":"function","name":"r","route":{"kind":"runner","tool_name":"read"}}]}`, "tool_definitions", "runner_target_required", "tool_definitions[0].route"},
		{"kernel_tools invalid", `{"kernel_tools":["spawn"]}`, "kernel_tools", "invalid", "kernel_tools[0]"},
		{"kernel_tools not a list", `{"kernel_tools":"nexus.graph.wait"}`, "kernel_tools", "invalid", "kernel_tools"},
		{"runner ids invalid", `{"runner_executor_public_ids":["` + runner51 + `","not-a-uuid"]}`, "runner_executor_public_ids", "invalid", "runner_executor_public_ids[1]"},
		{"runner tool names invalid", `{"runner_tool_names":[7]}`, "runner_tool_names", "invalid", "runner_tool_names[0]"},
		{"repeated field", `{"kernel_tools":[],"kernel_tools":["nexus.graph.wait"]}`, "kernel_tools", "invalid", "kernel_tools"},
	}
}

// profileOnlyCases are the words of the profile's other fields (the table (docs/api.md#runs)).
var profileOnlyCases = []struct{ name, cfg, field, word, path string }{
	{"approval_mode required", `{"kernel_tools":["nexus.graph.wait"]}`, "approval_mode", "required", "approval_mode"},
	{"approval_mode invalid", `{"approval_mode":"sometimes"}`, "approval_mode", "invalid", "approval_mode"},
	{"approval_rules invalid", `{"approval_rules":[{"tool":"wait","verdict":"allow"},{"tool":"x","verdict":"allow","when":1}]}`, "approval_rules", "invalid", "approval_rules[1].when"},
	{"default_model invalid", `{"default_model":"scripted"}`, "default_model", "invalid", "default_model"},
	{"default_model unknown_model", `{"default_model":"mock/unknown"}`, "default_model", "unknown_model", "default_model"},
	{"instructions invalid", `{"instructions":{"text":"x"}}`, "instructions", "invalid", "instructions"},
	{"instructions content_too_large", `{"instructions":"` + strings.Repeat("i", 64*1024+1) + `"}`, "instructions", "content_too_large", "instructions"},
}

// TestProfileDoorRefusals: every word the profile door answers, as 422 validation_failed with
// field, word and path in that order; the shape refusals as 400; the body bound as 413. A
// refused PUT stores nothing.
func TestProfileDoorRefusals(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		f := newFixture(t, s)
		url := f.live(t) + profilePath
		stored := send(t, "PUT", url, f.agent, `{"configuration":{"instructions":"kept"}}`).ok(t)
		for _, tc := range append(grammarCases(t), profileOnlyCases...) {
			t.Run(tc.name, func(t *testing.T) {
				send(t, "PUT", url, f.agent, `{"configuration":`+tc.cfg+`}`).refused(t, 422, "validation_failed",
					x("field", tc.field), x("word", tc.word), x("path", "configuration."+tc.path))
			})
		}
		for _, tc := range []struct{ name, body, code, path string }{
			{"array body", `[]`, "parameter_invalid", ""},
			{"string body", `"configuration"`, "parameter_invalid", ""},
			{"two values", `{"configuration":{}} {}`, "parameter_invalid", ""},
			{"repeated root", `{"configuration":{},"configuration":{}}`, "parameter_invalid", "configuration"},
			{"empty body", ``, "parameter_missing", "configuration"},
			{"whitespace body", "  \n", "parameter_missing", "configuration"},
			{"no configuration", `{"tool_definitions":[]}`, "parameter_missing", "configuration"},
			{"null configuration", `{"configuration":null}`, "parameter_missing", "configuration"},
			{"array configuration", `{"configuration":[]}`, "parameter_missing", "configuration"},
		} {
			t.Run(tc.name, func(t *testing.T) {
				var extras []extra
				if tc.path != "" {
					extras = append(extras, x("path", tc.path))
				}
				send(t, "PUT", url, f.agent, tc.body).refused(t, 400, tc.code, extras...)
			})
		}
		// The body bound answers before anything else, even the kind of member.
		big := `{"configuration":{"instructions":"` + strings.Repeat("b", DefaultBodyLimit) + `"}}`
		send(t, "PUT", url, f.agent, big).refused(t, 413, "content_too_large")
		send(t, "PUT", url, f.admin, big).refused(t, 413, "content_too_large")
		// The kind of member answers before the body.
		send(t, "PUT", url, f.admin, `[]`).refused(t, 403, "not_agent")

		if got := send(t, "GET", url, f.agent, "").ok(t); got != stored {
			t.Fatalf("refused PUTs changed the profile:\n%s", cmp.Diff(stored, got))
		}
	})
}

// bigSchemaTools is an announcement of n model-facing tools whose schemas are each about
// schemaBytes long, to push an assembled set over its bound through Runner imports.
func bigSchemaTools(n, schemaBytes int) string {
	items := make([]string, n)
	for i := range items {
		items[i] = `{"name":"big` + string(rune('a'+i)) + `","effect_profile":` + profilestest.ReadOnly +
			`,"description":"A big tool.","input_schema":{"type":"object","description":"` + strings.Repeat("s", schemaBytes) + `"}}`
	}
	return `{"tools":[` + strings.Join(items, ",") + `]}`
}

// TestAssemblyDoorRefusals: every status and envelope of the refusal table (docs/api.md#runs).
func TestAssemblyDoorRefusals(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		f := newFixture(t, s)
		url := f.live(t) + assemblyPath
		ws := f.defaultWorkspace(t)
		box := profilestest.Executor(t, s, ws, store.ExecutorRunner, runner51, "build-box")
		profilestest.Announce(t, s, box, `{"tools":[{"name":"grep","effect_profile":`+profilestest.ReadOnly+
			`,"description":"Search files on the runner.","input_schema":{"type":"object"}}]}`)
		revoked := profilestest.Executor(t, s, ws, store.ExecutorRunner, runner52, "old-box")
		profilestest.Revoke(t, s, revoked)
		stored := send(t, "PUT", f.live(t)+profilePath, f.agent, `{"configuration":{"instructions":"kept"}}`).ok(t)

		// The body and the selector.
		for _, tc := range []struct {
			name, body, code string
			extras           []extra
		}{
			{"selector absent", `{"configuration":{}}`, "parameter_missing", []extra{x("path", "default_runner_executor_public_id")}},
			{"empty body", ``, "parameter_missing", []extra{x("path", "default_runner_executor_public_id")}},
			{"selector before configuration", `{"configuration":null}`, "parameter_missing", []extra{x("path", "default_runner_executor_public_id")}},
			{"selector not a UUID", `{"default_runner_executor_public_id":"build-box"}`, "parameter_invalid", []extra{x("path", "default_runner_executor_public_id")}},
			{"selector a number", `{"default_runner_executor_public_id":51}`, "parameter_invalid", []extra{x("path", "default_runner_executor_public_id")}},
			{"selector an object", `{"default_runner_executor_public_id":{"id":"` + runner51 + `"}}`, "parameter_invalid", []extra{x("path", "default_runner_executor_public_id")}},
			{"body an array", `[]`, "parameter_invalid", nil},
			{"body a string", `"x"`, "parameter_invalid", nil},
			{"configuration null", `{"default_runner_executor_public_id":null,"configuration":null}`, "parameter_missing", []extra{x("path", "configuration")}},
			{"configuration an array", `{"default_runner_executor_public_id":null,"configuration":[]}`, "parameter_missing", []extra{x("path", "configuration")}},
			{"configuration a string", `{"default_runner_executor_public_id":null,"configuration":"{}"}`, "parameter_missing", []extra{x("path", "configuration")}},
		} {
			t.Run(tc.name, func(t *testing.T) {
				send(t, "POST", url, f.agent, tc.body).refused(t, 400, tc.code, tc.extras...)
			})
		}

		// Grammar words of the explicit configuration: 422 validation_failed, except bounds.
		for _, tc := range grammarCases(t) {
			t.Run(tc.name, func(t *testing.T) {
				r := send(t, "POST", url, f.agent, `{"default_runner_executor_public_id":null,"configuration":`+tc.cfg+`}`)
				if tc.word == "content_too_large" {
					r.refused(t, 413, "content_too_large", x("field", tc.field), x("path", "configuration."+tc.path))
					return
				}
				r.refused(t, 422, "validation_failed", x("field", tc.field), x("word", tc.word), x("path", "configuration."+tc.path))
			})
		}
		// approval_mode is not required here, and the profile's other fields are ignored.
		send(t, "POST", url, f.agent, `{"default_runner_executor_public_id":null,"configuration":{"kernel_tools":["nexus.graph.wait"],"approval_mode":"never","instructions":7}}`).ok(t)

		// Acceptance words.
		cand := func(ids ...string) string { return `"runner_executor_public_ids":` + mustJSON(t, ids) }
		routed := `{"type":"function","function":{"name":"remote_read","parameters":{"type":"object"}},"route":{"kind":"runner","runner_executor_public_id":"%s","tool_name":"read"}}`
		q := declare.QualifiedName(runner51, "grep")
		for _, tc := range []struct {
			name, body string
			status     int
			code       string
			extras     []extra
		}{
			{"runner_not_declared", `{"default_runner_executor_public_id":"` + runner52 + `","configuration":{` + cand(runner51) + `}}`,
				422, "runner_not_declared", []extra{x("runner_executor_public_id", runner52), x("path", "default_runner_executor_public_id")}},
			{"runner_not_eligible revoked", `{"default_runner_executor_public_id":"` + runner52 + `","configuration":{}}`,
				422, "runner_not_eligible", []extra{x("runner_executor_public_id", runner52)}},
			{"runner_not_eligible unknown", `{"default_runner_executor_public_id":"01900000-0000-7000-8000-000000000099"}`,
				422, "runner_not_eligible", []extra{x("runner_executor_public_id", "01900000-0000-7000-8000-000000000099")}},
			{"runner_not_eligible route", `{"default_runner_executor_public_id":null,"configuration":{"tool_definitions":[` + strings.Replace(routed, "%s", runner52, 1) + `]}}`,
				422, "runner_not_eligible", []extra{x("runner_executor_public_id", runner52), x("callable", "remote_read")}},
			{"tool_not_served", `{"default_runner_executor_public_id":null,"configuration":{"tool_definitions":[` + strings.Replace(routed, "%s", runner51, 1) + `]}}`,
				422, "tool_not_served", []extra{x("callable", "remote_read"), x("runner_executor_public_id", runner51), x("tool_name", "read")}},
			{"duplicate_tool_name after qualification", `{"default_runner_executor_public_id":"` + runner51 + `","configuration":{"tool_definitions":[{"type":"function","name":"grep"},{"type":"function","name":"` + q + `"}],` + cand(runner51) + `}}`,
				422, "validation_failed", []extra{x("field", "tool_definitions"), x("word", "duplicate_tool_name"), x("callable", q)}},
		} {
			t.Run(tc.name, func(t *testing.T) {
				send(t, "POST", url, f.agent, tc.body).refused(t, tc.status, tc.code, tc.extras...)
			})
		}

		// The assembled set over its bound, each source within its own: 413 with field, no path.
		half := oversizedRender(t, liveCompiler(t))
		half = half[:strings.LastIndex(half[:len(half)/2], ",{")] + "]"
		big := profilestest.Executor(t, s, ws, store.ExecutorRunner, "01900000-0000-7000-8000-000000000053", "big-box")
		profilestest.Announce(t, s, big, bigSchemaTools(10, 60*1024))
		send(t, "POST", url, f.agent, `{"default_runner_executor_public_id":null,"configuration":{"tool_definitions":`+half+`}}`).ok(t)
		send(t, "POST", url, f.agent, `{"default_runner_executor_public_id":"01900000-0000-7000-8000-000000000053","configuration":{"tool_definitions":`+half+`,`+
			cand("01900000-0000-7000-8000-000000000053")+`}}`).refused(t, 413, "content_too_large", x("field", "tool_definitions"))

		// The assembly created and changed nothing.
		if got := send(t, "GET", f.live(t)+profilePath, f.agent, "").ok(t); got != stored {
			t.Fatalf("an assembly changed the profile:\n%s", got)
		}
		row, _ := store.AgentProfileOf(context.Background(), s.Reader(), agentID(t, f))
		if row.Revision != 1 {
			t.Fatalf("profile revision %d after assemblies", row.Revision)
		}
	})
}

// acceptArchives are the import and acceptance rows (docs/development.md#the-declaration-compiler),
// as core/declare's golden files hold them (its testdata/accept): the assembly door must answer
// what the compiler does.
const acceptArchives = "../declare/testdata/accept"

// TestAssemblyWorkedExamples replays every acceptance row without narrowing through the live
// assembly door (against the fixture registry), with the row's Runners stored as executors and
// their announcements stored through the repository: a proposed configuration, and the same
// sources stored on the profile and assembled from there, both answer the row's tool_definitions
// and environment, or its refusal.
func TestAssemblyWorkedExamples(t *testing.T) {
	t.Parallel()
	paths, err := filepath.Glob(filepath.Join(acceptArchives, "*.txtar"))
	if err != nil || len(paths) == 0 {
		t.Fatalf("no acceptance rows in %s: %v", acceptArchives, err)
	}
	sort.Strings(paths)
	for _, p := range paths {
		ar, err := txtar.ParseFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if hasSection(ar, "tool_names") {
			continue // narrowing belongs to doors that narrow; the assembly never does
		}
		if hasSection(ar, "providers") {
			continue // the assembly reports tool-provider import refusals; internal/e2e's import tests cover it
		}
		id := strings.TrimSuffix(filepath.Base(p), ".txtar")
		t.Run(id, func(t *testing.T) {
			t.Parallel()
			storetest.Each(t, func(t *testing.T, s *store.Store) {
				replayAcceptance(t, s, ar)
			})
		})
	}
}

// frozenPart is an assembly's tool_definitions and environment, as served, without its imports
// and problems.
func frozenPart(t *testing.T, body string) string {
	t.Helper()
	var b struct {
		ToolDefinitions json.RawMessage `json:"tool_definitions"`
		Environment     json.RawMessage `json:"environment"`
		Imports         json.RawMessage `json:"imports"`
		Problems        json.RawMessage `json:"problems"`
	}
	if err := json.Unmarshal([]byte(body), &b); err != nil || b.Imports == nil || string(b.Problems) != "[]" {
		t.Fatalf("assembly body %s: %v", body, err)
	}
	return `{"tool_definitions":` + string(b.ToolDefinitions) + `,"environment":` + string(b.Environment) + `}`
}

func hasSection(ar *txtar.Archive, name string) bool {
	for _, f := range ar.Files {
		if f.Name == name {
			return true
		}
	}
	return false
}

func replayAcceptance(t *testing.T, s *store.Store, ar *txtar.Archive) {
	f := newFixture(t, s)
	url := f.liveFixtureRegistry(t)
	ws := f.defaultWorkspace(t)
	if hasSection(ar, "runners") {
		var runners []struct {
			PublicID     string                `json:"public_id"`
			DisplayName  string                `json:"display_name"`
			Eligible     bool                  `json:"eligible"`
			Announcement announce.Announcement `json:"announcement"`
		}
		if err := json.Unmarshal([]byte(section(t, ar, "runners")), &runners); err != nil {
			t.Fatal(err)
		}
		for _, r := range runners {
			id := profilestest.Executor(t, s, ws, store.ExecutorRunner, r.PublicID, r.DisplayName)
			// The rows leave effect profiles out; an announcement carries one per tool.
			for i := range r.Announcement.Tools {
				r.Announcement.Tools[i].EffectProfile = announce.Announced(announce.EffectReadOnly)
			}
			body, _ := json.Marshal(r.Announcement.Normalize())
			profilestest.Announce(t, s, id, string(body))
			if !r.Eligible {
				profilestest.Revoke(t, s, id)
			}
		}
	}
	// The configuration: the explicit list and the import fields as the row gives them.
	var fields []string
	if hasSection(ar, "explicit") {
		fields = append(fields, `"tool_definitions":`+section(t, ar, "explicit"))
	}
	if hasSection(ar, "imports") {
		imports := strings.TrimSpace(section(t, ar, "imports"))
		if inner := strings.TrimSuffix(strings.TrimPrefix(imports, "{"), "}"); inner != "" {
			fields = append(fields, inner)
		}
	}
	cfg := "{" + strings.Join(fields, ",") + "}"
	selection := "null"
	if hasSection(ar, "selection") {
		selection = `"` + section(t, ar, "selection") + `"`
	}
	proposed := send(t, "POST", url+assemblyPath, f.agent, `{"default_runner_executor_public_id":`+selection+`,"configuration":`+cfg+`}`)

	if hasSection(ar, "want/refusal") {
		checkGoldenRefusal(t, proposed, section(t, ar, "want/refusal"))
		return
	}
	body := frozenPart(t, proposed.ok(t))
	want := `{"tool_definitions":` + section(t, ar, "want/tool_definitions") + `,"environment":` + section(t, ar, "want/environment") + `}`
	if body != want {
		t.Fatalf("assembly differs from the compiler's golden row:\n%s", cmp.Diff(pretty(want), pretty(body)))
	}
	// The same sources on the profile, assembled from the store.
	stored := `{"configuration":` + strings.TrimSuffix(cfg, "}")
	if cfg != "{}" {
		stored += ","
	}
	stored += `"approval_mode":"ask"}}`
	send(t, "PUT", url+profilePath, f.agent, stored).ok(t)
	if got := frozenPart(t, send(t, "POST", url+assemblyPath, f.agent, `{"default_runner_executor_public_id":`+selection+`}`).ok(t)); got != want {
		t.Fatalf("assembly of the stored profile differs:\n%s", cmp.Diff(pretty(want), pretty(got)))
	}
}

// checkGoldenRefusal compares an HTTP refusal with a golden refusal row
// {"word","path"?,"callable"?,"runner_executor_public_id"?,"tool_name"?}: the word (the code,
// or validation_failed's word), the facts, and the path when the door reports one (under
// configuration. for a field of the configuration).
func checkGoldenRefusal(t *testing.T, r reply, golden string) {
	t.Helper()
	var want map[string]string
	if err := json.Unmarshal([]byte(golden), &want); err != nil {
		t.Fatal(err)
	}
	got := r.refusal(t)
	facts := map[string]string{}
	for _, e := range got.extras {
		facts[e.key] = e.value
	}
	word := got.code
	if got.code == "validation_failed" {
		word = facts["word"]
	}
	if word != want["word"] {
		t.Fatalf("word %s, want %s: %s", word, want["word"], r.body)
	}
	for _, k := range []string{"callable", "runner_executor_public_id", "tool_name"} {
		if facts[k] != want[k] {
			t.Errorf("%s = %q, want %q: %s", k, facts[k], want[k], r.body)
		}
	}
	if p, ok := facts["path"]; ok && p != want["path"] && p != "configuration."+want["path"] {
		t.Errorf("path %s, want %s: %s", p, want["path"], r.body)
	}
}

// TestRecutRoundTrip is the round trip against the live catalog
// (docs/development.md#the-declaration-compiler): the SDK applies a recut to the served template,
// the kernel renders the alias with the set's names, and the recut text comes back as
// function.description (macros rendered) beside the raw text as the description fact; stored on the
// profile, it reads back and re-declares to the same bytes through the client.
func TestRecutRoundTrip(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		f := newFixture(t, s)
		ctx := context.Background()
		c := client.New(f.live(t), f.agent)
		cat, err := c.Tools(ctx)
		if err != nil {
			t.Fatal(err)
		}
		templates := client.TemplatesFrom(cat.Tools)
		recut := &client.Recut{Anchor: "Reading one file yourself is faster.",
			Replacement: "Reading one file yourself is faster; {{wait}} blocks on one report, and several {{delegate_task}} calls run side by side."}
		spec := client.AliasSpec{Name: "Agent", Canonical: "nexus.graph.delegate_task", Recut: recut,
			Params: map[string]client.AliasParam{"run_in_background": {MapsTo: "wait", Invert: true, Description: "true (the default): the job runs in the background."}}}
		entry, err := spec.Entry(templates)
		if err != nil {
			t.Fatal(err)
		}
		raw, err := client.ApplyRecut(templates["nexus.graph.delegate_task"], *recut)
		if err != nil {
			t.Fatal(err)
		}
		// The kernel spells delegate_task as the alias itself (the self macro) and wait plainly.
		rendered := strings.NewReplacer("{{delegate_task}}", "Agent", "{{wait}}", "wait").Replace(raw)
		if strings.Contains(rendered, "{{") || !strings.Contains(rendered, "several Agent calls run side by side") {
			t.Fatalf("the expected render still holds a macro or lacks the recut: %s", rendered)
		}

		res, err := c.AssembleTools(ctx, &client.AssemblyRequest{Configuration: &client.AssemblyConfiguration{
			ToolDefinitions: json.RawMessage(`[` + string(entry) + `]`), KernelTools: []string{"nexus.graph.wait"}}})
		if err != nil {
			t.Fatal(err)
		}
		set := memberOf(t, string(res.ToolDefinitions))
		if names := callables(t, set); strings.Join(names, ",") != "Agent,wait" {
			t.Fatalf("callables %v", names)
		}
		agent := set.Items()[0]
		fn, _ := agent.Get("function")
		if got, _ := fn.GetString("description"); got != rendered {
			t.Fatalf("function.description:\n%s", cmp.Diff(rendered, got))
		}
		if got, _ := agent.GetString("description"); got != raw {
			t.Fatalf("description fact:\n%s", cmp.Diff(raw, got))
		}
		// wait, declared beside the alias, names Agent where its text names delegate_task.
		waitFn, _ := set.Items()[1].Get("function")
		wantWait := regexp.MustCompile(`\{\{([a-z][a-z0-9_]*)\}\}`).ReplaceAllStringFunc(templates["nexus.graph.wait"], func(m string) string {
			if m == "{{delegate_task}}" {
				return "Agent"
			}
			return strings.Trim(m, "{}")
		})
		if d, _ := waitFn.GetString("description"); d != wantWait || !strings.Contains(templates["nexus.graph.wait"], "{{delegate_task}}") {
			t.Fatalf("wait's text:\n%s", cmp.Diff(wantWait, d))
		}
		if res.Environment.DefaultRunnerExecutorPublicID != nil || len(res.Environment.Executors) != 0 || len(res.Environment.RunnerCandidates) != 0 {
			t.Fatalf("environment %+v", res.Environment)
		}

		// On the profile, through the client: stored, read back, re-declared to the same bytes.
		mode := "rules"
		put, err := c.PutProfileConfiguration(ctx, &client.ProfileConfigurationRequest{Configuration: client.ProfileConfiguration{
			ToolDefinitions: json.RawMessage(`[` + string(entry) + `]`), KernelTools: []string{"nexus.graph.wait"}, ApprovalMode: &mode,
			ApprovalRules: json.RawMessage(`[{"tool":"delegate_task","verdict":"allow"}]`)}})
		if err != nil {
			t.Fatal(err)
		}
		if string(put.Configuration.ToolDefinitions) != `[`+string(agent.Encode())+`]` {
			t.Fatalf("stored render differs from the assembled Agent:\n%s", put.Configuration.ToolDefinitions)
		}
		got, err := c.ProfileConfiguration(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got.Raw, put.Raw) || *got.Configuration.ApprovalMode != "rules" || got.Configuration.RunnerToolNames != nil ||
			len(got.Configuration.RunnerExecutorPublicIDs) != 0 || got.Configuration.RunnerExecutorPublicIDs == nil {
			t.Fatalf("GET %s\nPUT %s", got.Raw, put.Raw)
		}
		again, err := c.PutProfileConfiguration(ctx, &client.ProfileConfigurationRequest{Configuration: got.Configuration})
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(again.Raw, put.Raw) {
			t.Fatalf("re-declared through the client:\n%s", cmp.Diff(string(put.Raw), string(again.Raw)))
		}
		// The stored profile assembles to the same Agent.
		fromProfile, err := c.AssembleTools(ctx, &client.AssemblyRequest{})
		if err != nil || !bytes.Equal(fromProfile.ToolDefinitions, res.ToolDefinitions) {
			t.Fatalf("assembly of the stored profile: %v\n%s", err, fromProfile.ToolDefinitions)
		}

		// A recut whose anchor the kernel no longer has fails on the client, loudly.
		moved := spec
		moved.Recut = &client.Recut{Anchor: "a paragraph the kernel never wrote", Replacement: "x"}
		var am *client.AnchorMoved
		if _, err := moved.Entry(templates); !errors.As(err, &am) || am.Reason != client.AnchorMissing || am.Alias != "Agent" {
			t.Fatalf("moved anchor: %v", err)
		}
	})
}

// TestClientRefusals: the client reads each door's refusal as *client.Error with its extras.
func TestClientRefusals(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		f := newFixture(t, s)
		ctx := context.Background()
		url := f.live(t)
		c := client.New(url, f.agent)
		_, err := c.PutProfileConfiguration(ctx, &client.ProfileConfigurationRequest{Configuration: client.ProfileConfiguration{
			KernelTools: []string{"spawn"}}})
		var e *client.Error
		if !errors.As(err, &e) || e.Status != 422 || e.Code != "validation_failed" || string(e.Extra["word"]) != `"invalid"` ||
			string(e.Extra["field"]) != `"kernel_tools"` || string(e.Extra["path"]) != `"configuration.kernel_tools[0]"` {
			t.Fatalf("err = %#v", err)
		}
		id := "01900000-0000-7000-8000-000000000099"
		_, err = c.AssembleTools(ctx, &client.AssemblyRequest{DefaultRunnerExecutorPublicID: &id})
		if !errors.As(err, &e) || e.Status != 422 || e.Code != "runner_not_eligible" || string(e.Extra["runner_executor_public_id"]) != `"`+id+`"` {
			t.Fatalf("err = %#v", err)
		}
		_, err = client.New(url, f.admin).ProfileConfiguration(ctx)
		if !errors.As(err, &e) || e.Status != 403 || e.Code != "not_agent" {
			t.Fatalf("err = %#v", err)
		}
	})
}
