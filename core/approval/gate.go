package approval

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"

	"github.com/nexuskernel/nexus/sdk/announce"
	"github.com/nexuskernel/nexus/sdk/jsonwire"
)

// The approval modes of a run (docs/agent-tools.md#the-approval-gate).
const (
	ModeBypass = "bypass"
	ModeAsk    = "ask"
	ModeRules  = "rules"
)

// The approval.origin words of a decision the gate takes on its own.
const (
	ApprovedByMode   = "mode"
	ApprovedByRule   = "rule"
	ApprovedByAuthor = "author"
	ApprovedByKernel = "kernel"
)

// Decision is the gate's verdict on one tool row.
type Decision struct {
	// Outcome is "granted", "held" or "denied".
	Outcome string
	// Origin is approval.origin: mode, rule, author or kernel (ApprovedBy...).
	Origin string
	// Detail is error.detail on a denial, the rule's reason uncut; "" for none.
	Detail string
}

// Gate outcomes.
const (
	Granted = "granted"
	Held    = "held"
	Denied  = "denied"
)

// Evaluate is the approval gate (docs/agent-tools.md#the-approval-gate): every rule whose origin
// equals the row's origin and whose tool, path and match match is collected; deny beats ask beats
// allow; the mode and the row's origin decide the rest.
func Evaluate(mode string, rules []Rule, origin, toolName string, input json.RawMessage) Decision {
	var deny, ask, allow *Rule
	for i := range rules {
		r := &rules[i]
		ro := OriginModel
		if r.Origin != nil {
			ro = *r.Origin
		}
		if ro != origin || !matchRule(r, toolName, input) {
			continue
		}
		switch r.Verdict {
		case VerdictDeny:
			if deny == nil {
				deny = r
			}
		case VerdictAsk:
			if ask == nil {
				ask = r
			}
		case VerdictAllow:
			if allow == nil {
				allow = r
			}
		}
	}
	switch {
	case deny != nil:
		d := Decision{Outcome: Denied, Origin: ApprovedByRule}
		if deny.Reason != nil {
			d.Detail = *deny.Reason
		}
		return d
	case ask != nil:
		if origin == OriginModel && mode == ModeBypass {
			return Decision{Outcome: Granted, Origin: ApprovedByMode}
		}
		return Decision{Outcome: Held}
	case allow != nil:
		if origin == OriginModel && mode == ModeBypass {
			return Decision{Outcome: Granted, Origin: ApprovedByMode}
		}
		return Decision{Outcome: Granted, Origin: ApprovedByRule}
	}
	switch origin {
	case OriginAuthor:
		return Decision{Outcome: Granted, Origin: ApprovedByAuthor}
	case OriginKernel:
		return Decision{Outcome: Granted, Origin: ApprovedByKernel}
	}
	switch mode {
	case ModeBypass:
		return Decision{Outcome: Granted, Origin: ApprovedByMode}
	case ModeRules:
		return Decision{Outcome: Denied, Origin: ApprovedByMode, Detail: "no approval rule allows " + toolName}
	default:
		return Decision{Outcome: Held}
	}
}

// ReadsInput reports whether Evaluate can read a call's input under these rules: only a rule
// with a path looks into it (matchRule).
func ReadsInput(rules []Rule) bool {
	for i := range rules {
		if rules[i].Path != nil {
			return true
		}
	}
	return false
}

func matchRule(r *Rule, toolName string, input json.RawMessage) bool {
	ok := false
	for _, g := range strings.Split(r.Tool, "|") {
		if Glob(g, toolName) {
			ok = true
			break
		}
	}
	if !ok {
		return false
	}
	if r.Path == nil {
		return true
	}
	v, found := lookupPath(input, *r.Path)
	if !found {
		return false
	}
	if r.Match == nil {
		return true
	}
	s, ok := matchText(v)
	return ok && Glob(*r.Match, s)
}

// lookupPath follows a dotted path into a JSON value; an all-digit segment indexes an array.
func lookupPath(input json.RawMessage, path string) (json.RawMessage, bool) {
	cur := input
	for _, seg := range strings.Split(path, ".") {
		cur = bytes.TrimSpace(cur)
		if len(cur) == 0 {
			return nil, false
		}
		switch cur[0] {
		case '{':
			var obj map[string]json.RawMessage
			if json.Unmarshal(cur, &obj) != nil {
				return nil, false
			}
			v, ok := obj[seg]
			if !ok {
				return nil, false
			}
			cur = v
		case '[':
			if seg == "" || strings.Trim(seg, "0123456789") != "" {
				return nil, false
			}
			n, err := strconv.Atoi(seg)
			if err != nil {
				return nil, false
			}
			var arr []json.RawMessage
			if json.Unmarshal(cur, &arr) != nil || n >= len(arr) {
				return nil, false
			}
			cur = arr[n]
		default:
			return nil, false
		}
	}
	return cur, true
}

// matchText is the text a match glob sees: a string as is; an array of scalars joined with
// single spaces (numbers canonical, booleans and null spelled); anything else never matches.
func matchText(v json.RawMessage) (string, bool) {
	v = bytes.TrimSpace(v)
	if len(v) == 0 {
		return "", false
	}
	switch v[0] {
	case '"':
		var s string
		return s, json.Unmarshal(v, &s) == nil
	case '[':
		var arr []json.RawMessage
		if json.Unmarshal(v, &arr) != nil {
			return "", false
		}
		parts := make([]string, 0, len(arr))
		for _, it := range arr {
			it = bytes.TrimSpace(it)
			if len(it) == 0 {
				return "", false
			}
			switch it[0] {
			case '"':
				var s string
				if json.Unmarshal(it, &s) != nil {
					return "", false
				}
				parts = append(parts, s)
			case '{', '[':
				return "", false
			default:
				c, err := jsonwire.CanonicalValue(it)
				if err != nil {
					return "", false
				}
				parts = append(parts, string(c))
			}
		}
		return strings.Join(parts, " "), true
	}
	return "", false
}

// Glob is the project's one anchored glob (sdk/announce.Glob), which the rules' tool and match
// patterns use.
func Glob(pattern, value string) bool { return announce.Glob(pattern, value) }
