package e2e

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/nexuskernel/nexus/core/profiles"
	"github.com/nexuskernel/nexus/core/registry"
	"github.com/nexuskernel/nexus/core/store"
	"github.com/nexuskernel/nexus/core/store/storetest"
	"github.com/nexuskernel/nexus/internal/testserver"
	"github.com/nexuskernel/nexus/sdk/announce"
	"github.com/nexuskernel/nexus/sdk/client"
)

// announceRunner stores a Runner's announcement straight in the instance's store: the test
// drives acceptance and discovery, which read announcements, not the executor plane's door.
func announceRunner(t *testing.T, srv *testserver.Instance, publicID string, env string, tools []string, docs ...announce.Document) {
	t.Helper()
	var ts []announce.Tool
	for _, n := range tools {
		d := "Runs " + n + " on this machine."
		ts = append(ts, announce.Tool{Name: n, Description: &d, InputSchema: json.RawMessage(`{"type":"object","properties":{"env":{"type":"string"}}}`),
			EffectProfile: announce.Announced(announce.EffectReadOnly)})
	}
	st := srv.Server().Store()
	ctx := context.Background()
	err := st.Write(ctx, func(tx *store.Tx) error {
		ex, err := store.ExecutorByPublicID(ctx, tx, publicID)
		if err != nil {
			return err
		}
		return profiles.PutAnnouncement(ctx, tx, ex.ID, announce.Announcement{Tools: ts, Environment: json.RawMessage(env), Documents: docs}, time.Now())
	})
	if err != nil {
		t.Fatal(err)
	}
}

// discoveryScript is one turn that uses every discovery tool: searches for a deferred alias
// and a Runner's deferred tool, reads the Runners and the models, calls the alias through
// tool_call (and a name the run does not have), loads a skill, and answers the skill's text.
func discoveryScript(workstation string) string {
	return "Find what you need.\n!mock\nround 1\n" +
		"call tool_search {\"query\":\"list_models\"}\n" +
		"call tool_search {\"query\":\"" + strings.ToUpper(workstation) + " Deploy\",\"limit\":1}\n" +
		"call runners_list {}\n" +
		"call models_list {\"limit\":1}\n" +
		"round 2\n" +
		"call tool_call {\"name\":\"list_models\",\"input\":{\"query\":\"SCRIPTED\"}}\n" +
		"call tool_call {\"name\":\"logs\",\"input\":{}}\n" +
		"call runners_list {\"verbose\":true}\n" +
		"call skill {\"name\":\"release-notes\"}\n" +
		"round 3\nsay {{last_result}}"
}

// TestDiscoveryOverHTTP drives the discovery, runner, model and skill tools through a
// conversation turn over real HTTP with the mock model, on each store, and reads back every
// task and the sealed request.
func TestDiscoveryOverHTTP(t *testing.T) {
	t.Parallel()
	for _, d := range storetest.Dialects() {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			srv := testserver.Start(t, testserver.Options{Dialect: d})
			admin := srv.Client()
			ctx := context.Background()
			var runners []string
			for _, name := range []string{"Workstation", "Mac"} {
				ex, err := admin.CreateExecutor(ctx, &client.CreateExecutorRequest{Kind: "runner", DisplayName: name, WorkspacePublicID: "default"})
				if err != nil {
					t.Fatal(err)
				}
				runners = append(runners, ex.Executor.PublicID)
			}
			workstation, mac := runners[0], runners[1]
			announceRunner(t, srv, workstation, `{"os":"linux"}`, []string{"deploy"})
			announceRunner(t, srv, mac, `{"os":"darwin","arch":"arm64"}`, []string{"logs", "skill"},
				announce.Document{Name: "signing", Description: "Code signing on macOS."})
			desc := "How we write release notes."
			if _, err := admin.MemoryWrite(ctx, "default", &client.MemoryWriteRequest{Path: "workspace/skills/release-notes",
				Content: "# Release notes\nShort, in the past tense.\n", Description: &desc}); err != nil {
				t.Fatal(err)
			}
			agent, err := admin.CreateAgent(ctx, "default", &client.CreateAgentRequest{Handle: "ops", DisplayName: "Ops"})
			if err != nil {
				t.Fatal(err)
			}
			bot := srv.ClientWith(agent.Token)
			mode := "bypass"
			if _, err := bot.PutProfileConfiguration(ctx, &client.ProfileConfigurationRequest{Configuration: client.ProfileConfiguration{
				ToolDefinitions: json.RawMessage(`[{"type":"function","function":{"name":"list_models"},"canonical":"nexus.models.list","defer_loading":true}]`),
				KernelTools:     []string{"nexus.tools.search", "nexus.tools.call", "nexus.runners.list", "nexus.models.list", "nexus.skill.load"},
				// Mac first: the candidates' order is the profile's, not the selection's.
				RunnerExecutorPublicIDs: []string{mac, workstation},
				ApprovalMode:            &mode,
			}}); err != nil {
				t.Fatal(err)
			}
			conv, err := admin.CreateConversation(ctx, "default", map[string]any{"answering_agent_public_id": agent.Agent.PublicID,
				"default_runner_executor_public_id": workstation})
			if err != nil {
				t.Fatal(err)
			}
			posted, err := admin.PostMessage(ctx, "default", conv.Conversation.PublicID, map[string]any{"text": discoveryScript(workstation)}, "")
			if err != nil {
				t.Fatal(err)
			}
			run := waitRun(t, admin, posted.Run.PublicID, 30*time.Second)
			id := run.PublicID
			task := func(key string) *client.TaskResponse {
				t.Helper()
				tk, err := admin.Task(ctx, "default", id, key)
				if err != nil {
					t.Fatalf("%s: %v", key, err)
				}
				return tk
			}
			body := "# Release notes\nShort, in the past tense.\n"
			if run.Status != "completed" || deref(run.Answer) != body {
				t.Fatalf("run %s answer %q", run.Status, deref(run.Answer))
			}

			// The first round offers the discovery pair and hides the deferred entries; its
			// opening entry carries the skills block before the message.
			req, err := admin.SealedRequest(ctx, "default", id, "r1")
			if err != nil {
				t.Fatal(err)
			}
			var sealed struct {
				Request struct {
					Entries        []json.RawMessage `json:"entries"`
					RequestOptions struct {
						Tools []struct {
							Function struct {
								Name string `json:"name"`
							} `json:"function"`
						} `json:"tools"`
					} `json:"request_options"`
				} `json:"request"`
			}
			if err := json.Unmarshal(req, &sealed); err != nil {
				t.Fatal(err)
			}
			var offered []string
			for _, tl := range sealed.Request.RequestOptions.Tools {
				offered = append(offered, tl.Function.Name)
			}
			if diff := cmp.Diff([]string{"models_list", "runners_list", "skill", "tool_call", "tool_search"}, offered); diff != "" {
				t.Fatalf("offered tools (-want +got):\n%s", diff)
			}
			block := "Skills available now. Before you act on a skill listed below, load its full instructions by calling the tool named at the start of its line, for example skill, with the skill's name.\n- skill / release-notes: How we write release notes."
			if !strings.HasPrefix(string(sealed.Request.Entries[0]), `{"role":"user","content":[{"type":"text","text":`+jsonString(block)+`},`) {
				t.Fatalf("opening entry %s", sealed.Request.Entries[0])
			}
			var r1 struct {
				Task struct {
					ToolDefinitions json.RawMessage `json:"tool_definitions"`
					SkillCatalog    json.RawMessage `json:"skill_catalog"`
					Environment     json.RawMessage `json:"environment"`
				} `json:"task"`
			}
			if err := json.Unmarshal(task("r1").Raw, &r1); err != nil {
				t.Fatal(err)
			}
			if got := string(r1.Task.SkillCatalog); got != `[{"callable":"skill","name":"release-notes","description":"How we write release notes.","source":"workspace"}]` {
				t.Fatalf("frozen skill catalog %s", got)
			}

			texts := map[string]struct{ output, title string }{
				"r2t0": {`{"tools":[{"name":"list_models","definition":` + aliasDefinition(t) + `,"skills":[]}],"truncated":false}`, "tool search"},
				"r2t1": {`{"tools":[{"name":"deploy","definition":{"type":"function","function":{"name":"deploy","description":"Runs deploy on this machine.","parameters":{"type":"object","properties":{"env":{"type":"string"}}},"strict":false}},` +
					`"route":{"kind":"runner","runner_executor_public_id":"` + workstation + `","tool_name":"deploy"},"skills":[]}],"truncated":false}`, "tool search"},
				"r2t2": {`{"current_runner_executor_public_id":"` + workstation + `","runners":[` +
					`{"runner_executor_public_id":"` + mac + `","display_name":"Mac","environment":{"os":"darwin","arch":"arm64"}},` +
					`{"runner_executor_public_id":"` + workstation + `","display_name":"Workstation","environment":{"os":"linux"}}]}`, "runner environments"},
				"r2t3": {`{"models":[{"ref":"mock/scripted","provider":"mock","model":"scripted","display_name":"Mock (scripted)","capabilities":{"tools":true,"vision":true,"pdf":true,"reasoning":false,"context_window":200000,"max_output_tokens":8192},"pricing":{"input_per_mtok":0,"output_per_mtok":0,"currency":"USD"}}],"total":2,"offset":0,"next_offset":1}`, "models"},
				"r3t1": {`tool_not_declared: "logs" is not a tool this run may call.`, "tool_call refused"},
				"r3t2": {"invalid_arguments: verbose is not a parameter; this tool takes no parameters.", "runners_list refused"},
				"r3t3": {body, "read workspace/skills/release-notes"},
			}
			for key, want := range texts {
				tk := task(key).Task
				if tk.Status != "completed" || deref(tk.Output) != want.output || deref(tk.Title) != want.title {
					t.Errorf("%s: %s title %q\n got %s\nwant %s", key, tk.Status, deref(tk.Title), deref(tk.Output), want.output)
				}
				if isErr := strings.HasSuffix(want.title, "refused"); deref(tk.IsError) != isErr {
					t.Errorf("%s: is_error %v", key, deref(tk.IsError))
				}
				if strings.HasPrefix(want.output, "{") && string(deref(tk.StructuredContent)) != want.output {
					t.Errorf("%s: structured_content %s", key, deref(tk.StructuredContent))
				}
			}

			// tool_call's child runs the alias as a direct call would, and the call mirrors it.
			call, child := task("r3t0"), task("r3t0-call-1")
			if child.Task.ToolName != "models_list" || child.Task.ToolAlias != "list_models" || string(child.Task.ToolInput) != `{"query":"SCRIPTED"}` ||
				child.Task.Origin != "model" || child.Task.Status != "completed" || !strings.Contains(string(child.Raw), `"parent_key":"r3t0"`) {
				t.Fatalf("child %s", child.Raw)
			}
			if call.Task.Status != "completed" || deref(call.Task.Output) != deref(child.Task.Output) || deref(call.Task.Title) != "tool call" ||
				string(deref(call.Task.StructuredContent)) != string(deref(child.Task.StructuredContent)) || deref(call.Task.IsError) {
				t.Fatalf("call %s\nchild %s", call.Raw, child.Raw)
			}
			if !strings.HasPrefix(deref(call.Task.Output), `{"models":[{"ref":"mock/scripted"`) || !strings.HasSuffix(deref(call.Task.Output), `"total":1,"offset":0,"next_offset":null}`) {
				t.Fatalf("models through tool_call %q", deref(call.Task.Output))
			}
		})
	}
}

func jsonString(s string) string {
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s)
	return strings.TrimSuffix(b.String(), "\n")
}

// aliasDefinition is list_models as the provider would be offered it: models_list's catalog
// definition under the alias's name (an alias without texts of its own renders the kernel's),
// with the strict default.
func aliasDefinition(t *testing.T) string {
	t.Helper()
	e, ok := registry.New().Resolve("models_list")
	if !ok {
		t.Fatal("models_list is not registered")
	}
	def, err := registry.Definition(e, func(w string) string {
		if w == "models_list" {
			return "list_models"
		}
		return w
	})
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSuffix(string(def), "}}") + `,"strict":false}}`
}

// TestDiscoveryStandaloneRun: on a standalone run over HTTP, on each store, tool_call is no
// approval bypass (the child meets the rules on its own name and the call mirrors its denial),
// a skill callable with an empty frozen catalog is neither offered nor listed yet still answers
// skill_unknown, and tool_search cuts its answer at the limit and says so.
func TestDiscoveryStandaloneRun(t *testing.T) {
	t.Parallel()
	for _, d := range storetest.Dialects() {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			srv := testserver.Start(t, testserver.Options{Dialect: d})
			c := srv.Client()
			ctx := context.Background()
			script := "Look around.\n!mock\nround 1\n" +
				"call tool_call {\"name\":\"memory_read\",\"input\":{\"path\":\"workspace/plan.md\"}}\n" +
				"call skill {\"name\":\"release-notes\"}\n" +
				"call tool_search {\"query\":\"memory\",\"limit\":1}\n" +
				"round 2\nsay {{last_result}}"
			created, err := c.CreateRun(ctx, "default", map[string]any{
				"steps": []any{map[string]any{"model": map[string]any{"model": "mock/scripted", "prompt": script,
					"kernel_tools": []string{"nexus.tools.search", "nexus.tools.call", "nexus.skill.load", "nexus.memory.read", "nexus.memory.ls"}}}},
				"approval_mode": "rules",
				"approval_rules": []any{map[string]any{"tool": "tool_*", "verdict": "allow"}, map[string]any{"tool": "skill", "verdict": "allow"},
					map[string]any{"tool": "memory_read", "verdict": "deny", "reason": "reads are off today"}},
			}, "")
			if err != nil {
				t.Fatal(err)
			}
			run := waitRun(t, c, created.Run.PublicID, 30*time.Second)
			id := run.PublicID
			if run.Status != "completed" {
				t.Fatalf("run %s", run.Status)
			}
			task := func(key string) *client.Task {
				t.Helper()
				tk, err := c.Task(ctx, "default", id, key)
				if err != nil {
					t.Fatalf("%s: %v", key, err)
				}
				return &tk.Task
			}
			call, child := task("r2t0"), task("r2t0-call-1")
			denied := client.TaskError{Key: "approval_denied", Detail: "reads are off today"}
			if child.Status != "failed" || child.Error == nil || *child.Error != denied || call.Status != "failed" || call.Error == nil || *call.Error != denied {
				t.Fatalf("the child was not held to its own rule: call %s %+v, child %s %+v", call.Status, call.Error, child.Status, child.Error)
			}
			if sk := task("r2t1"); sk.Status != "completed" || deref(sk.Output) != "skill_unknown: release-notes" || !deref(sk.IsError) || deref(sk.Title) != "skill refused" {
				t.Fatalf("skill %+v", sk)
			}
			search := task("r2t2")
			got, trunc := searchNames(t, deref(search.Output))
			if len(got) != 1 || !trunc || got[0] != "memory_ls" {
				t.Fatalf("search %s", deref(search.Output))
			}
			if deref(run.Answer) != deref(search.Output) {
				t.Fatalf("answer %q", deref(run.Answer))
			}
			req, err := c.SealedRequest(ctx, "default", id, "s1-model-1")
			if err != nil {
				t.Fatal(err)
			}
			if strings.Contains(string(req), "Skills available now") || strings.Contains(string(req), `"name":"skill"`) {
				t.Fatalf("an empty catalog's callable was offered or listed: %s", req)
			}
			// The paired result the continuation read is the child's failure.
			req, err = c.SealedRequest(ctx, "default", id, "r2")
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(string(req), jsonString("<tool_use_error>The tool call was declined at approval. (approval_denied) reads are off today</tool_use_error>")) {
				t.Fatalf("continuation request %s", req)
			}
		})
	}
}

func searchNames(t *testing.T, body string) (names []string, truncated bool) {
	t.Helper()
	var a struct {
		Tools []struct {
			Name string `json:"name"`
		} `json:"tools"`
		Truncated bool `json:"truncated"`
	}
	if err := json.Unmarshal([]byte(body), &a); err != nil {
		t.Fatalf("%s: %v", body, err)
	}
	for _, tl := range a.Tools {
		names = append(names, tl.Name)
	}
	return names, a.Truncated
}
