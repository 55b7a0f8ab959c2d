package plugins

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nexuskernel/nexus/sdk/announce"
	"github.com/nexuskernel/nexus/sdk/plugin"
)

// slowPoll is a poll no test waits for: what these tests see claimed, a wake-up claimed.
func slowPoll() Timings {
	t := fastTimings
	t.InboxPoll = time.Hour
	return t
}

// firstRead waits for the claim loop's first inbox read, which finds whatever was parked before
// it started: what is pushed after it needs a wake-up or the poll.
func firstRead(t testing.TB, plane *recordingPlane) {
	t.Helper()
	plane.await(t, 10*time.Second, "the claim loop's first inbox read", func() bool { return plane.inboxReads > 0 })
}

// memoryHost runs the memory-inmem scenario as "mem" on timings and waits for its claim loop's
// first inbox read; it answers the host, its plane and the executor.
func memoryHost(t testing.TB, timings Timings) (*testHost, *recordingPlane, string) {
	t.Helper()
	plane := newPlane()
	th := startHostWith(t, plane, timings, scenarioEntry(t, "mem", plugin.KindMemory, "memory-inmem"))
	th.waitState(t, "mem", StateReady, 10*time.Second)
	id := th.executor(t, "mem")
	firstRead(t, plane)
	return th, plane, id
}

// TestClaimLoopClaimsNamedRows: a wake-up that names its rows has them claimed with no inbox
// read; one that names none (or says events were missed) has the inbox read.
func TestClaimLoopClaimsNamedRows(t *testing.T) {
	t.Parallel()
	_, plane, id := memoryHost(t, slowPoll())
	plane.mu.Lock()
	plane.naming = true
	reads := plane.inboxReads
	plane.mu.Unlock()
	for _, task := range []string{"a", "b", "c"} {
		plane.push(id, memoryClaim(task, "memory_read", `{"path":"workspace/a.md"}`))
	}
	plane.await(t, 10*time.Second, "the named rows' commits", func() bool { return len(plane.commits) == 3 })
	plane.mu.Lock()
	if plane.inboxReads != reads {
		plane.mu.Unlock()
		t.Fatalf("%d inbox reads for rows the wake-ups named", plane.inboxReads-reads)
	}
	plane.naming = false
	plane.mu.Unlock()
	plane.push(id, memoryClaim("d", "memory_read", `{"path":"workspace/a.md"}`))
	plane.await(t, 10*time.Second, "the unnamed row's commit", func() bool { return len(plane.commits) == 4 })
	plane.mu.Lock()
	defer plane.mu.Unlock()
	if plane.inboxReads == reads {
		t.Fatal("a wake-up that named no row did not have the inbox read")
	}
}

// TestPollFoundCounts: rows whose wake-ups are lost are claimed by the poll, counted in
// poll_found and logged at warn; rows announced by a wake-up are not counted, and neither is a
// row the previous inbox read already saw.
func TestPollFoundCounts(t *testing.T) {
	t.Parallel()
	th, plane, id := memoryHost(t, fastTimings)
	plane.mu.Lock()
	plane.deaf, plane.age = true, time.Hour
	plane.mu.Unlock()
	plane.push(id, memoryClaim("lost", "memory_write", `{"path":"workspace/a.md","content":"a"}`))
	plane.await(t, 10*time.Second, "the poll's claim", func() bool { return len(plane.commits) == 1 })
	claimed := time.Now()
	awaitPollFound(t, th, 1)
	if waited := time.Since(claimed); waited < lateWakeup/2 {
		t.Fatalf("the find was counted %v after its claim, before a late wake-up could arrive", waited)
	}
	if log := th.logs.String(); !strings.Contains(log, "the inbox poll found work no wake-up announced") ||
		!strings.Contains(log, "task=lost") || !strings.Contains(log, "[WARN]") {
		t.Fatalf("no warning for the find:\n%s", log)
	}
	plane.mu.Lock()
	plane.deaf, plane.age = false, 0
	plane.mu.Unlock()
	for _, task := range []string{"a", "b", "c"} {
		plane.push(id, memoryClaim(task, "memory_read", `{"path":"workspace/a.md"}`))
	}
	plane.await(t, 10*time.Second, "the announced claims", func() bool { return len(plane.commits) == 4 })
	if st := th.status(t, "mem"); st.PollFound != 1 {
		t.Fatalf("poll_found %d after announced rows", st.PollFound)
	}
}

// TestPollFoundSkipsRowsAlreadyListed: a row the last inbox read listed but failed to claim
// waited for a retry, not for a wake-up, when the poll claims it: it is not counted.
func TestPollFoundSkipsRowsAlreadyListed(t *testing.T) {
	t.Parallel()
	th, plane, id := memoryHost(t, fastTimings)
	plane.mu.Lock()
	plane.age = time.Hour // every row looks long parked: only the listing tells them apart
	plane.failClaims = map[string]int{"retried": 1}
	plane.mu.Unlock()
	plane.push(id, memoryClaim("retried", "memory_write", `{"path":"workspace/r.md","content":"r"}`))
	plane.await(t, 10*time.Second, "the retried claim's commit", func() bool { return len(plane.commits) == 1 })
	if st := th.status(t, "mem"); st.PollFound != 0 {
		t.Fatalf("poll_found %d for a row whose claim the poll retried", st.PollFound)
	}
	if !strings.Contains(th.logs.String(), "claim failed") {
		t.Fatalf("the injected failure was not met:\n%s", th.logs.String())
	}
}

// TestPollFoundSkipsAnnouncedDuringTheFill: a row the poll claims while its wake-up arrives (its
// commit ended during the poll's inbox read) was announced, late: it is not counted.
func TestPollFoundSkipsAnnouncedDuringTheFill(t *testing.T) {
	t.Parallel()
	th, plane, id := memoryHost(t, fastTimings)
	plane.mu.Lock()
	plane.deaf, plane.age, plane.wakeOnClaim = true, time.Hour, true
	plane.mu.Unlock()
	plane.push(id, memoryClaim("late", "memory_write", `{"path":"workspace/l.md","content":"l"}`))
	plane.await(t, 10*time.Second, "the poll's claim", func() bool { return len(plane.commits) == 1 })
	if st := th.status(t, "mem"); st.PollFound != 0 {
		t.Fatalf("poll_found %d for a row whose wake-up came during the poll's fill", st.PollFound)
	}
}

// awaitPollFound waits until the plugin's poll_found reaches want.
func awaitPollFound(t testing.TB, th *testHost, want int) {
	t.Helper()
	end := time.Now().Add(10 * time.Second)
	for th.status(t, "mem").PollFound < want {
		if time.Now().After(end) {
			t.Fatalf("poll_found %d, want %d", th.status(t, "mem").PollFound, want)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestPollFoundSkipsAnnouncedJustAfterTheFill: a row the poll claims whose wake-up arrives
// shortly after the claim (its commit and the publisher's turn took longer than the grace) was
// announced, late: it is not counted. The same row with no wake-up at all is.
func TestPollFoundSkipsAnnouncedJustAfterTheFill(t *testing.T) {
	t.Parallel()
	th, plane, id := memoryHost(t, fastTimings)
	plane.mu.Lock()
	plane.deaf, plane.age, plane.wakeAfterClaim = true, time.Hour, lateWakeup/4
	plane.mu.Unlock()
	plane.push(id, memoryClaim("late", "memory_write", `{"path":"workspace/l.md","content":"l"}`))
	plane.await(t, 10*time.Second, "the poll's claim", func() bool { return len(plane.commits) == 1 })
	time.Sleep(2 * lateWakeup)
	if st := th.status(t, "mem"); st.PollFound != 0 {
		t.Fatalf("poll_found %d for a row whose wake-up came %v after the poll's claim", st.PollFound, lateWakeup/4)
	}
	plane.mu.Lock()
	plane.wakeAfterClaim = 0
	plane.mu.Unlock()
	plane.push(id, memoryClaim("lost", "memory_write", `{"path":"workspace/m.md","content":"m"}`))
	plane.await(t, 10*time.Second, "the second poll's claim", func() bool { return len(plane.commits) == 2 })
	awaitPollFound(t, th, 1)
}

// TestEndedFeedIsReopened: a feed that ends is reopened at once and followed by an inbox read,
// so a row parked without a wake-up is claimed long before the poll.
func TestEndedFeedIsReopened(t *testing.T) {
	t.Parallel()
	th, plane, id := memoryHost(t, slowPoll())
	plane.mu.Lock()
	plane.deaf = true
	plane.mu.Unlock()
	plane.push(id, memoryClaim("parked", "memory_write", `{"path":"workspace/p.md","content":"p"}`))
	time.Sleep(50 * time.Millisecond)
	if len(plane.commitsFor("parked")) != 0 {
		t.Fatal("a row without a wake-up was claimed before the feed ended")
	}
	plane.endFeeds(id)
	plane.await(t, 10*time.Second, "the parked row's claim after the reopen", func() bool { return len(plane.commits) == 1 })
	plane.mu.Lock()
	subs, open := plane.subscribes, len(plane.feedsLocked(id))
	plane.mu.Unlock()
	if subs != 2 || open != 1 {
		t.Fatalf("%d subscriptions, %d open, want 2 and 1", subs, open)
	}
	if !strings.Contains(th.logs.String(), "work feed ended; reopened it and reading the inbox") {
		t.Fatalf("no log line for the reopen:\n%s", th.logs.String())
	}
	plane.mu.Lock()
	plane.deaf = false
	plane.mu.Unlock()
	plane.push(id, memoryClaim("next", "memory_read", `{"path":"workspace/p.md"}`))
	plane.await(t, 10*time.Second, "a claim on the reopened feed", func() bool { return len(plane.commits) == 2 })
}

// TestLostCancellationsRecheckClaims: when the feed reports cancellations lost, the host
// re-reads every claim in flight and cancels the calls whose rows are no longer held, and only
// those.
func TestLostCancellationsRecheckClaims(t *testing.T) {
	t.Parallel()
	plane := newPlane()
	e := scenarioEntry(t, "slow", plugin.KindToolProvider, "slow")
	th := startHostWith(t, plane, slowPoll(), e)
	st := th.waitState(t, "slow", StateReady, 10*time.Second)
	id := th.executor(t, "slow")
	setBlock(t, e, true)
	plane.push(id, toolClaim("gone", "slow_pure", `{}`, &announce.EffectPure))
	plane.push(id, toolClaim("kept", "slow_pure", `{}`, &announce.EffectPure))
	plane.await(t, 10*time.Second, "both calls in flight", func() bool { return th.sups["slow"].inflightCount() == 2 })
	waitStarted(t, e, *st.PID, 10*time.Second)
	plane.cancelLost(id, "run-1", "gone")
	plane.await(t, 10*time.Second, "the cancelled call to end", func() bool { return th.sups["slow"].inflightCount() == 1 })
	plane.mu.Lock()
	reads := plane.claimActive
	plane.mu.Unlock()
	if reads != 2 {
		t.Fatalf("%d claim reads, want one per call in flight", reads)
	}
	setBlock(t, e, false)
	plane.await(t, 10*time.Second, "the kept call's commit", func() bool { return len(plane.commits) == 1 })
	if len(plane.commitsFor("kept")) != 1 || len(plane.commitsFor("gone")) != 0 {
		t.Fatalf("commits %+v", plane.commits)
	}
}

// TestFillReadsFromTheHead: an inbox read pages past the rows before it only when it claimed
// none of them; after a page it claimed, the slots those calls free read from the head again, so
// the oldest rows go first and a backlog deeper than the slots drains with no poll.
func TestFillReadsFromTheHead(t *testing.T) {
	t.Parallel()
	_, plane, id := memoryHost(t, slowPoll())
	const rows = 3 * DefaultMaxConcurrency
	plane.mu.Lock()
	plane.deaf, plane.paging = true, true
	plane.mu.Unlock()
	for i := range rows {
		plane.push(id, memoryClaim(fmt.Sprintf("t%d", i), "memory_read", `{"path":"workspace/a.md"}`))
	}
	// One wake-up that names no row: the backlog is the inbox's to list.
	plane.mu.Lock()
	for _, f := range plane.feedsLocked(id) {
		f.post(func(n *WorkNews) { n.Available = true })
	}
	plane.mu.Unlock()
	plane.await(t, 20*time.Second, "the backlog's commits", func() bool { return len(plane.commits) == rows })
	plane.mu.Lock()
	defer plane.mu.Unlock()
	for i, r := range plane.reads {
		if r.after != "" && i > 0 && plane.reads[i-1].claims != r.claims {
			t.Errorf("read %d paged past rows after %s, though the page before it claimed %d", i, r.after, r.claims-plane.reads[i-1].claims)
		}
	}
}
