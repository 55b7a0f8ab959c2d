package envelope

// Bounds of a result (docs/api.md#limits). Byte bounds on a JSON value are measured on its
// canonical JSON (docs/api.md#conventions), so that two spellings of one value meet the same bound.
const (
	// MaxResultBytes bounds content plus structured_content: a result rides in the next
	// model request, which must stay well inside every provider's request limit.
	MaxResultBytes = 1 << 20
	// MaxBodyBytes bounds the body of the commit and resolution doors (docs/api.md#conventions): twice
	// the result bound, so that a full result fits with its escaping, title and metadata.
	// The door enforces it before any other check; Validate assumes it.
	MaxBodyBytes = 2 << 20
	// MaxContentBlocks bounds the block list: enough for any real tool answer, few enough
	// that the per-block checks and the projection stay cheap.
	MaxContentBlocks = 256
	// MaxTitleBytes bounds the one-line header of a collapsed transcript row.
	MaxTitleBytes = 512
	// MaxMetadataBytes bounds the model-invisible metadata: renderer material and a
	// checkpoint, not a second result channel.
	MaxMetadataBytes = 64 << 10
	// MaxFailureDetailBytes clips the text projection into a failed row's error detail
	// (docs/api.md#the-executor-plane): the detail is read in a one-line tool error, not as a result.
	MaxFailureDetailBytes = 1024
	// PromptExcerptChars and CallInputExcerptBytes bound a <task_result> head: enough to
	// recognise the work, small enough to repeat in every later round.
	PromptExcerptChars    = 80
	CallInputExcerptBytes = 200
)

// UploadURIPrefix is the one URI scheme the kernel resolves (docs/api.md#uploads); a
// resource_link's uri is this prefix and a lowercase UUID.
const UploadURIPrefix = "nexus://uploads/"
