// Package envelope owns the tool result envelope (docs/api.md#the-result-envelope): the one grammar
// in which an executor's commit and a person's answer to an ask come back. It validates a body's
// result part in the specified order and names each refusal with its word and path, normalises the
// result to what is stored (a bare string and a single text block write the same bytes; a blank
// result writes no body), lists the uploads the result links so that the caller can check their
// ownership, and computes the text projection a model reads.
//
// It is pure: it imports only core/refusal, the SDK's JSON walker (sdk/announce/jsonwire, which
// the announcement validator shares) and the standard library, touches no store and knows no
// HTTP. Deciding whether an upload is the committer's own, binding it, settling the
// task and closing the park on result_unstorable are the caller's; this package only answers
// with the word that tells the caller which of those to do.
package envelope
