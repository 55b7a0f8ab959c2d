package runs

import (
	"encoding/json"
	"testing"

	"github.com/nexuskernel/nexus/core/approval"
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
	if !approval.Glob("*", "") || !approval.Glob("a*b*c", "aXbYc") || approval.Glob("a*b", "ac") || !approval.Glob("??", "éa") {
		t.Error("glob basics")
	}
}
