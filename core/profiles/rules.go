package profiles

import (
	"fmt"
	"sort"

	"github.com/nexuskernel/nexus/core/canonjson"
	"github.com/nexuskernel/nexus/core/declare"
	"github.com/nexuskernel/nexus/core/declare/jsonv"
)

// ruleKeys are the keys an approval rule may carry (runs.md §7.2).
var ruleKeys = map[string]bool{"tool": true, "verdict": true, "path": true, "match": true, "reason": true, "origin": true}

var (
	verdicts = map[string]bool{"allow": true, "ask": true, "deny": true}
	origins  = map[string]bool{"model": true, "author": true, "kernel": true}
)

// checkApprovalRules checks an approval rule list against runs.md §7.2's grammar and returns its
// stored form (compact, keys as authored), or nil for null. The first failure is refused
// invalid with the path to the rule or its key. A rule object that repeats a key is refused
// too: the engine would read only one of the two values.
func checkApprovalRules(v jsonv.Value) ([]byte, *declare.Refusal) {
	if v.IsNull() {
		return nil, nil
	}
	bad := func(suffix, format string, args ...any) *declare.Refusal {
		return &declare.Refusal{Word: declare.WordInvalid, Field: FieldApprovalRules, Index: -1, Suffix: suffix,
			Detail: fmt.Sprintf(format, args...)}
	}
	if !v.IsArray() {
		return nil, bad("", "approval_rules must be an array of rules or null")
	}
	if v.Len() > MaxApprovalRules {
		return nil, bad("", "approval_rules holds %d rules; at most %d are allowed", v.Len(), MaxApprovalRules)
	}
	stored := v.Encode()
	canon, err := canonjson.Canonicalize(stored)
	if err != nil || len(canon) > MaxApprovalRulesBytes {
		return nil, bad("", "approval_rules is over %d bytes of canonical JSON", MaxApprovalRulesBytes)
	}
	for i, rule := range v.Items() {
		at := fmt.Sprintf("[%d]", i)
		if !rule.IsObject() {
			return nil, bad(at, "each rule must be an object")
		}
		if rule.HasDuplicateKeys() {
			return nil, bad(at, "the rule repeats a key")
		}
		if k, ok := unknownRuleKey(rule); ok {
			return nil, bad(at+"."+k, "%q is not a rule key; a rule has tool, verdict, path, match, reason and origin", k)
		}
		tool, ok := rule.GetString("tool")
		if !ok || tool == "" {
			return nil, bad(at+".tool", "tool is required: one or more globs separated by |")
		}
		if verdict, ok := rule.GetString("verdict"); !ok || !verdicts[verdict] {
			return nil, bad(at+".verdict", "verdict is required: allow, ask or deny")
		}
		for _, k := range []string{"path", "match", "reason"} {
			if x, present := rule.Get(k); present {
				if _, isString := x.AsString(); !isString {
					return nil, bad(at+"."+k, "%s must be a string", k)
				}
			}
		}
		if x, present := rule.Get("origin"); present {
			if o, isString := x.AsString(); !isString || !origins[o] {
				return nil, bad(at+".origin", "origin must be model, author or kernel")
			}
		}
		if rule.Has("match") && !rule.Has("path") {
			return nil, bad(at+".match", "match needs a path")
		}
	}
	return stored, nil
}

// unknownRuleKey returns the bytewise-smallest key a rule may not carry, so that the refusal
// never depends on the order the keys arrived in.
func unknownRuleKey(rule jsonv.Value) (string, bool) {
	var unknown []string
	for _, k := range rule.Keys() {
		if !ruleKeys[k] {
			unknown = append(unknown, k)
		}
	}
	if len(unknown) == 0 {
		return "", false
	}
	sort.Strings(unknown)
	return unknown[0], true
}
