// Package uploads owns the files members and executors stage (docs/api.md#uploads): streaming
// ingest into 1 MiB chunks in the store with the size, SHA-256 and detected type measured on the
// way, the descriptor, the readers' visibility rules, ranged reads that stream chunk by chunk (and
// Media, the whole-upload reader a model provider opens attachment parts through), the
// ownership checks the commit and input doors make (unknown_result_upload, unknown_input_upload),
// binding an upload to the task or turn that keeps it alive, and the reclamation of uploads nothing
// binds after 24 hours.
//
// It also decides what the uploads a model request refers to become for that request's model
// (parts.go, docs/agent-tools.md#what-a-model-reads): a turn's or a step's input attachments
// checked and described (Service.Inputs, BindAttachments), a settled result's media links
// resolved (Service.ResultRefs), and each one, in request order, an attachment part or an index
// line whose ending says why not (Gate: the model's kinds, sizes, edges and counts, and the
// provider's earlier refusals). Where each sits in the sealed request is the run engine's
// assembly; the model's limits are core/model's.
//
// It must not know HTTP: multipart parsing, Range and ETag headers and the descriptor's JSON are
// core/httpapi's, and the content sniffer (which the standard library keeps in net/http) is
// handed in by core/server. Its binding functions take the caller's *store.Tx, because a
// binding is only as good as the transaction that settles the row it belongs to; it never
// settles a task itself.
package uploads
