package approval

import (
	"encoding/json"
	"fmt"
	"sort"

	"github.com/nexuskernel/nexus/sdk/jsonwire"
)

// Rule list bounds (docs/agent-tools.md#the-approval-gate, docs/api.md#runs): every tool row of a
// run is evaluated against the whole list when it becomes ready, so the list stays small.
const (
	// MaxRules is the most rules one list may hold.
	MaxRules = 256
	// MaxRulesBytes bounds a list's canonical JSON.
	MaxRulesBytes = 64 * 1024
)

// The verdict words of a rule.
const (
	VerdictAllow = "allow"
	VerdictAsk   = "ask"
	VerdictDeny  = "deny"
)

// The origins a rule may address: which rows it applies to (model when absent).
const (
	OriginModel  = "model"
	OriginAuthor = "author"
	OriginKernel = "kernel"
)

// Rule is one approval rule (docs/agent-tools.md#the-approval-gate).
type Rule struct {
	Tool    string  `json:"tool"`
	Verdict string  `json:"verdict"`
	Path    *string `json:"path,omitempty"`
	Match   *string `json:"match,omitempty"`
	Reason  *string `json:"reason,omitempty"`
	Origin  *string `json:"origin,omitempty"`
}

// ruleKeys are the keys a rule may carry.
var ruleKeys = map[string]bool{"tool": true, "verdict": true, "path": true, "match": true, "reason": true, "origin": true}

// Problem is why a rule list is refused: Suffix is the path inside the list ("" for the list
// itself, "[2]" for a rule, "[2].verdict" for one of its keys) and Detail a sentence without
// the path and without a final period.
type Problem struct {
	Suffix string
	Detail string
}

func problem(suffix, format string, args ...any) *Problem {
	return &Problem{Suffix: suffix, Detail: fmt.Sprintf(format, args...)}
}

// Parse checks a rule list against the grammar and returns its rules in list order. JSON null
// is not a list: callers decide what an absent list means before calling. The first failure
// is the problem, in this order: the list's shape, its count, its canonical size, then each
// rule in turn (its shape, a repeated key — the engine would read only one of the two values
// —, the bytewise-smallest unknown key, tool, verdict, path, match and reason, origin, and
// match without path).
func Parse(raw []byte) ([]Rule, *Problem) {
	items, err := jsonwire.SplitArray(raw)
	if err != nil {
		return nil, problem("", "the rule list must be an array of rules")
	}
	if len(items) > MaxRules {
		return nil, problem("", "the rule list holds %d rules; at most %d are allowed", len(items), MaxRules)
	}
	canon, _, err := jsonwire.Canonical(raw)
	if err != nil {
		return nil, problem("", "the rule list must be an array of rules")
	}
	if len(canon) > MaxRulesBytes {
		return nil, problem("", "the rule list is %d bytes of canonical JSON; the bound is %d", len(canon), MaxRulesBytes)
	}
	rules := make([]Rule, 0, len(items))
	for i, item := range items {
		r, p := parseRule(item)
		if p != nil {
			p.Suffix = fmt.Sprintf("[%d]", i) + p.Suffix
			return nil, p
		}
		rules = append(rules, r)
	}
	return rules, nil
}

// parseRule checks one rule; a problem's suffix is relative to the rule.
func parseRule(raw []byte) (Rule, *Problem) {
	members, err := jsonwire.SplitObject(raw)
	if err != nil {
		return Rule{}, problem("", "each rule must be an object")
	}
	if _, dup := members.Repeated(); dup {
		return Rule{}, problem("", "the rule repeats a key")
	}
	var unknown []string
	for _, m := range members {
		if !ruleKeys[m.Key] {
			unknown = append(unknown, m.Key)
		}
	}
	if len(unknown) > 0 {
		// The smallest, so that the refusal never depends on the order the keys arrived in.
		sort.Strings(unknown)
		return Rule{}, problem("."+unknown[0], "%q is not a rule key; a rule has tool, verdict, path, match, reason and origin", unknown[0])
	}
	var r Rule
	if v, ok := members.Get("tool"); ok {
		r.Tool, _ = jsonwire.DecodeString(v)
	}
	if v, ok := members.Get("verdict"); ok {
		r.Verdict, _ = jsonwire.DecodeString(v)
	}
	if p := checkToolVerdict(&r); p != nil {
		return Rule{}, p
	}
	for _, f := range []struct {
		key string
		dst **string
	}{{"path", &r.Path}, {"match", &r.Match}, {"reason", &r.Reason}, {"origin", &r.Origin}} {
		v, ok := members.Get(f.key)
		if !ok {
			continue
		}
		s, isString := jsonwire.DecodeString(v)
		if !isString {
			if f.key == "origin" {
				return Rule{}, problem(".origin", "origin must be model, author or kernel")
			}
			return Rule{}, problem("."+f.key, "%s must be a string", f.key)
		}
		*f.dst = &s
	}
	if p := checkOriginMatch(&r); p != nil {
		return Rule{}, p
	}
	return r, nil
}

// Check judges a rule list built in Go by the rules a value can break (Parse judges a list as
// written, its shape and keys too), in Parse's order: the count, the canonical size, then each
// rule's tool, verdict, origin and match.
func Check(rules []Rule) *Problem {
	if len(rules) > MaxRules {
		return problem("", "the rule list holds %d rules; at most %d are allowed", len(rules), MaxRules)
	}
	b, err := json.Marshal(rules)
	if err != nil {
		return problem("", "the rule list must be an array of rules")
	}
	canon, err := jsonwire.CanonicalValue(b)
	if err != nil {
		return problem("", "the rule list must be an array of rules")
	}
	if len(canon) > MaxRulesBytes {
		return problem("", "the rule list is %d bytes of canonical JSON; the bound is %d", len(canon), MaxRulesBytes)
	}
	for i := range rules {
		p := checkToolVerdict(&rules[i])
		if p == nil {
			p = checkOriginMatch(&rules[i])
		}
		if p != nil {
			p.Suffix = fmt.Sprintf("[%d]", i) + p.Suffix
			return p
		}
	}
	return nil
}

// checkToolVerdict checks a rule's tool and verdict.
func checkToolVerdict(r *Rule) *Problem {
	if r.Tool == "" {
		return problem(".tool", "tool is required: one or more globs separated by |")
	}
	switch r.Verdict {
	case VerdictAllow, VerdictAsk, VerdictDeny:
		return nil
	}
	return problem(".verdict", "verdict is required: allow, ask or deny")
}

// checkOriginMatch checks a rule's origin, and that a match has its path.
func checkOriginMatch(r *Rule) *Problem {
	if r.Origin != nil {
		switch *r.Origin {
		case OriginModel, OriginAuthor, OriginKernel:
		default:
			return problem(".origin", "origin must be model, author or kernel")
		}
	}
	if r.Match != nil && r.Path == nil {
		return problem(".match", "match needs a path")
	}
	return nil
}
