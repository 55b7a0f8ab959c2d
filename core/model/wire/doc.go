// Package wire holds what the model provider adapters share: the HTTP client with its redirect
// rule and timeouts, the Server-Sent Events reader, the idle watch of a streamed answer, error
// details and the scrubbing of credentials out of them, the wire ids of replayed tool calls,
// the normalisation of replayed arguments, the attachment encoder, and the small JSON writer
// the request bodies are built with.
//
// It knows HTTP but no provider's wire shape: the adapters (core/model/openai,
// core/model/anthropic) map the sealed request and the answers. It imports core/model and
// nothing else of the kernel, never touches the store and never logs a request body or a
// credential.
package wire
