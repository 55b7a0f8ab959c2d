package runs

import (
	"bytes"
	"encoding/json"

	"github.com/nexuskernel/nexus/core/approval"
	"github.com/nexuskernel/nexus/core/refusal"
)

// Rule is one approval rule (docs/agent-tools.md#the-approval-gate); its grammar is
// core/approval's.
type Rule = approval.Rule

// ParseRules validates an approval rule list (docs/agent-tools.md#the-approval-gate) and returns it
// with its stored form. A refusal is 422 invalid_approval_rules with path under prefix (e.g.
// "run.approval_rules"). Absent (nil raw or JSON null) is the empty list.
func ParseRules(raw json.RawMessage, prefix string) ([]Rule, []byte, error) {
	if len(raw) == 0 || bytes.Equal(bytes.TrimSpace(raw), []byte("null")) {
		return nil, []byte("[]"), nil
	}
	rules, p := approval.Parse(raw)
	if p != nil {
		path := prefix + p.Suffix
		return nil, nil, refusal.Newf(refusal.Unprocessable, CodeInvalidApprovalRules, "%s: %s.", path, p.Detail).With("path", path)
	}
	stored, err := json.Marshal(rules)
	if err != nil {
		return nil, nil, err
	}
	return rules, stored, nil
}

func sortedKeys(m map[string]json.RawMessage) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	for i := 1; i < len(keys); i++ {
		for j := i; j > 0 && keys[j] < keys[j-1]; j-- {
			keys[j], keys[j-1] = keys[j-1], keys[j]
		}
	}
	return keys
}

// Decision is the gate's verdict on one tool row (core/approval's).
type Decision = approval.Decision

// Gate outcomes.
const (
	Granted = approval.Granted
	Held    = approval.Held
	Denied  = approval.Denied
)

// Evaluate is the approval gate (docs/agent-tools.md#the-approval-gate), core/approval's, with a
// denial's reason cut to MaxReasonBytes for error.detail.
func Evaluate(mode string, rules []Rule, origin, toolName string, input json.RawMessage) Decision {
	d := approval.Evaluate(mode, rules, origin, toolName, input)
	d.Detail = CutUTF8(d.Detail, MaxReasonBytes)
	return d
}

// Glob matches a whole value against an anchored glob (core/approval's).
func Glob(pattern, value string) bool { return approval.Glob(pattern, value) }
