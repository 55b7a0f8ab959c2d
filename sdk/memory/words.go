package memory

// Wire names of the six memory tools. Engine.Run also accepts their canonical spellings
// (nexus.memory.ls, …), which sdk/announce pairs with these.
const (
	ToolLs     = "memory_ls"
	ToolRead   = "memory_read"
	ToolGrep   = "memory_grep"
	ToolWrite  = "memory_write"
	ToolEdit   = "memory_edit"
	ToolDelete = "memory_delete"
)

// Refusal codes: the closed, model-readable vocabulary of the memory family
// (docs/agent-tools.md#memory-and-skills).
const (
	CodePathInvalid      = "memory_path_invalid"
	CodeScopeUnavailable = "memory_scope_unavailable"
	CodeReadOnly         = "memory_read_only"
	CodeReservedPrefix   = "memory_reserved_prefix"
	CodeNotFound         = "memory_not_found"
	CodeFull             = "memory_full"
	CodeTooLarge         = "memory_document_too_large"
	CodeContentInvalid   = "memory_content_invalid"
	CodeEditInvalid      = "memory_edit_invalid"
	CodeEditNotFound     = "memory_edit_not_found"
	CodeEditAmbiguous    = "memory_edit_ambiguous"
	CodePatternInvalid   = "memory_pattern_invalid"
	CodePatternTooCostly = "memory_pattern_too_costly"
	CodeUnavailable      = "memory_unavailable"
	CodeUnknownVerb      = "memory_unknown_verb"
)

// Fixed texts of the memory family (docs/agent-tools.md#memory-and-skills).
const (
	// TitleRefused is the title of every memory refusal.
	TitleRefused = "memory refused"
	// UnavailableDetail is memory_unavailable's fixed detail.
	UnavailableDetail = "the memory store could not complete this call"

	textNoDocuments  = "No memory documents."
	titleNoDocuments = "memory is empty"
	textNoMatches    = "No matches found."
	titleNoMatches   = "no matches"
	textGrepLimit    = "[Result limit reached. Narrow the pattern or raise limit=.]"
	titleDeleted     = "deleted"
)
