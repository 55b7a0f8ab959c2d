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

// QueueStatements are the texts of the statements that read the kernel's queue (ClaimSpec.Queue),
// by the function that runs each, for a test to read their plans.
func QueueStatements(d Dialect, predicate string) map[string]string {
	spec := ClaimSpec{Predicate: predicate, Queue: true}
	return map[string]string{
		"AnyRunnable":         anyRunnableSQL(d, true, predicate),
		"LockRunWithRunnable": lockRunSQL(d, predicate),
		"Claim":               claimSQL(d, spec),
		"ClaimFirst":          claimFirstSQL(d, spec) + "id",
	}
}
