// Package approval holds the approval rule grammar (docs/agent-tools.md#the-approval-gate): the one
// parser that both the run door (a standalone run's approval_rules) and the agent profile (the
// rules its conversation-hosted runs freeze) check a rule list with. It answers with the parsed
// rules or with one problem — where in the list and why — and leaves the refusal word to its
// caller: 422 invalid_approval_rules at the run door, validation_failed naming the field on the
// profile. A list built in Go (an in-process caller's run) is judged by Check, by the rules a
// value can break, in Parse's order. It also evaluates a rule list against one tool row
// (Evaluate, the gate's verdict); when a row is evaluated, and what its verdict does to the row,
// is core/runs'.
//
// It is pure: it imports only the SDK's JSON walker (sdk/jsonwire) and the standard
// library.
package approval
