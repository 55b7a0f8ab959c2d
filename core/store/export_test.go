package store

// MaxPendingNotifications is NotifyLater's queue bound.
const MaxPendingNotifications = maxPendingNotifications

// PendingNotifications is how many of NotifyLater's payloads wait for the sender.
func PendingNotifications(s *Store) int {
	if s.notify == nil {
		return 0
	}
	s.notify.mu.Lock()
	defer s.notify.mu.Unlock()
	return len(s.notify.pending)
}

// QueueStatement is the text of a statement that reads the kernel's queue, with its arguments.
type QueueStatement struct {
	Text string
	Args []any
}

// QueueStatements are the statements that read the kernel's queue (the kernel's Runnables at
// now), by the function that runs each and the rows it looks for, for a test to read their plans.
func QueueStatements(d Dialect, now int64) map[string]QueueStatement {
	out := map[string]QueueStatement{}
	for name, r := range map[string]Runnable{
		"KernelRunnable": KernelRunnable(now), "KernelRoundRunnable": KernelRoundRunnable(now),
		"KernelToolRunnable": KernelToolRunnable(now),
	} {
		out["AnyRunnable "+name] = QueueStatement{anyRunnableSQL(d, r), r.args}
		out["LockRunWithRunnable "+name] = QueueStatement{lockRunSQL(d, r), r.args}
		out["Claim "+name] = QueueStatement{claimSQL(d, r), append(append([]any(nil), r.args...), 1)}
		out["ClaimFirst "+name] = QueueStatement{claimFirstSQL(d, r) + "id",
			append([]any{[]byte{}, KernelClaimant, nil, now, now, now, 0, ""}, r.args...)}
	}
	return out
}

// RunnableWhere is a Runnable of the condition cond over `t` and `r`, for tests of the claim
// primitive itself.
func RunnableWhere(cond string, args ...any) Runnable { return Runnable{cond: cond, args: args} }

// PendingWrites is how many writes wait in SQLite's group-commit queue.
func PendingWrites(s *Store) int {
	s.group.mu.Lock()
	defer s.group.mu.Unlock()
	return len(s.group.pending)
}
