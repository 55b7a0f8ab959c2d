package steps_test

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/nexuskernel/nexus/core/refusal"
	"github.com/nexuskernel/nexus/core/steps"
	"github.com/nexuskernel/nexus/core/store"
)

// FuzzJudge: the run and step grammar never panics and never fails to decode; every refusal is a
// word of the grammar (or a lookup's) at a path inside the run; a step it accepts carries a key
// of the task key grammar, a failure policy and a visibility it knows, and an input that is one
// JSON object within the bound; and judging the same body twice answers the same.
func FuzzJudge(f *testing.F) {
	for _, s := range []string{
		`{"steps":[{"model":{"prompt":"hi"}}],"approval_mode":"bypass"}`,
		`{"steps":[{"tool":{"name":"fetch","input":{"a":[1,{"b":null}]},"route":{"kind":"runner","runner_executor_public_id":"` + runner + `"},"timeout_ms":5}}],"approval_mode":"ask"}`,
		`{"steps":[{"tool":{"name":"x","model_defaults":{"model":"mock/scripted","kernel_tools":["a"],"tools":[{}]}}},{"model":{"prompt":"","attachments":["` + upload + `"],"results":["s1-tool-1"]}}],"approval_mode":"rules","approval_rules":[{"tool":"x","verdict":"allow"}]}`,
		`{"steps":[{"shell":{}},{"model":null},1,{"model":{"key":5,"on_failure":null,"tools":[],"prompt":7}}],"approval_mode":"bypass","tasks":1}`,
		`{"steps":{},"approval_mode":"bypass","start":"x","prompt_mechanism":"raw"}`,
		`[]`, `null`, `{"steps":[{"tool":{"name":"a","input":{"n":1e999},"timeout_ms":1.5,"tool_call_id":null}}]}`,
	} {
		f.Add([]byte(s))
	}
	words := map[string]bool{}
	for _, w := range []string{refusal.CodeValidationFailed, refusal.CodeParameterMissing, refusal.CodeInternal,
		steps.CodeEdgeAuthoringRefused, steps.CodeInvalidApprovalMode, steps.CodeInvalidApprovalRules, steps.CodeInvalidPromptMechanism,
		steps.CodeUnknownStepVerb, steps.CodeStepVerbUnavailable, steps.CodeUnknownStepOption, steps.CodeReservedTaskKey,
		steps.CodeInvalidOnFailure, steps.CodeInvalidVisibility, steps.CodePromptRequired, steps.CodeInvalidAttachments,
		steps.CodeUnknownResultKey, steps.CodeReservedToolName, steps.CodeInvalidToolInput, steps.CodeToolInputTooLarge,
		steps.CodeInvalidTimeoutMS, steps.CodeInvalidToolCallID, steps.CodeInvalidTools, steps.CodeInvalidToolRoute,
		steps.CodeRunnerTargetRequired, steps.CodeUnknownModel, "unknown_input_upload", "model_capability_unavailable", "tool_not_served"} {
		words[w] = true
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		var r steps.Run
		if err := r.UnmarshalJSON(body); err != nil {
			t.Fatalf("decode failed: %v", err)
		}
		if err := r.Check(); err != nil {
			rf, ok := refusal.As(err)
			p, _ := rf.Get("path")
			if ps, _ := p.(string); !ok || !words[rf.Code] || !strings.HasPrefix(ps, "run") {
				t.Fatalf("run refusal %v at %v", err, p)
			}
			return
		}
		checked, _, err := judge(&r)
		again, _, err2 := judge(&r)
		if !reflect.DeepEqual(checked, again) || !reflect.DeepEqual(err, err2) {
			t.Fatalf("two judgements differ: %v / %v", err, err2)
		}
		if err != nil {
			rf, _ := refusal.As(err)
			items, _ := rf.Get("errors")
			for _, it := range items.([]map[string]string) {
				if !words[it["code"]] || !strings.HasPrefix(it["path"], "steps") {
					t.Fatalf("problem %v", it)
				}
			}
			return
		}
		for _, c := range checked {
			if !store.IsTaskKey(c.Key) || !known(c.OnFailure, steps.OnFailureHalt, steps.OnFailurePropagate, steps.OnFailureAbsorb) ||
				!known(c.Visibility, steps.VisibilityVisible, steps.VisibilityCollapsed, steps.VisibilityHidden) {
				t.Fatalf("accepted %+v", c)
			}
			if c.Verb == steps.VerbTool && (!json.Valid(c.Input) || !bytes.HasPrefix(c.Input, []byte("{")) || len(c.Input) > steps.MaxToolInputBytes) {
				t.Fatalf("accepted input %q", c.Input)
			}
		}
	})
}

func known(v string, set ...string) bool {
	for _, s := range set {
		if v == s {
			return true
		}
	}
	return false
}
