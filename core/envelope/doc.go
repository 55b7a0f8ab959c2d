// Package envelope owns the tool result envelope (docs/api.md#the-result-envelope): the one grammar
// in which an executor's commit and a person's answer to an ask come back. A result arrives as a
// Submission: decoded by Decode from the members of a body a door split once (what only the body's
// own bytes show, such as a repeated key, a mistyped value or text the store cannot keep, is kept
// for its place in the order), or filled with typed values by an in-process committer (the plugin
// host's executor plane), which writes no JSON. Validate judges either kind once, in the specified
// order, naming each refusal with its word and path; it normalises the result to what is stored
// (a bare string and a single text block write the same bytes; a blank result writes no body),
// lists the uploads the result links so that the caller can check their ownership, and the Result
// computes the text projection a model reads.
//
// It also words the text a model reads of settled work (docs/agent-tools.md#what-a-model-reads,
// transcript.go): the escaping that protects the kernel's framing (Escape), the <task_result>
// envelope a result is delivered in (TaskResult, with its excerpt bounds), an ask's <answer> and
// the <tool_use_error> of a call that could not run. Which envelope a result travels in, and what
// it carries, is the engine's to decide; the sentence each task error key says is core/runs'.
//
// It is pure: it imports only core/refusal, the SDK's JSON walker (sdk/jsonwire, which
// the announcement validator shares) and the standard library, touches no store and knows no
// HTTP. The body bound and a body that is not one object are the doors' to refuse. Deciding
// whether an upload is the committer's own, binding it, settling the task and closing the park on
// result_unstorable are the caller's; this package only answers with the word that tells the
// caller which of those to do.
package envelope
