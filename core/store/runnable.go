package store

// Runnable names the rows a claim takes (docs/development.md#how-the-kernel-runs-work): a
// condition over a task `t` and its run `r`, written here, with its arguments. The kernel's
// workers and the executor plane's claim door differ only in which rows are runnable for them;
// each names its rows by one of the constructors below, and no caller writes the condition.
type Runnable struct {
	cond string
	args []any
	// queue is whether the rows are the kernel's queue, looked for across runs: cond implies
	// runnableCondition, the condition of the partial index tasks_runnable, and the statements
	// that look for them read them through that index in its order (from).
	queue bool
}

// runnableCondition is the condition of the partial index tasks_runnable, ON tasks
// (dispatched_at, id): the rows that are running and unclaimed, the kernel's queue.
const runnableCondition = `t.status = 'running' AND t.claimed_at IS NULL`

// The kernel's runnable rows: running, unclaimed (the queue, runnableCondition), not lowered (a
// call that waits on its child), not past a deadline they have, in a running run; their arguments
// are false (lowered) and the time.
const (
	kernelRunnable = runnableCondition + ` AND t.lowered = ? AND r.status = 'running'`
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
func KernelRunnable(now int64) Runnable {
	return Runnable{cond: kernelAny, args: []any{false, now}, queue: true}
}

// KernelRoundRunnable is KernelRunnable narrowed to model rounds.
func KernelRoundRunnable(now int64) Runnable {
	return Runnable{cond: kernelRound, args: []any{false, now}, queue: true}
}

// KernelToolRunnable is KernelRunnable narrowed to kernel tool rows.
func KernelToolRunnable(now int64) Runnable {
	return Runnable{cond: kernelTool, args: []any{false, now}, queue: true}
}

// OfRun narrows r to the rows of one run. Those are found by the run's key, not by reading the
// queue: the narrowed rows are not read through tasks_runnable.
func (r Runnable) OfRun(runID int64) Runnable {
	return Runnable{cond: r.cond + ` AND t.run_id = ?`, args: append(append([]any(nil), r.args...), runID)}
}

// DispatchedUnclaimed is one row, dispatched for an executor and not claimed: what an
// executor's claim of that row takes.
func DispatchedUnclaimed(taskID int64) Runnable {
	return Runnable{cond: `t.id = ? AND t.status = 'dispatched' AND t.claimed_at IS NULL`, args: []any{taskID}}
}

// from is the FROM clause of the statements that look for r's rows: a task t of its run r. For
// the queue on SQLite it names its plan: the tasks through the partial index tasks_runnable
// (INDEXED BY), in the index's order, which is the claim's ORDER BY, as the outer loop (CROSS
// JOIN: SQLite keeps the left table outermost), each row's run read by its key. SQLite chooses
// plans by statistics that only ANALYZE makes, and a database that never ran it (every new one)
// has none: the planner then scanned the running runs and each one's tasks, sorting the whole
// queue on every claim, visiting every running run each time. PostgreSQL keeps its statistics
// by itself (autovacuum) and is left to choose.
func (r Runnable) from(d Dialect) string {
	if r.queue && d == SQLite {
		return `tasks t INDEXED BY tasks_runnable CROSS JOIN runs r ON r.id = t.run_id`
	}
	return `tasks t JOIN runs r ON r.id = t.run_id`
}
