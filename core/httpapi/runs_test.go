package httpapi

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/nexuskernel/nexus/core/conversations"
	"github.com/nexuskernel/nexus/core/declare"
	"github.com/nexuskernel/nexus/core/kernel"
	kmemory "github.com/nexuskernel/nexus/core/memory"
	"github.com/nexuskernel/nexus/core/model"
	"github.com/nexuskernel/nexus/core/registry"
	"github.com/nexuskernel/nexus/core/runs"
	"github.com/nexuskernel/nexus/core/store"
	"github.com/nexuskernel/nexus/core/store/storetest"
)

// runsFixture is the identity fixture with the run engine and the models catalog wired in;
// tests drive the kernel's queue by hand (drain) instead of running workers.
type runsFixture struct {
	*fixture
	engine *runs.Engine
}

func newRunsFixture(t *testing.T, s *store.Store) *runsFixture {
	t.Helper()
	f := newFixture(t, s)
	clock := func() time.Time {
		f.mu.Lock()
		defer f.mu.Unlock()
		return f.now
	}
	reg := registry.New()
	comp, err := declare.New(reg)
	if err != nil {
		t.Fatal(err)
	}
	models := model.MustBuiltin()
	tools := kernel.New(kernel.Options{
		Memory: &kernel.Memory{Provider: kmemory.New(s), Scopes: kernel.MemoryScopes{Resolver: kmemory.NewResolver(s, conversations.ConversationStates{})}, Now: clock},
		Models: &kernel.Models{Catalog: models},
	})
	e, err := runs.New(runs.Options{Store: s, Conversations: conversations.Hosted{}, Models: models, Registry: reg, Compiler: comp, Kernel: tools, Now: clock,
		Memory: kmemory.NewResolver(s, conversations.ConversationStates{})})
	if err != nil {
		t.Fatal(err)
	}
	api, err := New(Deps{Auth: f.auth, Directory: f.dir, CatalogBody: reg.CatalogBody(), Now: clock, Runs: e, Models: models})
	if err != nil {
		t.Fatal(err)
	}
	f.api = api
	return &runsFixture{fixture: f, engine: e}
}

func (f *runsFixture) drain(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	for i := 0; i < 1000; i++ {
		c, err := f.engine.ClaimKernel(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if c == nil {
			return
		}
		if err := f.engine.Evaluate(ctx, c); err != nil {
			t.Fatal(err)
		}
	}
	t.Fatal("drain did not end")
}

const runsBase = "/agent_api/v1/workspaces/default/runs"

func scriptRun(script string, extra string) map[string]any {
	step := map[string]any{"model": "mock/scripted", "prompt": script}
	if extra == "memory" {
		step["kernel_tools"] = []string{"nexus.memory.ls", "nexus.memory.read", "nexus.memory.write", "nexus.memory.edit", "nexus.memory.delete", "nexus.memory.grep"}
	}
	return map[string]any{"run": map[string]any{"steps": []any{map[string]any{"model": step}}, "approval_mode": "bypass"}}
}

// TestRunRoutes drives a run over HTTP and reads back every task with its whole result and the
// sealed request.
func TestRunRoutes(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		f := newRunsFixture(t, s)
		m := f.must(t, 201, "POST", runsBase, f.admin, scriptRun("!mock\nround 1\ncall memory_write {\"path\":\"workspace/a.md\",\"content\":\"A\"}\nround 2\ncall memory_read {\"path\":\"workspace/a.md\"}\nround 3\nsay {{last_result}}", "memory"))
		if m["replayed"] != false {
			t.Fatalf("replayed %v", m["replayed"])
		}
		run := obj(t, m, "run")
		id := run["public_id"].(string)
		if run["status"] != "running" || run["deliverable_task_key"] != "s1-model-1" || run["tasks"] != nil {
			t.Fatalf("created run %v", run)
		}
		rc := obj(t, m, "receipt")
		if rc["deliverable_task_key"] != "s1-model-1" || rc["revision"] != float64(1) {
			t.Fatalf("receipt %v", rc)
		}
		f.drain(t)
		got := obj(t, f.must(t, 200, "GET", runsBase+"/"+id, f.admin, nil), "run")
		if got["status"] != "completed" || got["answer"] != "A" {
			t.Fatalf("run %v", got)
		}
		wantTime(t, "completed_at", got["completed_at"])
		tasks := list(t, got, "tasks")
		if strings.Join(field(tasks, "key"), ",") != "s1-model-1,r2t0,r2,r3t0,r3" {
			t.Fatalf("tasks %v", field(tasks, "key"))
		}
		for _, tk := range tasks {
			if _, ok := tk["output"]; ok {
				t.Fatalf("trace row %s carries a result body", tk["key"])
			}
			read := obj(t, f.must(t, 200, "GET", runsBase+"/"+id+"/tasks/"+tk["key"].(string), f.admin, nil), "task")
			if read["status"] != "completed" {
				t.Fatalf("task %v", read)
			}
			if _, ok := read["output"]; !ok {
				t.Fatalf("settled task %s has no output", read["key"])
			}
			if read["kind"] == "model_task" {
				resp := f.do(t, "GET", runsBase+"/"+id+"/tasks/"+tk["key"].(string)+"/request", f.admin, nil, nil)
				b, _ := io.ReadAll(resp.Body)
				if resp.StatusCode != 200 || !strings.HasPrefix(string(b), `{"request":{"model":"mock/scripted","sealed_at":`) ||
					int(read["request_bytes"].(float64)) != len(b) {
					t.Fatalf("sealed request of %s: %d %d bytes, request_bytes %v", read["key"], resp.StatusCode, len(b), read["request_bytes"])
				}
				if _, ok := read["tool_definitions"].([]any); !ok {
					t.Fatalf("model task without tool_definitions: %v", read)
				}
			}
		}
		w := obj(t, f.must(t, 200, "GET", runsBase+"/"+id+"/tasks/r2t0", f.admin, nil), "task")
		if w["tool_name"] != "memory_write" || w["title"] != "wrote workspace/a.md" || w["output"] != "Wrote workspace/a.md (1 bytes)." ||
			w["is_error"] != false || w["declaring_task_key"] != "s1-model-1" || w["tool_call_id"] != "mock_r1_0" {
			t.Fatalf("write task %v", w)
		}
		if _, ok := w["structured_content"]; ok {
			t.Fatalf("memory results set no structured_content: %v", w["structured_content"])
		}
		content := w["content"].([]any)[0].(map[string]any)
		if content["type"] != "text" || content["text"] != "Wrote workspace/a.md (1 bytes)." {
			t.Fatalf("content %v", w["content"])
		}
		if ep := obj(t, w, "effect_profile"); ep["kind"] != "write" || ep["idempotency"] != "intrinsic" {
			t.Fatalf("effect profile %v", ep)
		}
		if ap := obj(t, w, "approval"); ap["origin"] != "mode" {
			t.Fatalf("approval %v", ap)
		}
		list := f.must(t, 200, "GET", runsBase+"?limit=1", f.admin, nil)
		if len(list["runs"].([]any)) != 1 {
			t.Fatalf("list %v", list)
		}
	})
}

// TestModelsListKernelTool: models_list answers the catalog page as compact JSON in content and
// as structured_content.
func TestModelsListKernelTool(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		f := newRunsFixture(t, s)
		body := scriptRun("!mock\nround 1\ncall models_list {\"limit\":1}\ncall models_list {\"limit\":0}\nround 2\nsay x", "")
		body["run"].(map[string]any)["steps"].([]any)[0].(map[string]any)["model"].(map[string]any)["kernel_tools"] = []string{"nexus.models.list"}
		id := obj(t, f.must(t, 201, "POST", runsBase, f.admin, body), "run")["public_id"].(string)
		f.drain(t)
		ok := obj(t, f.must(t, 200, "GET", runsBase+"/"+id+"/tasks/r2t0", f.admin, nil), "task")
		want := `{"models":[{"ref":"mock/scripted","provider":"mock","model":"scripted","display_name":"Mock (scripted)","capabilities":{"tools":true,"vision":true,"pdf":true,"reasoning":false,"context_window":200000,"max_output_tokens":8192},"pricing":{"input_per_mtok":0,"output_per_mtok":0,"currency":"USD"}}],"total":2,"offset":0,"next_offset":1}`
		if ok["output"] != want || ok["title"] != "models" || ok["structured_content"] == nil {
			t.Fatalf("models_list %v", ok)
		}
		bad := obj(t, f.must(t, 200, "GET", runsBase+"/"+id+"/tasks/r2t1", f.admin, nil), "task")
		if bad["is_error"] != true || bad["output"] != "invalid_arguments: limit must be an integer from 1 to 100." || bad["title"] != "models_list refused" {
			t.Fatalf("models_list refusal %v", bad)
		}
		resp := f.do(t, "GET", "/agent_api/v1/models?limit=1", f.admin, nil, nil)
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != 200 || strings.TrimSpace(string(b)) != want {
			t.Fatalf("GET models: %d %s", resp.StatusCode, b)
		}
		f.refused(t, 400, "parameter_invalid", "limit", "GET", "/agent_api/v1/models?limit=0", f.admin, nil)
		f.refused(t, 401, "unauthorized", "", "GET", "/agent_api/v1/models", "", nil)
	})
}

// TestRunRouteWords pins the member-plane words of docs/api.md#runs that the run routes answer.
func TestRunRouteWords(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		f := newRunsFixture(t, s)
		good := scriptRun("!mock\nround 1\nsay hi", "")
		// 401 and plane seal.
		f.refused(t, 401, "unauthorized", "", "POST", runsBase, "", good)
		_, exTok := f.newExecutor(t, f.admin, "default", "runner", "laptop")
		f.refused(t, 401, "unauthorized", "", "GET", runsBase, exTok, nil)
		// 404: workspace, run, task.
		f.refused(t, 404, "not_found", "", "GET", "/agent_api/v1/workspaces/nowhere/runs", f.admin, nil)
		f.refused(t, 404, "not_found", "", "GET", runsBase+"/0193c2d4-5e6f-7a8b-9c0d-1e2f3a4b5c6d", f.admin, nil)
		// 400s.
		f.refused(t, 400, "parameter_missing", "run", "POST", runsBase, f.admin, nil)
		f.refused(t, 400, "parameter_missing", "run", "POST", runsBase, f.admin, `{"run":null}`)
		f.refused(t, 400, "parameter_invalid", "", "POST", runsBase, f.admin, `[1]`)
		f.refused(t, 400, "parameter_invalid", "", "POST", runsBase, f.admin, `{"run":`)
		e := wantError(t, f.doWith(t, "POST", runsBase, f.admin, good, map[string]string{"Idempotency-Key": strings.Repeat("k", 37)}), 400, "parameter_invalid")
		if e["path"] != "Idempotency-Key" {
			t.Fatalf("idempotency path %v", e["path"])
		}
		f.refused(t, 400, "parameter_invalid", "after", "GET", runsBase+"?after=zzz", f.admin, nil)
		f.refused(t, 400, "parameter_invalid", "limit", "GET", runsBase+"?limit=101", f.admin, nil)
		// A run read's wait is whole seconds, 0..30, given once.
		someRun := runsBase + "/0193c2d4-5e6f-7a8b-9c0d-1e2f3a4b5c6d"
		for _, q := range []string{"?wait=", "?wait=x", "?wait=-1", "?wait=31", "?wait=1.5", "?wait=05", "?wait=+1", "?wait=1&wait=2"} {
			e := f.refused(t, 400, "parameter_invalid", "wait", "GET", someRun+q, f.admin, nil)
			if e["message"] != "wait must be an integer from 0 to 30 (seconds)." {
				t.Fatalf("wait refusal %q: %v", q, e["message"])
			}
		}
		f.refused(t, 404, "not_found", "", "GET", someRun+"?wait=0", f.admin, nil)
		f.refused(t, 404, "not_found", "", "GET", someRun+"?wait=30", f.admin, nil)
		f.refused(t, 400, "parameter_invalid", "after", "GET", "/agent_api/v1/inbox?after=zzz", f.admin, nil)
		f.refused(t, 400, "parameter_invalid", "limit", "GET", "/agent_api/v1/inbox?limit=201", f.admin, nil)
		// 413.
		big := `{"run":{"steps":[],"approval_mode":"bypass","x":"` + strings.Repeat("x", 1<<20) + `"}}`
		f.refused(t, 413, "content_too_large", "", "POST", runsBase, f.admin, big)
		// 422s.
		f.refused(t, 422, "edge_authoring_refused", "run.tasks", "POST", runsBase, f.admin, `{"run":{"steps":[],"approval_mode":"bypass","tasks":[]}}`)
		f.refused(t, 422, "invalid_approval_mode", "run.approval_mode", "POST", runsBase, f.admin, `{"run":{"steps":[{"model":{"model":"mock/scripted","prompt":"x"}}]}}`)
		f.refused(t, 422, "invalid_approval_rules", "run.approval_rules[0]", "POST", runsBase, f.admin, `{"run":{"steps":[{"model":{"model":"mock/scripted","prompt":"x"}}],"approval_mode":"rules","approval_rules":[7]}}`)
		f.refused(t, 422, "invalid_prompt_mechanism", "run.prompt_mechanism", "POST", runsBase, f.admin, `{"run":{"steps":[{"model":{"model":"mock/scripted","prompt":"x"}}],"approval_mode":"bypass","prompt_mechanism":"x"}}`)
		e = f.refused(t, 422, "reserved_tool_name", "steps[0].tool.name", "POST", runsBase, f.admin, `{"run":{"steps":[{"tool":{"name":"delegate_task"}},{"model":{"model":"mock/x","prompt":"x"}}],"approval_mode":"bypass"}}`)
		if errs, _ := e["errors"].([]any); len(errs) != 2 {
			t.Fatalf("errors %v", e["errors"])
		}
		f.refused(t, 422, "unknown_model", "steps[0].model.model", "POST", runsBase, f.admin, `{"run":{"steps":[{"model":{"model":"mock/x","prompt":"x"}}],"approval_mode":"bypass"}}`)
		f.refused(t, 409, "duplicate_task_key", "steps[1].model.key", "POST", runsBase, f.admin, `{"run":{"steps":[{"model":{"model":"mock/scripted","prompt":"x","key":"a"}},{"model":{"model":"mock/scripted","prompt":"x","key":"a"}}],"approval_mode":"bypass"}}`)

		// Idempotency: 201, replay 200, mismatch 409.
		resp := f.doWith(t, "POST", runsBase, f.admin, good, map[string]string{"Idempotency-Key": "abc"})
		if resp.StatusCode != 201 {
			t.Fatalf("first create %d", resp.StatusCode)
		}
		resp = f.doWith(t, "POST", runsBase, f.admin, good, map[string]string{"Idempotency-Key": "abc"})
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != 200 || !strings.Contains(string(b), `"replayed":true`) {
			t.Fatalf("replay %d %s", resp.StatusCode, b)
		}
		wantError(t, f.doWith(t, "POST", runsBase, f.admin, scriptRun("other", ""), map[string]string{"Idempotency-Key": "abc"}), 409, "idempotency_envelope_mismatch")

		// A pending run: request_not_sealed, start, not_startable.
		pend := `{"run":{"steps":[{"model":{"model":"mock/scripted","prompt":"!mock\nround 1\nsay hi"}}],"approval_mode":"ask","start":false}}`
		id := obj(t, f.must(t, 201, "POST", runsBase, f.admin, pend), "run")["public_id"].(string)
		f.refused(t, 404, "request_not_sealed", "", "GET", runsBase+"/"+id+"/tasks/s1-model-1/request", f.admin, nil)
		f.refused(t, 404, "not_found", "", "GET", runsBase+"/"+id+"/tasks/nope", f.admin, nil)
		f.refused(t, 409, "not_adjudicable", "", "POST", runsBase+"/"+id+"/tasks/s1-model-1/approve", f.admin, nil)
		f.must(t, 200, "POST", runsBase+"/"+id+"/start", f.admin, nil)
		f.refused(t, 409, "not_startable", "", "POST", runsBase+"/"+id+"/start", f.admin, nil)
		f.refused(t, 409, "not_awaiting_approval", "", "POST", runsBase+"/"+id+"/tasks/s1-model-1/approve", f.admin, nil)
		f.refused(t, 400, "parameter_invalid", "reason", "POST", runsBase+"/"+id+"/tasks/s1-model-1/deny", f.admin, `{"reason":5}`)
		f.refused(t, 409, "await_not_resolvable", "", "POST", runsBase+"/"+id+"/tasks/s1-model-1/resolution", f.admin, `{"content":"x"}`)
		f.refused(t, 400, "parameter_invalid", "", "POST", runsBase+"/"+id+"/tasks/s1-model-1/resolution", f.admin, `"x"`)
		f.refused(t, 409, "not_a_branch", "", "POST", runsBase+"/"+id+"/tasks/s1-model-1/cancel", f.admin, nil)
		// The resolution door takes 2 MiB; 1 MiB does not refuse it as too large.
		f.refused(t, 409, "await_not_resolvable", "", "POST", runsBase+"/"+id+"/tasks/s1-model-1/resolution", f.admin, `{"content":"`+strings.Repeat("x", 1<<20)+`"}`)
		f.refused(t, 413, "content_too_large", "", "POST", runsBase+"/"+id+"/tasks/s1-model-1/resolution", f.admin, `{"content":"`+strings.Repeat("x", 2<<20)+`"}`)
		// 403 for a plain member without standing; reads are allowed.
		_, liTok := f.newUser(t, f.admin, "default", "li", "member")
		f.must(t, 200, "GET", runsBase+"/"+id, liTok, nil)
		f.refused(t, 403, "not_authorized", "", "POST", runsBase+"/"+id+"/stop", liTok, nil)
		f.refused(t, 403, "not_authorized", "", "POST", runsBase+"/"+id+"/tasks", liTok, `{"steps":[{"model":{"model":"mock/scripted","prompt":"x"}}]}`)
		f.refused(t, 403, "not_authorized", "", "POST", runsBase+"/"+id+"/tasks/s1-model-1/approve", liTok, nil)
		// Append words.
		f.refused(t, 400, "parameter_missing", "steps", "POST", runsBase+"/"+id+"/tasks", f.admin, nil)
		f.refused(t, 422, "reserved_tool_name", "steps[0].tool.name", "POST", runsBase+"/"+id+"/tasks", f.admin, `{"steps":[{"tool":{"name":"nexus.graph.wait"}}]}`)
		e = f.refused(t, 409, "stale_revision", "", "POST", runsBase+"/"+id+"/tasks", f.admin, `{"steps":[{"model":{"model":"mock/scripted","prompt":"x"}}],"expected_revision":4}`)
		if e["current_revision"] != float64(1) {
			t.Fatalf("current_revision %v", e["current_revision"])
		}
		f.refused(t, 409, "duplicate_task_key", "steps[1].model.key", "POST", runsBase+"/"+id+"/tasks", f.admin, `{"steps":[{"model":{"model":"mock/scripted","prompt":"x","key":"k1"}},{"model":{"model":"mock/scripted","prompt":"x","key":"k1"}}]}`)
		ap := f.must(t, 201, "POST", runsBase+"/"+id+"/tasks", f.admin, `{"steps":[{"model":{"model":"mock/scripted","prompt":"!mock\nround 1\nsay bye"}}],"expected_revision":1}`)
		if obj(t, ap, "receipt")["deliverable_task_key"] != "s2-model-1" {
			t.Fatalf("append receipt %v", ap)
		}
		f.drain(t)
		f.refused(t, 409, "run_not_appendable", "", "POST", runsBase+"/"+id+"/tasks", f.admin, `{"steps":[{"model":{"model":"mock/scripted","prompt":"x"}}]}`)
		f.refused(t, 409, "already_terminal", "", "POST", runsBase+"/"+id+"/stop", f.admin, nil)
		f.refused(t, 400, "parameter_invalid", "force", "POST", runsBase+"/"+id+"/stop", f.admin, `{"force":"yes"}`)
		f.must(t, 200, "GET", "/agent_api/v1/inbox", f.admin, nil)
	})
}

// TestApprovalOverHTTP: a held row is listed on the creator's inbox with its frozen profile,
// and approve and deny answer with the moved row.
func TestApprovalOverHTTP(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		f := newRunsFixture(t, s)
		body := scriptRun("!mock\nround 1\ncall memory_ls {}\ncall memory_delete {\"path\":\"workspace/x\"}\nround 2\nsay {{last_result}}", "memory")
		run := body["run"].(map[string]any)
		run["approval_mode"] = "rules"
		run["approval_rules"] = []any{map[string]any{"tool": "memory_ls", "verdict": "allow"}, map[string]any{"tool": "memory_delete", "verdict": "ask"}}
		id := obj(t, f.must(t, 201, "POST", runsBase, f.admin, body), "run")["public_id"].(string)
		f.drain(t)
		inbox := list(t, f.must(t, 200, "GET", "/agent_api/v1/inbox", f.admin, nil), "tasks")
		if len(inbox) != 1 || inbox[0]["kind"] != "approval" || inbox[0]["task_key"] != "r2t1" || inbox[0]["tool_name"] != "memory_delete" {
			t.Fatalf("inbox %v", inbox)
		}
		if ep := obj(t, inbox[0], "effect_profile"); ep["destructive"] != true {
			t.Fatalf("inbox effect profile %v", ep)
		}
		r := obj(t, f.must(t, 200, "GET", runsBase+"/"+id, f.admin, nil), "run")
		att := r["attention"].([]any)[0].(map[string]any)
		if att["reason"] != "approval_required" {
			t.Fatalf("attention %v", att)
		}
		d := obj(t, f.must(t, 200, "POST", runsBase+"/"+id+"/tasks/r2t1/deny", f.admin, `{"reason":"keep it"}`), "task")
		if d["status"] != "failed" || obj(t, d, "error")["key"] != "approval_denied" || obj(t, d, "error")["detail"] != "keep it" || obj(t, d, "approval")["origin"] != "human" {
			t.Fatalf("denied %v", d)
		}
		f.drain(t)
		r = obj(t, f.must(t, 200, "GET", runsBase+"/"+id, f.admin, nil), "run")
		if r["status"] != "completed" || r["answer"] != "<tool_use_error>The tool call was declined at approval. (approval_denied) keep it</tool_use_error>" {
			t.Fatalf("run %v", r)
		}
		if len(list(t, f.must(t, 200, "GET", "/agent_api/v1/inbox", f.admin, nil), "tasks")) != 0 {
			t.Fatal("a settled row stays listed")
		}
		// A run an agent created: its held rows go to the agent's steward (admin), and the agent
		// sees them too; the agent approves with origin agent.
		run["approval_mode"] = "ask"
		delete(run, "approval_rules")
		id = obj(t, f.must(t, 201, "POST", runsBase, f.agent, body), "run")["public_id"].(string)
		f.drain(t)
		for who, tok := range map[string]string{"steward": f.admin, "agent": f.agent} {
			items := list(t, f.must(t, 200, "GET", "/agent_api/v1/inbox", tok, nil), "tasks")
			if len(items) != 2 || items[0]["run_public_id"] != id {
				t.Fatalf("%s inbox: %v", who, items)
			}
		}
		a := obj(t, f.must(t, 200, "POST", runsBase+"/"+id+"/tasks/r2t0/approve", f.agent, nil), "task")
		if a["status"] != "running" || obj(t, a, "approval")["origin"] != "agent" {
			t.Fatalf("agent approval %v", a)
		}
		page := f.must(t, 200, "GET", "/agent_api/v1/inbox?limit=1", f.admin, nil)
		next := obj(t, page, "pagination")["next_after"]
		if len(list(t, page, "tasks")) != 1 || next != nil {
			t.Fatalf("one held row left: %v", page)
		}
	})
}

func (f *fixture) doWith(t *testing.T, method, path, token string, body any, hdr map[string]string) *http.Response {
	t.Helper()
	var r io.Reader
	switch b := body.(type) {
	case string:
		r = strings.NewReader(b)
	case nil:
	default:
		r = strings.NewReader(fmt.Sprint(mustJSON(t, b)))
	}
	return f.do(t, method, path, token, r, hdr)
}
