package runs

import (
	"encoding/json"
	"testing"

	"github.com/nexuskernel/nexus/core/approval"
	"github.com/nexuskernel/nexus/core/refusal"
)

func rule(tool, verdict string, extra ...func(*Rule)) Rule {
	r := Rule{Tool: tool, Verdict: verdict}
	for _, f := range extra {
		f(&r)
	}
	return r
}

func withOrigin(o string) func(*Rule) { return func(r *Rule) { r.Origin = &o } }
func withReason(s string) func(*Rule) { return func(r *Rule) { r.Reason = &s } }
func withPath(p string) func(*Rule)   { return func(r *Rule) { r.Path = &p } }
func withMatch(m string) func(*Rule)  { return func(r *Rule) { r.Match = &m } }

// TestGateMatrix pins every cell of the table (docs/agent-tools.md#the-approval-gate).
func TestGateMatrix(t *testing.T) {
	t.Parallel()
	type cell struct{ outcome, origin string }
	verdictRules := map[string][]Rule{
		"deny":      {rule("memory_*", VerdictDeny, withReason("no writes"), withOrigin(OriginModel)), rule("memory_*", VerdictDeny, withOrigin(OriginAuthor)), rule("memory_*", VerdictDeny, withOrigin(OriginKernel))},
		"ask":       {rule("memory_*", VerdictAsk), rule("memory_*", VerdictAsk, withOrigin(OriginAuthor)), rule("memory_*", VerdictAsk, withOrigin(OriginKernel))},
		"allow":     {rule("memory_*", VerdictAllow), rule("memory_*", VerdictAllow, withOrigin(OriginAuthor)), rule("memory_*", VerdictAllow, withOrigin(OriginKernel))},
		"unmatched": {rule("other", VerdictAllow)},
	}
	table := []struct {
		origin, mode string
		want         map[string]cell
	}{
		{OriginModel, ModeBypass, map[string]cell{"deny": {Denied, "rule"}, "ask": {Granted, "mode"}, "allow": {Granted, "mode"}, "unmatched": {Granted, "mode"}}},
		{OriginModel, ModeAsk, map[string]cell{"deny": {Denied, "rule"}, "ask": {Held, ""}, "allow": {Granted, "rule"}, "unmatched": {Held, ""}}},
		{OriginModel, ModeRules, map[string]cell{"deny": {Denied, "rule"}, "ask": {Held, ""}, "allow": {Granted, "rule"}, "unmatched": {Denied, "mode"}}},
	}
	for _, mode := range []string{ModeBypass, ModeAsk, ModeRules} {
		table = append(table,
			struct {
				origin, mode string
				want         map[string]cell
			}{OriginAuthor, mode, map[string]cell{"deny": {Denied, "rule"}, "ask": {Held, ""}, "allow": {Granted, "rule"}, "unmatched": {Granted, "author"}}},
			struct {
				origin, mode string
				want         map[string]cell
			}{OriginKernel, mode, map[string]cell{"deny": {Denied, "rule"}, "ask": {Held, ""}, "allow": {Granted, "rule"}, "unmatched": {Granted, "kernel"}}})
	}
	for _, row := range table {
		for verdict, want := range row.want {
			d := Evaluate(row.mode, verdictRules[verdict], row.origin, "memory_write", json.RawMessage(`{"path":"workspace/a"}`))
			if d.Outcome != want.outcome || d.Origin != want.origin {
				t.Errorf("origin %s, mode %s, %s: got %s/%s, want %s/%s", row.origin, row.mode, verdict, d.Outcome, d.Origin, want.outcome, want.origin)
			}
		}
	}
	d := Evaluate(ModeRules, nil, OriginModel, "fetch", nil)
	if d.Detail != "no approval rule allows fetch" {
		t.Errorf("unmatched rules detail %q", d.Detail)
	}
	d = Evaluate(ModeAsk, verdictRules["deny"], OriginModel, "memory_write", nil)
	if d.Detail != "no writes" {
		t.Errorf("deny reason detail %q", d.Detail)
	}
}

func TestGatePrecedenceAndMatching(t *testing.T) {
	t.Parallel()
	in := json.RawMessage(`{"path":"workspace/plan.md","args":["-rf","/"],"n":[1,2.5,true,null],"obj":{"x":1}}`)
	cases := []struct {
		name  string
		rules []Rule
		tool  string
		want  string
	}{
		{"deny beats ask and allow", []Rule{rule("*", VerdictAllow), rule("*", VerdictAsk), rule("*", VerdictDeny)}, "x", Denied},
		{"ask beats allow", []Rule{rule("*", VerdictAllow), rule("*", VerdictAsk)}, "x", Held},
		{"alternatives", []Rule{rule("read|memory_write", VerdictAllow)}, "memory_write", Granted},
		{"glob is anchored", []Rule{rule("memory", VerdictAllow)}, "memory_write", Held},
		{"question mark", []Rule{rule("memory_writ?", VerdictAllow)}, "memory_write", Granted},
		{"path exists", []Rule{rule("*", VerdictAllow, withPath("path"))}, "t", Granted},
		{"path missing", []Rule{rule("*", VerdictAllow, withPath("nope"))}, "t", Held},
		{"match string", []Rule{rule("*", VerdictAllow, withPath("path"), withMatch("workspace/*"))}, "t", Granted},
		{"match fails", []Rule{rule("*", VerdictAllow, withPath("path"), withMatch("user/*"))}, "t", Held},
		{"array index", []Rule{rule("*", VerdictDeny, withPath("args.0"), withMatch("-rf"))}, "t", Denied},
		{"array joined", []Rule{rule("*", VerdictDeny, withPath("args"), withMatch("-rf /"))}, "t", Denied},
		{"scalars canonical", []Rule{rule("*", VerdictDeny, withPath("n"), withMatch("1 2.5 true null"))}, "t", Denied},
		{"object never matches", []Rule{rule("*", VerdictDeny, withPath("obj"), withMatch("*"))}, "t", Held},
		{"origin filters", []Rule{rule("*", VerdictAllow, withOrigin(OriginAuthor))}, "t", Held},
	}
	for _, c := range cases {
		if d := Evaluate(ModeAsk, c.rules, OriginModel, c.tool, in); d.Outcome != c.want {
			t.Errorf("%s: got %s, want %s", c.name, d.Outcome, c.want)
		}
	}
	if !Glob("*", "") || !Glob("a*b*c", "aXbYc") || Glob("a*b", "ac") || !Glob("??", "éa") {
		t.Error("glob basics")
	}
}

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
