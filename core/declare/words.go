package declare

import "github.com/nexuskernel/nexus/core/refusal"

// The refusal words of the declaration rules. A client reads them as stable codes; each is
// defined once here.
const (
	WordInvalid                       = "invalid"
	WordContentTooLarge               = refusal.CodeContentTooLarge
	WordDuplicateToolName             = "duplicate_tool_name"
	WordKernelToolRedefined           = "kernel_tool_redefined"
	WordAliasCanonicalUnknown         = "alias_canonical_unknown"
	WordAliasNameReserved             = "alias_name_reserved"
	WordAliasParamUnknown             = "alias_param_unknown"
	WordAliasInvertNeedsBoolean       = "alias_invert_needs_boolean"
	WordAliasParamDescriptionRequired = "alias_param_description_required"
	WordInvalidToolRoute              = "invalid_tool_route"
	WordRunnerTargetRequired          = "runner_target_required"
	WordRunnerNotDeclared             = "runner_not_declared"
	WordRunnerNotEligible             = refusal.CodeRunnerNotEligible
	WordToolNotServed                 = refusal.CodeToolNotServed
	WordToolNotDeclared               = refusal.CodeToolNotDeclared
	WordContextNotAuthorable          = "context_not_authorable"
	// WordImportPatternUnmatched: a tool_provider_tools pattern matches no tool the workspace's
	// providers announce.
	WordImportPatternUnmatched = "import_pattern_unmatched"
	// WordReservedToolName: a tool_provider_tools name is a kernel tool's spelling.
	WordReservedToolName = refusal.CodeReservedToolName
	// WordPoolDefinitionConflict: members of the tool-provider pool announce one name with
	// different definitions, so no one definition can be frozen.
	WordPoolDefinitionConflict = "pool_definition_conflict"
	// WordInvalidTools is how the run door reports WordInvalid.
	WordInvalidTools = "invalid_tools"
)

// The request fields a refusal can name.
const (
	FieldToolDefinitions         = "tool_definitions"
	FieldKernelTools             = "kernel_tools"
	FieldRunnerExecutorPublicIDs = "runner_executor_public_ids"
	FieldRunnerToolNames         = "runner_tool_names"
	FieldToolNames               = "tool_names"
	FieldToolProviderTools       = "tool_provider_tools"
	FieldEagerToolNames          = "eager_tool_names"
	FieldDefaultRunner           = "default_runner_executor_public_id"
	// fieldStepTools is what a model step calls its declaration.
	fieldStepTools = "tools"
)

// Limits of the declaration rules.
const (
	// MaxDeclarationBytes bounds an authored list, a stored render, an assembled or frozen set
	// and each import list, measured on the compact encoding: a declaration rides at the front
	// of every cached prompt prefix, and 1 MiB is also the request body bound, so nothing a
	// client can send is refused for size by one door and accepted by another.
	MaxDeclarationBytes = 1 << 20
	// MaxNameLength bounds every callable, alias name, alias parameter key, route tool_name and
	// import name, in code points: providers refuse longer function names, and 128 is the
	// announced-tool bound, so every served name fits.
	MaxNameLength = 128
	// QualifiedPrefixLength is how much of a served name a qualified callable keeps, so that
	// with "__" and QualifiedHashLength hex digits it stays at most 63 characters, under the
	// 64 that model providers accept for a function name.
	QualifiedPrefixLength = 49
	// QualifiedHashLength is the number of hex digits of the qualifying hash: 48 bits make an
	// accidental collision between two Runners' tools negligible.
	QualifiedHashLength = 12
	// MaxSkillDescriptionBytes bounds a skill's description: it becomes one line of the skills
	// block, which is itself bounded, so one skill may not crowd out the others.
	MaxSkillDescriptionBytes = 1024
	// maxMessageQuote bounds how much of a client's string a refusal message quotes, so a
	// refusal of a 1 MiB name is not itself 1 MiB.
	maxMessageQuote = 80
)
