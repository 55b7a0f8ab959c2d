package plugins

import (
	"context"
	"errors"
	"sync"
	"time"
)

// Bounds of the claim loop.
const (
	// inboxPage is how many rows one inbox read asks for at most.
	inboxPage = 64
	// feedRetry is how soon the loop tries again to open a work feed the plane refused (the
	// kernel shutting down, a store error): soon enough that work waits seconds for a wake-up,
	// not a poll interval; the poll keeps claiming meanwhile.
	feedRetry = time.Second
	// wakeupGrace is how long a row must have been claimable before the poll's fill began for
	// the poll's claim of it to count as one a wake-up should have announced: the publisher
	// delivers right after its commit, so a younger row's wake-up may still be on its way.
	wakeupGrace = 100 * time.Millisecond
	// lateWakeup is how long after the poll's claims a wake-up may still arrive and be taken for
	// theirs. A row's claimable time is its dispatching transaction's start, and its wake-up
	// leaves after that transaction's commit: on a busy machine the commit and the publisher's
	// turn can take longer than the grace, so the poll may beat a wake-up that was on its way.
	// A feed that works announces within this; one that lost the row stays silent through it.
	// Short beside any poll interval worth having (thirty seconds by default).
	lateWakeup = time.Second
)

// fillCause says why the claim loop reads the inbox, if at all.
type fillCause int

const (
	fillNone      fillCause = iota // nothing to read: news of cancellations only
	fillStart                      // the loop started or its feed was (re)opened
	fillWoken                      // the feed announced work it did not name: read the inbox
	fillAnnounced                  // the feed named the rows it announced: claim them, no read
	fillFreed                      // a slot freed or the state changed
	fillPolled                     // the poll's tick, with nothing else waiting
)

// claimer is one claim loop's state: the loop of one ready instance (docs/development.md#the-plugin-host).
type claimer struct {
	s    *supervisor
	id   string
	in   *instance
	feed WorkFeed
	// listed holds the rows the last inbox read listed, and those announced since: a row the
	// poll claims that a read or a wake-up already named waited for a slot or a retry, not for a
	// wake-up.
	listed map[string]bool
	// announced are the rows the feed named since the last claim of announced rows.
	announced []WorkRef
	// pending says that rows may wait unclaimed for want of a slot (or of the claiming state):
	// the next freed slot reads the inbox. Without it a call's end reads nothing.
	pending bool
}

// maxListed bounds the rows a claim loop remembers as listed between two inbox reads: past it
// the loop forgets them, and the poll's count may take a row a wake-up named for one it missed,
// which only a loop that claimed thousands of rows without a slot freeing could meet.
const maxListed = 4096

// claimLoop claims the executor's rows while the instance is ready: it wakes on the work feed,
// when a slot frees, and on the poll's timer, the safety net, then pages the inbox. The feed
// never closes for falling behind (WorkFeed); one that ends is reopened at once and followed
// by an inbox read, so no row waits for the poll.
func (s *supervisor) claimLoop(ctx context.Context, in *instance) {
	s.mu.Lock()
	id := s.executorID
	s.mu.Unlock()
	c := &claimer{s: s, id: id, in: in}
	c.openFeed(ctx, false)
	defer func() {
		if c.feed != nil {
			c.feed.Close()
		}
	}()
	poll := time.NewTicker(s.h.timings.InboxPoll)
	defer poll.Stop()
	var retry *time.Timer
	defer func() {
		if retry != nil {
			retry.Stop()
		}
	}()
	// suspects are the poll's claims of rows no wake-up had announced; they count as found by
	// the poll unless a wake-up arrives within lateWakeup (judge).
	var suspects []InboxRow
	var judge *time.Timer
	defer func() {
		if judge != nil {
			judge.Stop()
		}
	}()
	cause := fillStart
	for {
		freed := s.freed() // taken before fill, so a slot freed during it still wakes the loop
		if cause == fillAnnounced {
			c.claimAnnounced(ctx)
		} else if cause != fillNone {
			if found := c.fill(ctx, cause == fillPolled); len(found) > 0 {
				suspects = append(suspects, found...)
				if judge == nil {
					judge = time.NewTimer(lateWakeup)
				}
			}
		}
		var judged <-chan time.Time
		if judge != nil {
			judged = judge.C
		}
		var wake, done <-chan struct{}
		var retried <-chan time.Time
		if c.feed != nil {
			wake, done = c.feed.Wake(), c.feed.Done()
		} else {
			if retry == nil {
				retry = time.NewTimer(feedRetry)
			}
			retried = retry.C
		}
		select {
		case <-ctx.Done():
			return
		case <-wake:
			suspects, judge = cleared(judge)
			cause = c.news(ctx)
		case <-judged:
			judge = nil
			for _, row := range suspects {
				s.pollFound(row)
			}
			suspects = nil
			cause = fillNone
		case <-done:
			c.feed.Close()
			c.feed = nil
			cause = fillNone
			if c.openFeed(ctx, true) {
				cause = fillStart
			}
		case <-retried:
			retry = nil
			cause = fillNone
			if c.openFeed(ctx, false) {
				cause = fillStart
			}
		case <-freed:
			cause = fillNone
			if c.pending {
				cause = fillFreed
			}
		case <-poll.C:
			// A wake-up or a freed slot waiting beside the tick goes first: the poll counts
			// only what nothing else would have found.
			select {
			case <-wake:
				suspects, judge = cleared(judge)
				cause = c.news(ctx)
			case <-freed:
				cause = fillPolled
				if c.pending {
					cause = fillFreed
				}
			default:
				cause = fillPolled
			}
		}
	}
}

// openFeed subscribes to the executor's work feed and reports whether it is open; reopen says
// that the previous feed ended.
func (c *claimer) openFeed(ctx context.Context, reopen bool) bool {
	f, err := c.s.h.plane.Subscribe(ctx, c.id)
	if err != nil {
		if ctx.Err() == nil {
			c.s.logger.Warn("opening the work feed failed; retrying", "plugin", c.s.entry.Name, "retry", feedRetry, "error", err)
		}
		return false
	}
	if reopen {
		c.s.logger.Info("work feed ended; reopened it and reading the inbox", "plugin", c.s.entry.Name)
	}
	c.feed = f
	return true
}

// news acts on the feed's news: cancels the calls of cancelled rows, re-reads every held claim
// when cancellations were lost, and answers whether to claim the rows the feed named or to read
// the inbox.
func (c *claimer) news(ctx context.Context) fillCause {
	n := c.feed.Take()
	for _, r := range n.Canceled {
		c.s.cancelCall(r.RunID, r.TaskKey)
	}
	if n.CancelsLost {
		c.recheck(ctx)
	}
	switch {
	case !n.Available:
		return fillNone
	case n.Missed || len(n.Rows) == 0:
		c.announced = nil // the inbox lists them
		return fillWoken
	}
	c.announced = append(c.announced, n.Rows...)
	return fillAnnounced
}

// claimAnnounced claims the rows the feed named while slots are free, as an inbox read's page
// would be claimed, without the read: the event's path to a claim is the claim's transaction
// alone. A row left over for want of a slot is listed by the inbox read that a freed slot starts.
func (c *claimer) claimAnnounced(ctx context.Context) {
	refs := c.announced
	c.announced = nil
	rows := make([]InboxRow, 0, len(refs))
	for _, r := range refs {
		rows = append(rows, InboxRow{RunID: r.RunID, TaskKey: r.TaskKey})
	}
	if c.listed == nil || len(c.listed) >= maxListed {
		c.listed = map[string]bool{}
	}
	_, _, _ = c.claimPage(ctx, rows, c.listed, false, time.Now())
}

// recheck re-reads the claim of every call in flight and cancels those no longer held: the
// feed lost cancellations, and any of them may have been one of these.
func (c *claimer) recheck(ctx context.Context) {
	c.s.mu.Lock()
	calls := make([]*call, 0, len(c.s.inflight))
	for _, cl := range c.s.inflight {
		calls = append(calls, cl)
	}
	c.s.mu.Unlock()
	for _, cl := range calls {
		if cl.ctx.Err() != nil {
			continue
		}
		active, err := c.s.h.plane.ClaimActive(ctx, c.id, cl.claim)
		switch {
		case err != nil:
			if ctx.Err() == nil {
				c.s.logger.Warn("re-reading a claim failed", "plugin", c.s.entry.Name, "run", cl.claim.RunID, "task", cl.claim.TaskKey, "error", err)
			}
		case !active:
			cl.cancel()
		}
	}
}

// cleared drops the poll's suspects when a wake-up arrives within lateWakeup of their claims:
// the wake-up was on its way (lateWakeup). The feed coalesces, so the wake-up may be another
// row's: under traffic the count is a lower bound, and a feed that stopped announcing, the
// failure it exists to show, is silent and counted.
func cleared(judge *time.Timer) ([]InboxRow, *time.Timer) {
	if judge != nil {
		judge.Stop()
	}
	return nil, nil
}

// fill reads the inbox from its head and claims its rows while slots are free. It pages on only
// past rows it could not claim (running here, claimed elsewhere, not this executor's): after a
// page whose rows it claimed, while more may wait, it stops and leaves them pending, and each
// slot those calls free reads from the head again. So the oldest rows go first (a cursor walking
// forward under a steady stream of new rows would pass over an older run's next round until its
// budget lapsed), and the loop gets back to its feed's news between reads. polled says the
// poll's tick asked for it: it answers the rows it claimed that a wake-up should have announced,
// for the loop to judge (lateWakeup) and count (pollFound).
func (c *claimer) fill(ctx context.Context, polled bool) (found []InboxRow) {
	s := c.s
	start := time.Now()
	after := ""
	var listed map[string]bool
	defer func() {
		if listed != nil {
			c.listed = listed
		}
	}()
	c.pending = false
	for ctx.Err() == nil {
		free := cap(s.slots) - len(s.slots)
		if free <= 0 || !s.claiming() {
			c.pending = true
			return found
		}
		rows, next, err := s.h.plane.Inbox(ctx, c.id, after, min(free, inboxPage))
		if err != nil {
			c.pending = true
			if ctx.Err() == nil {
				s.logger.Warn("inbox read failed", "plugin", s.entry.Name, "error", err)
			}
			return found
		}
		if listed == nil {
			listed = map[string]bool{}
		}
		full, claimed, polledFinds := c.claimPage(ctx, rows, listed, polled, start)
		found = append(found, polledFinds...)
		if full || next == "" || len(rows) == 0 {
			return found
		}
		if claimed > 0 {
			c.pending = true
			return found
		}
		after = next
	}
	return found
}

// claimPage claims a page's rows while slots are free, all at once: each claim is a durable
// write of its own, and a burst of rows need not wait for one another's. It answers whether the
// slots ran out, how many rows it claimed and, for the poll, the rows a wake-up should have
// announced (fill). A row whose call still runs here (its claim was released and the row
// dispatched again) is left pending: the call's end reads the inbox.
func (c *claimer) claimPage(ctx context.Context, rows []InboxRow, listed map[string]bool, polled bool, start time.Time) (full bool, claimed int, found []InboxRow) {
	s := c.s
	var wg sync.WaitGroup
	var mu sync.Mutex
	retry := false
	for _, row := range rows {
		key := callKey(row.RunID, row.TaskKey)
		listed[key] = true
		if !s.claiming() {
			c.pending = true
			continue
		}
		if s.running(row.RunID, row.TaskKey) {
			c.pending = true
			continue
		}
		select {
		case s.slots <- struct{}{}:
		default:
			full = true
		}
		if full {
			c.pending = true
			break
		}
		// Claimable since before the tick by the grace, and unseen by the last read: a wake-up
		// should have brought the loop here.
		missed := polled && row.Waited-time.Since(start) >= wakeupGrace && !c.listed[key]
		wg.Add(1)
		go func() {
			defer wg.Done()
			cl, err := s.h.plane.Claim(ctx, c.id, row.RunID, row.TaskKey)
			if err != nil {
				<-s.slots
				if !errors.Is(err, ErrAlreadyClaimed) && !errors.Is(err, ErrNotEligible) && ctx.Err() == nil {
					s.logger.Warn("claim failed", "plugin", s.entry.Name, "run", row.RunID, "task", row.TaskKey, "error", err)
					mu.Lock()
					retry = true // the row waits in the inbox for the next read
					mu.Unlock()
				}
				return
			}
			mu.Lock()
			claimed++
			if missed {
				found = append(found, row)
			}
			mu.Unlock()
			s.begin(cl, c.in)
		}()
	}
	wg.Wait()
	if retry {
		c.pending = true
	}
	return full, claimed, found
}

// pollFound counts and logs a row the poll claimed that no wake-up announced: the wake-up path
// failed, and the poll's interval is what the row waited for.
func (s *supervisor) pollFound(row InboxRow) {
	s.mu.Lock()
	s.pollFinds++
	s.mu.Unlock()
	s.logger.Warn("the inbox poll found work no wake-up announced", "plugin", s.entry.Name, "executor", s.executorID,
		"run", row.RunID, "task", row.TaskKey, "tool", row.ToolName, "waited_ms", row.Waited.Milliseconds())
}

// freed answers a channel closed at the next change of the supervisor: a state change or a
// call ending, which frees a slot.
func (s *supervisor) freed() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.changed
}
