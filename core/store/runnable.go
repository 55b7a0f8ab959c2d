package store

// Runnable names the rows a claim takes (docs/development.md#how-the-kernel-runs-work): a
// condition over a task `t` and its run `r`, written here, with its arguments. The kernel's
// workers and the executor plane's claim door differ only in which rows are runnable for them;
// each names its rows by one of the constructors below, and no caller writes the condition.
type Runnable struct {
	cond string
	args []any
}

// The kernel's runnable rows: running, unclaimed, not lowered (a call that waits on its child),
// not past a deadline they have, in a running run; their arguments are false (lowered) and the
// time.
const (
	kernelRunnable = `t.status = 'running' AND t.claimed_at IS NULL AND t.lowered = ? AND r.status = 'running'`
	kernelAny      = kernelRunnable + `
 AND (t.kind = 'model_task' OR (t.kind = 'tool_task' AND t.addressed_role IS NULL))
 AND (t.deadline_at IS NULL OR t.deadline_at > ?)`
	kernelRound = kernelRunnable + `
 AND t.kind = 'model_task' AND (t.deadline_at IS NULL OR t.deadline_at > ?)`
	kernelTool = kernelRunnable + `
 AND t.kind = 'tool_task' AND t.addressed_role IS NULL AND (t.deadline_at IS NULL OR t.deadline_at > ?)`
)

// KernelRunnable is every row the kernel runs at now: a model round, or a tool row without an
// addressee.
func KernelRunnable(now int64) Runnable { return Runnable{cond: kernelAny, args: []any{false, now}} }

// KernelRoundRunnable is KernelRunnable narrowed to model rounds.
func KernelRoundRunnable(now int64) Runnable {
	return Runnable{cond: kernelRound, args: []any{false, now}}
}

// KernelToolRunnable is KernelRunnable narrowed to kernel tool rows.
func KernelToolRunnable(now int64) Runnable {
	return Runnable{cond: kernelTool, args: []any{false, now}}
}

// OfRun narrows r to the rows of one run.
func (r Runnable) OfRun(runID int64) Runnable {
	return Runnable{cond: r.cond + ` AND t.run_id = ?`, args: append(append([]any(nil), r.args...), runID)}
}

// DispatchedUnclaimed is one row, dispatched for an executor and not claimed: what an
// executor's claim of that row takes.
func DispatchedUnclaimed(taskID int64) Runnable {
	return Runnable{cond: `t.id = ? AND t.status = 'dispatched' AND t.claimed_at IS NULL`, args: []any{taskID}}
}
