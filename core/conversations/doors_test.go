package conversations_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/nexuskernel/nexus/core/conversations"
	"github.com/nexuskernel/nexus/core/refusal"
	"github.com/nexuskernel/nexus/core/runs"
	"github.com/nexuskernel/nexus/core/steps"
	"github.com/nexuskernel/nexus/core/store"
	"github.com/nexuskernel/nexus/core/store/storetest"
)

// TestCreateRefusals pins every word of the create door (docs/api.md#runs) with its
// status kind and path; nothing is created by a refused envelope.
func TestCreateRefusals(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		h := newHarness(t, s, harnessOptions{})
		m := `{"model":{"model":"mock/scripted","prompt":"hi"}}`
		wrap := func(steps string) string { return `{"steps":[` + steps + `],"approval_mode":"bypass"}` }
		cases := []struct {
			name, run string
			kind      refusal.Kind
			code      string
			path      string
		}{
			{"edges", `{"steps":[` + m + `],"approval_mode":"bypass","tasks":[]}`, refusal.Unprocessable, steps.CodeEdgeAuthoringRefused, "run.tasks"},
			{"deliverable", `{"steps":[` + m + `],"approval_mode":"bypass","deliverable":"x"}`, refusal.Unprocessable, steps.CodeEdgeAuthoringRefused, "run.deliverable"},
			{"tools on the run", `{"steps":[` + m + `],"approval_mode":"bypass","tools":[]}`, refusal.Unprocessable, steps.CodeEdgeAuthoringRefused, "run.tools"},
			{"compaction", `{"steps":[` + m + `],"approval_mode":"bypass","compaction_policy":{}}`, refusal.Unprocessable, steps.CodeEdgeAuthoringRefused, "run.compaction_policy"},
			{"no steps", `{"approval_mode":"bypass"}`, refusal.BadRequest, refusal.CodeParameterMissing, "run.steps"},
			{"mode missing", `{"steps":[` + m + `]}`, refusal.Unprocessable, steps.CodeInvalidApprovalMode, "run.approval_mode"},
			{"mode wrong", `{"steps":[` + m + `],"approval_mode":"yolo"}`, refusal.Unprocessable, steps.CodeInvalidApprovalMode, "run.approval_mode"},
			{"rules", `{"steps":[` + m + `],"approval_mode":"rules","approval_rules":[{"tool":"x","verdict":"allow"},{"tool":"y"}]}`, refusal.Unprocessable, steps.CodeInvalidApprovalRules, "run.approval_rules[1].verdict"},
			{"prompt mechanism", `{"steps":[` + m + `],"approval_mode":"bypass","prompt_mechanism":"fancy"}`, refusal.Unprocessable, steps.CodeInvalidPromptMechanism, "run.prompt_mechanism"},
			{"start", `{"steps":[` + m + `],"approval_mode":"bypass","start":"yes"}`, refusal.Unprocessable, refusal.CodeValidationFailed, "run.start"},
			{"runner", `{"steps":[` + m + `],"approval_mode":"bypass","default_runner_executor_public_id":"0193c2d4-5e6f-7a8b-9c0d-1e2f3a4b5c6d"}`, refusal.Unprocessable, steps.CodeRunnerNotEligible, "run.default_runner_executor_public_id"},
			{"empty steps", wrap(``), refusal.Unprocessable, refusal.CodeValidationFailed, "steps"},
			{"too many steps", wrap(strings.TrimSuffix(strings.Repeat(m+",", 65), ",")), refusal.Unprocessable, refusal.CodeValidationFailed, "steps"},
			{"unknown verb", wrap(`{"shell":{}}`), refusal.Unprocessable, steps.CodeUnknownStepVerb, "steps[0].shell"},
			{"ask verb", wrap(`{"ask":{}}`), refusal.Unprocessable, steps.CodeStepVerbUnavailable, "steps[0].ask"},
			{"wait verb", wrap(`{"wait":{}}`), refusal.Unprocessable, steps.CodeStepVerbUnavailable, "steps[0].wait"},
			{"parallel verb", wrap(`{"parallel":{}}`), refusal.Unprocessable, steps.CodeStepVerbUnavailable, "steps[0].parallel"},
			{"unknown option", wrap(`{"model":{"model":"mock/scripted","prompt":"hi","temperature":1}}`), refusal.Unprocessable, steps.CodeUnknownStepOption, "steps[0].model.temperature"},
			{"unknown model", wrap(`{"model":{"model":"mock/nope","prompt":"hi"}}`), refusal.Unprocessable, runs.CodeUnknownModel, "steps[0].model.model"},
			{"prompt required", wrap(`{"model":{"model":"mock/scripted","prompt":""}}`), refusal.Unprocessable, steps.CodePromptRequired, "steps[0].model.prompt"},
			{"prompt missing", wrap(`{"model":{"model":"mock/scripted"}}`), refusal.Unprocessable, steps.CodePromptRequired, "steps[0].model.prompt"},
			{"invalid tools", wrap(`{"model":{"model":"mock/scripted","prompt":"hi","tools":[]}}`), refusal.Unprocessable, steps.CodeInvalidTools, "steps[0].model.tools"},
			{"declaration word", wrap(`{"model":{"model":"mock/scripted","prompt":"hi","tools":[{"type":"function","function":{"name":"memory_read","description":"paraphrase","parameters":{"type":"object"}}}]}}`), refusal.Unprocessable, "kernel_tool_redefined", "steps[0].model.tools[0]"},
			{"kernel import word", wrap(`{"model":{"model":"mock/scripted","prompt":"hi","kernel_tools":["memory_read"]}}`), refusal.Unprocessable, steps.CodeInvalidTools, "steps[0].model.kernel_tools[0]"},
			{"capability", wrap(`{"model":{"model":"mock/text-only","prompt":"hi"}}`), 0, "", ""},
			{"malformed attachment", wrap(`{"model":{"model":"mock/scripted","prompt":"hi","attachments":["nope"]}}`), refusal.Unprocessable, steps.CodeInvalidAttachments, "steps[0].model.attachments[0]"},
			{"unknown attachment", wrap(`{"model":{"model":"mock/scripted","prompt":"","attachments":["6f1b2c3d-0000-4000-8000-000000000001"]}}`), refusal.Unprocessable, runs.CodeUnknownInputUpload, "steps[0].model.attachments[0]"},
			{"unknown result key", wrap(`{"model":{"model":"mock/scripted","prompt":"hi","results":["nope"]}}`), refusal.Unprocessable, steps.CodeUnknownResultKey, "steps[0].model.results[0]"},
			{"on_failure", wrap(`{"model":{"model":"mock/scripted","prompt":"hi","on_failure":"explode"}}`), refusal.Unprocessable, steps.CodeInvalidOnFailure, "steps[0].model.on_failure"},
			{"visibility", wrap(`{"model":{"model":"mock/scripted","prompt":"hi","visibility":"secret"}}`), refusal.Unprocessable, steps.CodeInvalidVisibility, "steps[0].model.visibility"},
			{"reserved key r", wrap(`{"model":{"model":"mock/scripted","prompt":"hi","key":"r2"}}`), refusal.Unprocessable, steps.CodeReservedTaskKey, "steps[0].model.key"},
			{"reserved key s", wrap(`{"model":{"model":"mock/scripted","prompt":"hi","key":"s1-model-1"}}`), refusal.Unprocessable, steps.CodeReservedTaskKey, "steps[0].model.key"},
			{"bad key", wrap(`{"model":{"model":"mock/scripted","prompt":"hi","key":"-x"}}`), refusal.Unprocessable, refusal.CodeValidationFailed, "steps[0].model.key"},
			{"duplicate key", wrap(`{"model":{"model":"mock/scripted","prompt":"hi","key":"a"}},{"model":{"model":"mock/scripted","prompt":"hi","key":"a"}}`), refusal.Conflict, steps.CodeDuplicateTaskKey, "steps[1].model.key"},
			{"reserved tool wire", wrap(`{"tool":{"name":"delegate_task"}}`), refusal.Unprocessable, steps.CodeReservedToolName, "steps[0].tool.name"},
			{"reserved tool canonical", wrap(`{"tool":{"name":"nexus.memory.read"}}`), refusal.Unprocessable, steps.CodeReservedToolName, "steps[0].tool.name"},
			{"reserved models_list", wrap(`{"tool":{"name":"models_list"}}`), refusal.Unprocessable, steps.CodeReservedToolName, "steps[0].tool.name"},
			{"tool input", wrap(`{"tool":{"name":"fetch","input":[1]}}`), refusal.Unprocessable, steps.CodeInvalidToolInput, "steps[0].tool.input"},
			{"tool input too large", wrap(`{"tool":{"name":"fetch","input":{"d":"` + strings.Repeat("x", 65536) + `"}}}`), refusal.Unprocessable, steps.CodeToolInputTooLarge, "steps[0].tool.input"},
			{"route kind", wrap(`{"tool":{"name":"fetch","route":{"kind":"pool"}}}`), refusal.Unprocessable, steps.CodeInvalidToolRoute, "steps[0].tool.route.kind"},
			{"route null id", wrap(`{"tool":{"name":"fetch","route":{"kind":"runner","runner_executor_public_id":null}}}`), refusal.Unprocessable, steps.CodeInvalidToolRoute, "steps[0].tool.route.runner_executor_public_id"},
			{"route extra", wrap(`{"tool":{"name":"fetch","route":{"kind":"runner","x":1}}}`), refusal.Unprocessable, steps.CodeInvalidToolRoute, "steps[0].tool.route.x"},
			{"runner target", wrap(`{"tool":{"name":"fetch","route":{"kind":"runner"}}}`), refusal.Unprocessable, steps.CodeRunnerTargetRequired, "steps[0].tool.route"},
			{"runner not eligible", wrap(`{"tool":{"name":"fetch","route":{"kind":"runner","runner_executor_public_id":"0193c2d4-5e6f-7a8b-9c0d-1e2f3a4b5c6d"}}}`), refusal.Unprocessable, steps.CodeRunnerNotEligible, "steps[0].tool.route"},
			{"not served", wrap(`{"tool":{"name":"fetch"}}`), refusal.Unprocessable, runs.CodeToolNotServed, "steps[0].tool.name"},
			{"timeout", wrap(`{"tool":{"name":"fetch","timeout_ms":604800001}}`), refusal.Unprocessable, steps.CodeInvalidTimeoutMS, "steps[0].tool.timeout_ms"},
			{"timeout zero", wrap(`{"tool":{"name":"fetch","timeout_ms":0}}`), refusal.Unprocessable, steps.CodeInvalidTimeoutMS, "steps[0].tool.timeout_ms"},
			{"tool_call_id", wrap(`{"tool":{"name":"fetch","tool_call_id":"x"}}`), refusal.Unprocessable, steps.CodeInvalidToolCallID, "steps[0].tool.tool_call_id"},
			{"defaults option", wrap(`{"tool":{"name":"fetch","model_defaults":{"temperature":1}}}`), refusal.Unprocessable, steps.CodeUnknownStepOption, "steps[0].tool.model_defaults.temperature"},
		}
		for _, c := range cases {
			if c.code == "" {
				continue
			}
			_, err := h.Conv.CreateRun(h.Ctx, createRequest(h.Actor, json.RawMessage(c.run), "", []byte(`{"run":`+c.run+`}`)))
			r, ok := refusal.As(err)
			if !ok {
				t.Errorf("%s: got %v, want %s", c.name, err, c.code)
				continue
			}
			p, _ := r.Get("path")
			if r.Code != c.code || r.Kind != c.kind || p != c.path {
				t.Errorf("%s: got %s (kind %d) at %v, want %s (kind %d) at %s", c.name, r.Code, r.Kind, p, c.code, c.kind, c.path)
			}
		}
		page, err := h.Conv.ListRuns(h.Ctx, h.Actor, "", "", "", 100)
		if err != nil || len(page.Runs) != 0 {
			t.Fatalf("refused envelopes created runs: %d %v", len(page.Runs), err)
		}
		// Every failure is listed; the first decides.
		_, err = h.Conv.CreateRun(h.Ctx, createRequest(h.Actor, json.RawMessage(wrap(`{"tool":{"name":"delegate_task"}},{"model":{"model":"mock/none","prompt":"x"}}`)), "", nil))
		r, _ := refusal.As(err)
		items, _ := r.Get("errors")
		b, _ := json.Marshal(items)
		if r.Code != steps.CodeReservedToolName || string(b) != `[{"code":"reserved_tool_name","path":"steps[0].tool.name"},{"code":"unknown_model","path":"steps[1].model.model"}]` {
			t.Fatalf("errors list: %s %s", r.Code, b)
		}
		// A declaration with tools on a model without the tools capability.
		h2 := h
		_, err = h2.Conv.CreateRun(h.Ctx, createRequest(h.Actor, json.RawMessage(wrap(`{"model":{"model":"mock/scripted","prompt":"x",`+memoryTools+`}}`)), "", nil))
		if err != nil {
			t.Fatalf("tools on a tools model: %v", err)
		}
		// A model step without a model, or with a null one, runs on the deployment's default.
		for _, step := range []string{`{"model":{"prompt":"x"}}`, `{"model":{"model":null,"prompt":"x"}}`} {
			c := h.Create(wrap(step))
			if tk := h.Task(c.Run.PublicID, c.Receipt.DeliverableTaskKey); tk.Model == nil || *tk.Model != "mock/scripted" {
				t.Fatalf("%s: model %v, want the default mock/scripted", step, tk.Model)
			}
		}
	})
}

// TestDoorConflicts pins the 4xx words of start, stop, append, the request read, approve, deny,
// resolution and branch cancel.
func TestDoorConflicts(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		h := newHarness(t, s, harnessOptions{})
		pending := h.Create(`{"steps":[{"model":{"model":"mock/scripted","prompt":"!mock\nround 1\nsay hi"}}],"approval_mode":"bypass","start":false}`)
		id := pending.Run.PublicID
		if pending.Run.Status != runs.RunPending {
			t.Fatalf("start false: %s", pending.Run.Status)
		}
		expect := func(name string, err error, code string) {
			t.Helper()
			if !isCode(err, code) {
				t.Errorf("%s: got %v, want %s", name, err, code)
			}
		}
		_, err := h.Conv.ReadRequest(h.Ctx, h.Actor, id, "s1-model-1")
		expect("request before sealing", err, conversations.CodeRequestNotSealed)
		_, err = h.Conv.ReadTask(h.Ctx, h.Actor, id, "nope")
		expect("unknown task", err, refusal.CodeNotFound)
		_, err = h.Conv.ReadRun(h.Ctx, h.Actor, "0193c2d4-5e6f-7a8b-9c0d-1e2f3a4b5c6d")
		expect("unknown run", err, refusal.CodeNotFound)
		_, err = h.Conv.ReadRun(h.Ctx, h.Actor, "not-a-uuid")
		expect("malformed run id", err, refusal.CodeNotFound)
		_, err = h.Conv.Decide(h.Ctx, h.Actor, id, "s1-model-1", false, "")
		expect("approve a pending run", err, conversations.CodeNotAdjudicable)
		_, err = h.Conv.Resolve(h.Ctx, resolveRequest(t, h.Actor, id, "s1-model-1", []byte(`{"content":"x"}`)))
		expect("resolve a model task", err, conversations.CodeAwaitNotResolvable)
		// The body's own refusal is answered after the row's lookup, before the await's.
		errBody := refusal.New(refusal.BadRequest, refusal.CodeParameterInvalid, "The request body must be a JSON object.")
		_, err = h.Conv.Resolve(h.Ctx, &conversations.ResolveRequest{Actor: h.Actor, RunID: id, TaskKey: "nope", Invalid: errBody})
		expect("resolve an unknown key with a non-object body", err, refusal.CodeNotFound)
		_, err = h.Conv.Resolve(h.Ctx, &conversations.ResolveRequest{Actor: h.Actor, RunID: id, TaskKey: "s1-model-1", Invalid: errBody})
		expect("resolve with a non-object body", err, refusal.CodeParameterInvalid)
		_, err = h.Conv.CancelBranch(h.Ctx, h.Actor, id, "s1-model-1")
		expect("cancel a mainline round", err, runs.CodeNotABranch)
		if _, err := h.Conv.StartRun(h.Ctx, h.Actor, id); err != nil {
			t.Fatal(err)
		}
		_, err = h.Conv.StartRun(h.Ctx, h.Actor, id)
		expect("start twice", err, conversations.CodeNotStartable)
		h.Drain()
		if _, err := h.Conv.ReadRequest(h.Ctx, h.Actor, id, "s1-model-1"); err != nil {
			t.Fatalf("request after sealing: %v", err)
		}
		_, err = h.Conv.Decide(h.Ctx, h.Actor, id, "s1-model-1", false, "")
		expect("approve a completed run", err, conversations.CodeNotAdjudicable)
		_, err = h.Conv.Append(h.Ctx, appendRequest(t, h.Actor, id, []byte(`{"steps":[{"model":{"model":"mock/scripted","prompt":"x"}}]}`), ""))
		expect("append to a completed run", err, conversations.CodeRunNotAppendable)
		_, err = h.Conv.StopRun(h.Ctx, h.Actor, id, true)
		expect("stop a completed run", err, runs.CodeAlreadyTerminal)

		// Append: the body and conflict words, in order.
		live := h.Create(`{"steps":[{"model":{"model":"mock/scripted","prompt":"!mock\nround 1\nsay one","key":"first"}}],"approval_mode":"bypass"}`)
		lid := live.Run.PublicID
		errSteps := refusal.New(refusal.BadRequest, refusal.CodeParameterMissing, "The body must carry steps.").With("path", "steps")
		_, err = h.Conv.Append(h.Ctx, &conversations.AppendRequest{Actor: h.Actor, RunID: "0193c2d4-5e6f-7a8b-9c0d-1e2f3a4b5c6d", Invalid: errSteps})
		expect("append to an unknown run without a body", err, refusal.CodeNotFound)
		_, err = h.Conv.Append(h.Ctx, &conversations.AppendRequest{Actor: h.Actor, RunID: lid, Invalid: errSteps})
		expect("append without a body", err, refusal.CodeParameterMissing)
		_, err = h.Conv.Append(h.Ctx, appendRequest(t, h.Actor, lid, []byte(`{"steps":[{"tool":{"name":"memory_read"}}]}`), ""))
		expect("append a kernel tool", err, steps.CodeReservedToolName)
		_, err = h.Conv.Append(h.Ctx, appendRequest(t, h.Actor, lid, []byte(`{"steps":[{"model":{"model":"mock/scripted","prompt":"x"}}],"expected_revision":7}`), ""))
		expect("stale revision", err, conversations.CodeStaleRevision)
		r, _ := refusal.As(err)
		if v, _ := r.Get("current_revision"); v != int64(1) {
			t.Errorf("current_revision %v", v)
		}
		_, err = h.Conv.Append(h.Ctx, appendRequest(t, h.Actor, lid, []byte(`{"steps":[{"model":{"model":"mock/scripted","prompt":"x","key":"first"}}]}`), ""))
		expect("duplicate key in the run", err, steps.CodeDuplicateTaskKey)
		_, err = h.Conv.Append(h.Ctx, appendRequest(t, h.Actor, lid, []byte(`{"steps":[{"model":{"model":"mock/scripted","prompt":"x","key":"k"}},{"model":{"model":"mock/scripted","prompt":"x","key":"k"}}]}`), ""))
		expect("duplicate key in the envelope", err, steps.CodeDuplicateTaskKey)
		got, err := h.Conv.Append(h.Ctx, appendRequest(t, h.Actor, lid, []byte(`{"steps":[{"model":{"model":"mock/scripted","prompt":"!mock\nround 1\nsay two"}}],"expected_revision":1}`), "k1"))
		if err != nil || got.Receipt.Revision != 2 || got.Receipt.DeliverableTaskKey != "s2-model-1" || got.Replayed {
			t.Fatalf("append: %+v %v", got, err)
		}
		again, err := h.Conv.Append(h.Ctx, appendRequest(t, h.Actor, lid, []byte(`{"steps":[{"model":{"model":"mock/scripted","prompt":"!mock\nround 1\nsay two"}}],"expected_revision":1}`), "k1"))
		if err != nil || !again.Replayed || again.Receipt.DeliverableTaskKey != "s2-model-1" {
			t.Fatalf("replay: %+v %v", again, err)
		}
		_, err = h.Conv.Append(h.Ctx, appendRequest(t, h.Actor, lid, []byte(`{"steps":[{"model":{"model":"mock/scripted","prompt":"other"}}]}`), "k1"))
		expect("same key, other body", err, conversations.CodeIdempotencyEnvelopeMismatch)
		h.Drain()
		rd := h.Run(lid)
		if rd.Status != runs.RunCompleted || deref(rd.Answer) != "two" {
			t.Fatalf("after append: %s %q", rd.Status, deref(rd.Answer))
		}
		second := h.Task(lid, "s2-model-1")
		if string(second.Results) != `["first"]` || strings.Join(second.After, ",") != "first" {
			t.Fatalf("appended step reads %s after %v", second.Results, second.After)
		}
	})
}

// TestIdempotentCreate replays a create under its key and refuses another body.
func TestIdempotentCreate(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		h := newHarness(t, s, harnessOptions{})
		run := modelStep("!mock\nround 1\nsay hi", "")
		body := []byte(`{"run":` + run + `}`)
		first, err := h.Conv.CreateRun(h.Ctx, createRequest(h.Actor, json.RawMessage(run), "key-1", body))
		if err != nil || first.Replayed {
			t.Fatal(err)
		}
		// Key order and whitespace do not make another body: canonical JSON is compared.
		again, err := h.Conv.CreateRun(h.Ctx, createRequest(h.Actor, json.RawMessage(run), "key-1", []byte(" "+string(body))))
		if err != nil || !again.Replayed || again.Run.PublicID != first.Run.PublicID || again.Receipt.Revision != 1 {
			t.Fatalf("replay: %+v %v", again, err)
		}
		other := modelStep("!mock\nround 1\nsay other", "")
		_, err = h.Conv.CreateRun(h.Ctx, createRequest(h.Actor, json.RawMessage(other), "key-1", []byte(`{"run":`+other+`}`)))
		if !isCode(err, conversations.CodeIdempotencyEnvelopeMismatch) {
			t.Fatalf("mismatch: %v", err)
		}
		h.Clock.Advance(runs.IdempotencyTTL)
		fresh, err := h.Conv.CreateRun(h.Ctx, createRequest(h.Actor, json.RawMessage(other), "key-1", []byte(`{"run":`+other+`}`)))
		if err != nil || fresh.Replayed || fresh.Run.PublicID == first.Run.PublicID {
			t.Fatalf("after 24 hours the key is new: %+v %v", fresh, err)
		}
	})
}
