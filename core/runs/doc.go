// Package runs is the run engine: rounds, pairing, readiness, scheduling, expiry and the sealed
// request's assembly. It owns the run and task rows and every change to them: the round driver and
// its pairing law, addressing, the approval gate's place in readiness (the evaluation is
// core/approval's), readiness and the run lifecycle, writing the rows the observing kernel tools
// place (core/kernel builds a branch's first round, a wait's and an ask's await; Placement) and the
// observation that settles their calls, a waited target's final work (Tx.FinalWork, WaitCycle),
// the delivery of branch results (unpaired results, wake rounds, passive holds, kernel mail), the
// reply rows under a spawn's or send's call (settled with the reply core/conversations reads), the
// scheduler (kernel workers over the one tasks queue, the sweeper and its expiry rule, crash
// recovery, wake-ups) and the sealed request a model reads: which envelope each result travels in
// and where each upload sits are the engine's; core/envelope words <task_result>, <answer> and
// <tool_use_error>, and core/uploads decides what each upload becomes for the request's model.
//
// It owns no member door. The run doors (create, read, list, task and sealed-request reads,
// start, stop, approve and deny, the inbox, append, resolve, branch cancel) are
// core/conversations', beside the conversation doors: they check the actor's standing and the
// request, replay an Idempotency-Key and build the documents, and make their changes through the
// engine's operations on Tx (Tx.CreateRun and Engine.CreateInStatement, Tx.ParseSteps and
// AppendSteps, StartRun, StopRun, Decide, AnswerAsk, Expire, CancelBranch), which take the typed
// run and steps of core/steps. The step grammar is core/steps' (steps.Judge); the engine answers
// the checks it cannot make alone (steps.Lookups: a Runner's announcement, the caller's uploads,
// a declaration's freeze, the models catalog) in the transaction that accepts the steps
// (steps.go), and writes their rows.
//
// Packages above it change rows only through its one transaction API, Tx (Engine.Write and
// WriteIn; a kernel call's KernelCall.Engine): the run and row locks, the effects delivered after
// the commit, the wake-ups to send. core/executors settles its rows on it and core/conversations
// runs the conversation tools, the doors and a conversation's turns on it: a turn's run and first
// round are the engine's (Tx.InsertTurnRun, StartRun), the turn and request rows
// core/conversations'.
//
// Acceptance freezes onto new work what core/declare and core/profiles decide (freeze.go): a
// model step's declaration (declare.Compiler.Step and Accept, with the Runners and kernel skill
// documents they name read in the accepting transaction) and the answering agent's profile as it
// stands now (profiles.Service); a round's frozen set is read back through projection.Open. The
// engine re-implements no declaration rule.
//
// It decides every transition and writes none by hand: each is one of core/store's named
// statements (store.Dispatch, store.Fail, store.Settle, store.SettleRound, store.MoveRun, …),
// filled with the statuses and values the engine decides and the guards it holds (the row's
// status, its claim's store.Fence), and the claims take the rows store.KernelRunnable and its
// narrowings name. It writes no SQL (docs/development.md#how-a-door-reaches-the-store).
// Readiness works on the run's trace (store.TaskTrace); what needs a row's body reads it whole.
//
// It must not import core/conversations, core/kernel, core/executors, core/httpapi or
// core/server: kernel tool handlers, the texts of the results the engine settles on a tool's
// behalf, the turns and requests of conversation-hosted runs, executor push, the executors'
// announcements and the workspace's memory override reach it through the KernelTools, ToolTexts,
// Conversations, ExecutorSignal, Announcements and MemoryOverrides seams it defines, which
// core/server fills (ToolTexts and Conversations are required: New refuses an engine without
// them), so the engine that settles work never depends on the code that does it. It never speaks HTTP
// and reads no database driver: a conflict another transaction caused is store.ErrRetryable.
package runs
