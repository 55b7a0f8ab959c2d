package plugins

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/nexuskernel/nexus/sdk/announce"
	"github.com/nexuskernel/nexus/sdk/refusal"
)

// recordingPlane stands in for the executor plane, which the server implements later over the
// kernel's executor service: it keeps each executor's rows, claims, commits and expirations in
// memory and records every call, so the host is tested on its own. Its commit checks only the
// parts of the envelope grammar the host's mapping can get wrong (a resource_link must name an
// upload this executor staged; a claim commits once).
type recordingPlane struct {
	mu            sync.Mutex
	ids           map[string]string // registration key → executor id
	managed       map[string]ManagedExecutor
	announcements map[string][]announce.Announcement
	presence      map[string][]bool
	revoked       map[string]bool
	rows          map[string][]*planeRow
	subs          map[string][]*testFeed
	// deaf drops the wake-ups of pushed rows, as a broken wake-up path would; age is added to
	// every row's Waited.
	deaf bool
	// naming has a pushed row's wake-up name the row, as the server's feed does.
	naming bool
	age    time.Duration
	// wakeOnClaim posts a wake-up to the executor's feeds during each claim, as a commit that
	// ended while the claim loop read its inbox is followed by its wake-up.
	wakeOnClaim bool
	// wakeAfterClaim posts a wake-up to the executor's feeds this long after each claim, as a
	// wake-up the poll beat by that much.
	wakeAfterClaim time.Duration
	// failClaims fails the next claims of a task key with a transient error, so many times.
	failClaims map[string]int
	// subscribes counts Subscribe calls; claimActive counts ClaimActive calls.
	subscribes, claimActive int
	// inboxReads counts Inbox calls.
	inboxReads int
	// paging pages the inbox: a page of limit rows answers a cursor to the rows after it.
	paging bool
	// claims counts the claims granted.
	claims int
	// reads records each inbox read's cursor and the claims made before it.
	reads         []inboxRead
	staged        map[string]stagedCapture
	commits       []commitRecord
	refusedBodies []CommitBody
	expired       []Claim
	// causes are the causes ExpireNow was given, by task key.
	causes   map[string]string
	changed  chan struct{}
	deadline time.Duration
	nextID   int
}

// inboxRead is one inbox read: its cursor, and how many claims had been made before it.
type inboxRead struct {
	after  string
	claims int
}

type planeRow struct {
	claim    Claim
	claimed  bool
	settled  bool
	pushedAt time.Time
}

type stagedCapture struct {
	executor, filename string
	data               []byte
}

type commitRecord struct {
	executor string
	claim    Claim
	body     CommitBody
}

func newPlane() *recordingPlane {
	return &recordingPlane{
		ids: map[string]string{}, managed: map[string]ManagedExecutor{}, announcements: map[string][]announce.Announcement{},
		presence: map[string][]bool{}, revoked: map[string]bool{}, rows: map[string][]*planeRow{},
		subs: map[string][]*testFeed{}, staged: map[string]stagedCapture{}, changed: make(chan struct{}),
		deadline: 30 * time.Second,
	}
}

func (p *recordingPlane) notifyLocked() {
	close(p.changed)
	p.changed = make(chan struct{})
}

// await waits until cond holds (checked under the lock) or fails t after timeout.
func (p *recordingPlane) await(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	end := time.After(timeout)
	for {
		p.mu.Lock()
		ok := cond()
		ch := p.changed
		p.mu.Unlock()
		if ok {
			return
		}
		select {
		case <-ch:
		case <-time.After(20 * time.Millisecond):
		case <-end:
			t.Fatalf("timed out after %v waiting for %s", timeout, what)
		}
	}
}

func (p *recordingPlane) EnsureManaged(_ context.Context, m ManagedExecutor) (string, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	id, ok := p.ids[m.RegistrationKey]
	if !ok {
		p.nextID++
		id = fmt.Sprintf("0193c2d4-5e6f-7a8b-9c0d-%012d", p.nextID)
		p.ids[m.RegistrationKey] = id
	}
	p.managed[id] = m
	delete(p.revoked, id) // a revoked managed executor whose plugin is back is reactivated
	p.notifyLocked()
	return id, nil
}

func (p *recordingPlane) Announce(_ context.Context, id string, a announce.Announcement) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.announcements[id] = append(p.announcements[id], a)
	p.notifyLocked()
	return nil
}

func (p *recordingPlane) SetPresence(_ context.Context, id string, online bool) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.presence[id] = append(p.presence[id], online)
	p.notifyLocked()
	return nil
}

func (p *recordingPlane) Revoke(_ context.Context, id string) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.revoked[id] = true
	p.notifyLocked()
	return nil
}

// testFeed is the recording plane's WorkFeed: the hub's folding, without the hub.
type testFeed struct {
	mu   sync.Mutex
	news WorkNews
	wake chan struct{}
	done chan struct{}
	once sync.Once
}

func newTestFeed() *testFeed {
	return &testFeed{wake: make(chan struct{}, 1), done: make(chan struct{})}
}

func (f *testFeed) Wake() <-chan struct{} { return f.wake }
func (f *testFeed) Done() <-chan struct{} { return f.done }
func (f *testFeed) Close()                { f.once.Do(func() { close(f.done) }) }

func (f *testFeed) Take() WorkNews {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := f.news
	f.news = WorkNews{}
	return n
}

func (f *testFeed) post(edit func(n *WorkNews)) {
	f.mu.Lock()
	edit(&f.news)
	f.mu.Unlock()
	select {
	case f.wake <- struct{}{}:
	default:
	}
}

func (p *recordingPlane) Subscribe(_ context.Context, id string) (WorkFeed, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.subscribes++
	f := newTestFeed()
	p.subs[id] = append(p.subs[id], f)
	p.notifyLocked()
	return f, nil
}

// feedsLocked answers the executor's feeds that are still open.
func (p *recordingPlane) feedsLocked(id string) []*testFeed {
	var open []*testFeed
	for _, f := range p.subs[id] {
		select {
		case <-f.done:
		default:
			open = append(open, f)
		}
	}
	p.subs[id] = open
	return open
}

// push adds a row addressed to the executor and sends work_available.
func (p *recordingPlane) push(id string, c Claim) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if c.DeadlineAt.IsZero() {
		c.DeadlineAt = time.Now().Add(p.deadline)
	}
	p.rows[id] = append(p.rows[id], &planeRow{claim: c, pushedAt: time.Now()})
	if !p.deaf {
		ref := WorkRef{RunID: c.RunID, TaskKey: c.TaskKey}
		for _, f := range p.feedsLocked(id) {
			f.post(func(n *WorkNews) {
				n.Available = true
				if p.naming {
					n.Rows = append(n.Rows, ref)
				}
			})
		}
	}
	p.notifyLocked()
}

// cancelRow settles a row and sends work_canceled for it.
func (p *recordingPlane) cancelRow(id, runID, taskKey string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.settleLocked(id, runID, taskKey)
	for _, f := range p.feedsLocked(id) {
		f.post(func(n *WorkNews) { n.Canceled = append(n.Canceled, WorkRef{RunID: runID, TaskKey: taskKey}) })
	}
}

// cancelLost settles a row and tells the feeds only that cancellations were lost.
func (p *recordingPlane) cancelLost(id, runID, taskKey string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.settleLocked(id, runID, taskKey)
	for _, f := range p.feedsLocked(id) {
		f.post(func(n *WorkNews) { n.CancelsLost = true })
	}
}

func (p *recordingPlane) settleLocked(id, runID, taskKey string) {
	for _, r := range p.rows[id] {
		if r.claim.RunID == runID && r.claim.TaskKey == taskKey {
			r.settled = true
		}
	}
}

// endFeeds ends the executor's open feeds, as a revocation does.
func (p *recordingPlane) endFeeds(id string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, f := range p.feedsLocked(id) {
		f.Close()
	}
}

func (p *recordingPlane) ClaimActive(_ context.Context, id string, c Claim) (bool, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.claimActive++
	r := p.rowLocked(id, c)
	return r != nil && !r.settled, nil
}

func (p *recordingPlane) Inbox(_ context.Context, id, after string, limit int) ([]InboxRow, string, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.inboxReads++
	p.reads = append(p.reads, inboxRead{after: after, claims: p.claims})
	p.notifyLocked()
	from := 0
	if p.paging && after != "" {
		n, err := strconv.Atoi(after)
		if err != nil {
			return nil, "", err
		}
		from = n + 1
	}
	var out []InboxRow
	next, last := "", -1
	for i := from; i < len(p.rows[id]); i++ {
		r := p.rows[id][i]
		if r.claimed || r.settled {
			continue
		}
		if len(out) == limit {
			if p.paging {
				next = strconv.Itoa(last)
			}
			break
		}
		out = append(out, InboxRow{RunID: r.claim.RunID, TaskKey: r.claim.TaskKey, ToolName: r.claim.ToolName, Waited: time.Since(r.pushedAt) + p.age})
		last = i
	}
	return out, next, nil
}

func (p *recordingPlane) Claim(_ context.Context, id, runID, taskKey string) (Claim, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.wakeOnClaim {
		for _, f := range p.feedsLocked(id) {
			f.post(func(n *WorkNews) { n.Available = true })
		}
	}
	if d := p.wakeAfterClaim; d > 0 {
		time.AfterFunc(d, func() {
			p.mu.Lock()
			defer p.mu.Unlock()
			for _, f := range p.feedsLocked(id) {
				f.post(func(n *WorkNews) { n.Available = true })
			}
		})
	}
	if p.failClaims[taskKey] > 0 {
		p.failClaims[taskKey]--
		return Claim{}, errors.New("the store is briefly unavailable")
	}
	for _, r := range p.rows[id] {
		if r.claim.RunID == runID && r.claim.TaskKey == taskKey {
			if r.claimed || r.settled {
				return Claim{}, ErrAlreadyClaimed
			}
			r.claimed = true
			p.claims++
			c := r.claim
			c.Token = "token-" + taskKey
			c.ClaimedAt = time.Now()
			p.notifyLocked()
			return c, nil
		}
	}
	return Claim{}, ErrNotEligible
}

func (p *recordingPlane) StageCapture(_ context.Context, id, filename string, data []byte) (string, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.nextID++
	upload := fmt.Sprintf("0193c2d4-0000-7000-8000-%012d", p.nextID)
	p.staged[upload] = stagedCapture{executor: id, filename: filename, data: bytes.Clone(data)}
	return upload, nil
}

func (p *recordingPlane) Commit(_ context.Context, id string, c Claim, body CommitBody) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	row := p.rowLocked(id, c)
	if row == nil || row.settled {
		return ErrClaimLost
	}
	if refusal := p.checkLocked(id, body); refusal != nil {
		p.refusedBodies = append(p.refusedBodies, body)
		p.notifyLocked()
		return refusal
	}
	row.settled = true
	p.commits = append(p.commits, commitRecord{executor: id, claim: c, body: body})
	p.notifyLocked()
	return nil
}

func (p *recordingPlane) rowLocked(id string, c Claim) *planeRow {
	for _, r := range p.rows[id] {
		if r.claim.RunID == c.RunID && r.claim.TaskKey == c.TaskKey && r.claimed {
			return r
		}
	}
	return nil
}

// checkLocked refuses a resource_link that names no upload this executor staged.
func (p *recordingPlane) checkLocked(id string, body CommitBody) *refusal.Refusal {
	for i, b := range body.Blocks {
		switch {
		case b.Text != nil:
		case b.Link != nil:
			upload, ok := strings.CutPrefix(b.Link.URI, "nexus://uploads/")
			if !ok {
				return refusal.New(refusal.Unprocessable, "invalid_content", fmt.Sprintf("content[%d].uri is not a nexus upload", i))
			}
			if s, staged := p.staged[upload]; !staged || s.executor != id {
				return refusal.New(refusal.Unprocessable, "unknown_result_upload", upload)
			}
		default:
			return refusal.New(refusal.Unprocessable, "invalid_content", fmt.Sprintf("content[%d] has no known type", i))
		}
	}
	return nil
}

func (p *recordingPlane) ExpireNow(_ context.Context, id string, c Claim, cause string) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	row := p.rowLocked(id, c)
	if row == nil || row.settled {
		return ErrClaimLost
	}
	row.settled = true
	p.expired = append(p.expired, c)
	if p.causes == nil {
		p.causes = map[string]string{}
	}
	p.causes[c.TaskKey] = cause
	p.notifyLocked()
	return nil
}

// commitsFor answers the commits of one task key.
func (p *recordingPlane) commitsFor(taskKey string) []CommitBody {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []CommitBody
	for _, c := range p.commits {
		if c.claim.TaskKey == taskKey {
			out = append(out, c.body)
		}
	}
	return out
}

func (p *recordingPlane) lastAnnouncement(id string) (announce.Announcement, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	as := p.announcements[id]
	if len(as) == 0 {
		return announce.Announcement{}, false
	}
	return as[len(as)-1], true
}

// logSink collects the host's log lines for assertions.
type logSink struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *logSink) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *logSink) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

func (l *logSink) logger() hclog.Logger {
	return hclog.New(&hclog.LoggerOptions{Name: "nexus", Level: hclog.Debug, Output: l})
}
