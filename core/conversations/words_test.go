package conversations

import (
	"encoding/json"
	"testing"

	"github.com/nexuskernel/nexus/core/approval"
	"github.com/nexuskernel/nexus/core/refusal"
)

func TestParseRules(t *testing.T) {
	t.Parallel()
	bad := []struct{ raw, path string }{
		{`{}`, "run.approval_rules"},
		{`[1]`, "run.approval_rules[0]"},
		{`[{"verdict":"allow"}]`, "run.approval_rules[0].tool"},
		{`[{"tool":1,"verdict":"allow"}]`, "run.approval_rules[0].tool"},
		{`[{"tool":"x"}]`, "run.approval_rules[0].verdict"},
		{`[{"tool":"x","verdict":"maybe"}]`, "run.approval_rules[0].verdict"},
		{`[{"tool":"x","verdict":"allow","origin":"robot"}]`, "run.approval_rules[0].origin"},
		{`[{"tool":"x","verdict":"allow","match":"y"}]`, "run.approval_rules[0].match"},
		{`[{"tool":"x","verdict":"allow","extra":1}]`, "run.approval_rules[0].extra"},
		{`[{"tool":"x","verdict":"allow"},{"tool":"y","verdict":"deny","reason":5}]`, "run.approval_rules[1].reason"},
		{`[{"tool":"x","verdict":"deny","reason":null}]`, "run.approval_rules[0].reason"},
		{`[{"tool":"x","verdict":"allow","tool":"y"}]`, "run.approval_rules[0]"},
		{`[{"tool":"x","verdict":"allow","zeta":1,"alpha":2}]`, "run.approval_rules[0].alpha"},
	}
	for _, b := range bad {
		_, _, err := ParseRules(json.RawMessage(b.raw), "run.approval_rules")
		r, ok := refusal.As(err)
		if !ok || r.Code != CodeInvalidApprovalRules || r.Kind != refusal.Unprocessable {
			t.Errorf("%s: got %v, want invalid_approval_rules", b.raw, err)
			continue
		}
		if p, _ := r.Get("path"); p != b.path {
			t.Errorf("%s: path %v, want %s", b.raw, p, b.path)
		}
	}
	many := "[" + repeatJoin(`{"tool":"x","verdict":"allow"}`, approval.MaxRules+1) + "]"
	if _, _, err := ParseRules(json.RawMessage(many), "p"); err == nil {
		t.Error("257 rules accepted")
	}
	rules, stored, err := ParseRules(json.RawMessage(`[{"tool":"memory_*","verdict":"allow","origin":"author"}]`), "p")
	if err != nil || len(rules) != 1 || string(stored) != `[{"tool":"memory_*","verdict":"allow","origin":"author"}]` {
		t.Fatalf("good rules: %v %s %v", rules, stored, err)
	}
}

func repeatJoin(s string, n int) string {
	out := s
	for i := 1; i < n; i++ {
		out += "," + s
	}
	return out
}
