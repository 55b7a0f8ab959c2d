// Package conversations owns the member doors above the engine: the conversation doors (Doors:
// create, read, list, history, archive and post message, docs/api.md#conversations) and the run
// doors (create, read, list, task and sealed-request reads, start, stop, approve and deny, the
// member inbox, append, resolve and branch cancel, docs/api.md#runs) and the instance listing
// (docs/api.md#instances), which share the actor's
// write standing, the Idempotency-Key replay and the response documents (RunDoc, TaskDoc,
// ConversationDoc, TurnDoc). Each door takes a typed request that an in-process caller builds
// with Go values and the HTTP door decodes a body into: the run and its steps are core/steps'
// (steps.Run, steps.Step), the conversation and the message this package's (NewConversation,
// Message, requests.go). A door checks the caller and the request in the documented order;
// the engine's operations on runs.Tx make the changes. The doors' tests live here; they build
// the engine and the kernel's tools with core/runs/runstest.
//
// It also owns what a conversation-hosted run does to conversations and what their history
// answers: the conversation tools' side of spawn, send, status and cancel (resolving the
// addressee, the tree and standing checks, the messaging policy, the answerer's profile and model,
// and the child conversation, turn and request rows they write), the session history read and
// search of session_read and session_search, and the state of a conversation kernel memory binds
// to (gone, read-only or writable).
//
// The turns and requests live here through their whole life (turns.go): a turn posted, whoever
// posts it (a member's message, a brief or a send, a scheduled input whose time came, a steer
// whose reply ended before a seal carried it, a late result delivered as kernel mail), its run
// started, kept in step with its run and the next queued turn started after it; the reply a
// request's sender reads; the requests of a stopped run canceled, recursively. The engine reaches
// this side through runs.Conversations, which Hosted implements (core/server fills it), on its
// own transaction; the run and its rounds stay the engine's (runs.Tx.InsertTurnRun, StartRun,
// StopRun).
//
// It works inside the engine's transaction (runs.Tx: Engine.Write for the doors, a kernel call's
// KernelCall.Engine through On for the tools): runs are created, turns posted, runs stopped and
// requests canceled by the engine's own operations, so that they go through its lifecycle and
// wake-ups. The engine never imports it; core/kernel's tools check the arguments, call it, and
// word its refusals (core/refusal's one type, never a type of its own) as their error results. It must not import core/kernel,
// core/executors, core/httpapi or core/server.
package conversations
