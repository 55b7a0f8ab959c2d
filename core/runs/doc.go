// Package runs is the run engine. It owns the run and task rows and every change to them: the
// round driver and its pairing law, addressing, the approval gate, readiness and the run
// lifecycle, the rows the observing kernel tools place (branches, asks, waits) and the calls that
// settle with them, the delivery of branch results (unpaired results, wake rounds,
// kernel-authored turns, passive holds), the engine's side of the conversation tools' rows (the
// reply rows that bring answers back, scheduled sends and steers released, a stopped run's
// requests canceled), the scheduler (kernel workers over the one tasks queue, the sweeper and its
// expiry rule, crash recovery, wake-ups) and the transcript a model reads (the sealed request,
// <task_result>, <tool_use_error>, escaping). It keeps a conversation's turns in step with their runs
// (turns.go: the answerer's profile frozen onto a turn, a queued turn started, the next one after
// it), while the conversation doors are core/conversations'. It still serves the business logic
// of the run doors over those rows (standalone runs, tasks, the sealed-request read, approve and
// deny, stop, append, the member inbox, resolution and branch cancel).
//
// Packages above it change rows only through its one transaction API, Tx (Engine.Write and
// WriteIn; a kernel call's KernelCall.Engine): the run and row locks, the effects delivered after
// the commit, the wake-ups to send. core/executors settles its rows on it and core/conversations
// runs the conversation tools on it.
//
// It must not import core/conversations, core/kernel, core/executors, core/httpapi or
// core/server: kernel tool handlers, the texts of the results the engine settles on a tool's
// behalf and executor push reach it through the KernelTools, ToolTexts and ExecutorSignal
// interfaces it defines, which core/server fills, so the engine that settles work never depends
// on the code that does it. It never speaks HTTP: its doors take typed requests
// (CreateRunRequest, AppendRequest, ResolveRequest, with a Replay for the Idempotency-Key) and return typed refusals and document values. Append and Resolve answer the
// door's decoding refusal (the request's Invalid) at the body's place in their checks. Tool
// declarations are read through the Declarations seam; declaration rules live in core/declare. It
// reads no database driver: a conflict another transaction caused is store.ErrRetryable.
package runs
