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

// RunnableWhere is a Runnable of the condition cond over `t` and `r`, for tests of the claim
// primitive itself.
func RunnableWhere(cond string, args ...any) Runnable { return Runnable{cond: cond, args: args} }
