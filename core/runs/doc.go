// Package runs is the run engine: the business logic of the run doors (conversations and their
// turns, standalone runs, tasks, the sealed-request read, approve and deny, stop, append, the
// member inbox, resolution and branch cancel), the round driver
// and its pairing law, addressing, the approval gate, readiness and the run lifecycle, the rows
// the observing kernel tools place (branches, asks, waits) and the calls that settle with them,
// the delivery of branch results (unpaired results, wake rounds, kernel-authored turns, passive
// holds), the conversation tools' rows (child conversations and briefs, sends, steers,
// scheduled inputs, the reply rows that bring answers back, cancellation), the
// scheduler (kernel workers over the one tasks queue, the sweeper and its expiry rule, crash
// recovery, wake-ups) and the transcript a model reads (the sealed request, <task_result>,
// <tool_use_error>, escaping).
//
// Packages above it change rows only through its one transaction API, Tx (Engine.Write and
// WriteIn; a kernel call's KernelCall.Engine): the run and row locks, effects delivered after the
// commit, the wake-ups to send. core/conversations runs the conversation tools on it.
//
// It must not import core/conversations, core/kernel, core/executors, core/httpapi or
// core/server: kernel tool handlers, their texts and executor push reach it through the
// KernelTools, ToolTexts and ExecutorSignal interfaces it defines, which core/server fills, so the
// engine that settles work never depends on the code that does it. It never speaks HTTP: its doors take typed requests (CreateRunRequest,
// AppendRequest, ResolveRequest, PostMessageRequest, with a Replay for the Idempotency-Key) and
// return typed refusals and document values. Append and Resolve answer the door's decoding
// refusal (the request's Invalid) at the body's place in their checks. Tool
// declarations are read through the Declarations seam; declaration rules live in core/declare.
package runs
