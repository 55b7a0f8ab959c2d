package profiles

import (
	"github.com/nexuskernel/nexus/core/approval"
	"github.com/nexuskernel/nexus/core/declare"
	"github.com/nexuskernel/nexus/core/refusal"
	"github.com/nexuskernel/nexus/sdk/jsonwire"
)

// checkApprovalRules checks an approval rule list against the rule grammar of
// docs/agent-tools.md#the-approval-gate (core/approval, the parser the run door uses too) and
// returns its stored form (compact, keys as authored), or nil for null. The first failure is
// refused invalid with the path to the rule or its key.
func checkApprovalRules(v jsonwire.Value) ([]byte, *refusal.Error) {
	if v.IsNull() {
		return nil, nil
	}
	stored := v.Encode()
	if _, p := approval.Parse(stored); p != nil {
		return nil, declare.FieldRefusal(declare.WordInvalid, FieldApprovalRules, p.Suffix, p.Detail)
	}
	return stored, nil
}
