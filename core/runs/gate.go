package runs

import (
	"encoding/json"

	"github.com/nexuskernel/nexus/core/approval"
	"github.com/nexuskernel/nexus/core/envelope"
)

// Rule is one approval rule (docs/agent-tools.md#the-approval-gate); its grammar is
// core/approval's.
type Rule = approval.Rule

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
	d.Detail = envelope.CutUTF8(d.Detail, MaxReasonBytes)
	return d
}
