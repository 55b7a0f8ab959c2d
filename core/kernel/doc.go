// Package kernel owns the kernel tool executors: the handlers the kernel's workers run for the
// tools Nexus itself serves, one file per family, behind one dispatch table keyed by canonical
// name. It implements core/runs' KernelTools interface; the engine claims and settles the rows,
// this package only computes each call's outcome.
//
// It must not decide anything about rows, deadlines or approval (core/runs does), must not
// re-implement memory semantics (sdk/memory's Engine does, run here over the kernel's store),
// and must not know HTTP. A kernel tool with no handler yet fails its task with tool_not_served
// and a detail naming the tool, never a pretended result.
package kernel
