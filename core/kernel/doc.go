// Package kernel owns the kernel tool executors: the handlers the kernel's workers run for the
// tools Nexus itself serves, one file per family (memory, models, discovery with its search index,
// runners, skill, graph, human, history, conversation), behind one dispatch table keyed by
// canonical name, with the shared argument checks and result forms of
// docs/agent-tools.md#what-a-model-reads, and the texts, titles and argument words those tools
// speak, including the few the engine writes when it settles a call on a tool's behalf (an
// expired, canceled or collected wait, a waited spawn whose waiting ended, a waited
// delegate_task's model line), which it reads through runs.ToolTexts. It implements core/runs'
// KernelTools interface; the engine claims and settles the rows, this package only computes each
// call's outcome, or the rows a call places for the engine to write and observe: a delegate_task
// branch's first round, a wait's await (its target resolved here, its clock clamped to
// WaitClamp), an ask's await (addressed to the person the run acts for, parked AskPark),
// tool_call's child. The conversation and history tools check their arguments here and call
// core/conversations for the rows and reads.
//
// It must not change a row, nor decide readiness, addressing or approval (core/runs does),
// must not re-implement memory semantics (sdk/memory's Engine does, run here over the kernel's
// store) or declaration rules (core/declare and core/projection do), and must not know HTTP.
// Full builds the table the server runs, with a handler for each of the twenty registered
// tools; a table built by New with fewer families fails a missing tool's task with
// tool_not_served and a detail naming the tool, never a pretended result.
package kernel
