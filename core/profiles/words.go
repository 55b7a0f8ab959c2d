package profiles

import (
	"github.com/nexuskernel/nexus/core/declare"
	"github.com/nexuskernel/nexus/core/model"
)

// The profile fields of docs/api.md#agent-profiles that are not declaration sources, in the door's
// validation order after sourceFields.
const (
	FieldApprovalMode  = "approval_mode"
	FieldApprovalRules = "approval_rules"
	FieldDefaultModel  = "default_model"
	FieldInstructions  = "instructions"
	// FieldPinImports is the profile's choice to pin what it imports
	// (docs/agent-tools.md#pinned-imports); FieldRepin, a write-only field, re-records every pin
	// from the current announcements instead of keeping the recorded ones.
	FieldPinImports = "pin_imports"
	FieldRepin      = "repin"
)

// sourceFields are the declaration sources, the fields the assembly reads, in validation order.
var sourceFields = []string{
	declare.FieldToolDefinitions, declare.FieldKernelTools, declare.FieldRunnerExecutorPublicIDs, declare.FieldRunnerToolNames,
	declare.FieldToolProviderTools, declare.FieldEagerToolNames,
}

// The profile door's words besides the declaration words (docs/api.md#agent-profiles).
const (
	// WordRequired: approval_mode is missing while the profile declares tools.
	WordRequired = "required"
	// WordUnknownModel: default_model names no model of the catalog.
	WordUnknownModel = model.CodeUnknownModel
)

// The approval modes (docs/agent-tools.md#the-approval-gate).
const (
	ModeBypass = "bypass"
	ModeAsk    = "ask"
	ModeRules  = "rules"
)

// Limits of a profile.
const (
	// MaxInstructionsBytes bounds the standing instructions
	// (docs/development.md#the-declaration-compiler): they ride at the front of every model request
	// the agent answers, so they stay small beside the 1 MiB declaration bound.
	MaxInstructionsBytes = 64 * 1024
	// runnerLookupBatch bounds the ids one Runner query names: a candidate list may hold tens
	// of thousands of ids within its 1 MiB bound, beyond SQLite's 32,766 bound on the
	// parameters of one statement.
	runnerLookupBatch = 500
)
