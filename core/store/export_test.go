package store

// HoldPlanSlots takes every statement slot of s's plan group, so that the plans sent meanwhile
// queue; release hands the slot to them (they go out together) and waits until the group is idle.
func HoldPlanSlots(s *Store) (queued func() int, release func()) {
	g := &s.planGroup
	g.mu.Lock()
	g.sending += planStatementsInFlight
	g.mu.Unlock()
	queued = func() int {
		g.mu.Lock()
		defer g.mu.Unlock()
		return len(g.queue)
	}
	release = func() {
		for i := 0; i < planStatementsInFlight; i++ {
			g.next(s)
		}
	}
	return queued, release
}

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
