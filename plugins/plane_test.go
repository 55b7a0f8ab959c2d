package plugins

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/nexuskernel/nexus/sdk/announce"
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
	subs          map[string][]chan WorkEvent
	staged        map[string]stagedCapture
	commits       []commitRecord
	refusedBodies []CommitBody
	expired       []Claim
	changed       chan struct{}
	deadline      time.Duration
	nextID        int
}

type planeRow struct {
	claim   Claim
	claimed bool
	settled bool
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
		subs: map[string][]chan WorkEvent{}, staged: map[string]stagedCapture{}, changed: make(chan struct{}),
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

func (p *recordingPlane) Subscribe(id string) (<-chan WorkEvent, func()) {
	p.mu.Lock()
	defer p.mu.Unlock()
	ch := make(chan WorkEvent, 64)
	p.subs[id] = append(p.subs[id], ch)
	return ch, func() {
		p.mu.Lock()
		defer p.mu.Unlock()
		for i, c := range p.subs[id] {
			if c == ch {
				p.subs[id] = append(p.subs[id][:i], p.subs[id][i+1:]...)
				break
			}
		}
	}
}

// push adds a row addressed to the executor and sends work_available.
func (p *recordingPlane) push(id string, c Claim) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if c.DeadlineAt.IsZero() {
		c.DeadlineAt = time.Now().Add(p.deadline)
	}
	p.rows[id] = append(p.rows[id], &planeRow{claim: c})
	for _, ch := range p.subs[id] {
		select {
		case ch <- WorkEvent{Kind: EventWorkAvailable, RunID: c.RunID, TaskKey: c.TaskKey}:
		default:
		}
	}
	p.notifyLocked()
}

// cancelRow sends work_canceled for a row.
func (p *recordingPlane) cancelRow(id, runID, taskKey string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, r := range p.rows[id] {
		if r.claim.RunID == runID && r.claim.TaskKey == taskKey {
			r.settled = true
		}
	}
	for _, ch := range p.subs[id] {
		ch <- WorkEvent{Kind: EventWorkCanceled, RunID: runID, TaskKey: taskKey}
	}
}

func (p *recordingPlane) Inbox(_ context.Context, id, after string, limit int) ([]InboxRow, string, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []InboxRow
	for _, r := range p.rows[id] {
		if r.claimed || r.settled {
			continue
		}
		out = append(out, InboxRow{RunID: r.claim.RunID, TaskKey: r.claim.TaskKey, ToolName: r.claim.ToolName})
		if len(out) == limit {
			break
		}
	}
	return out, "", nil
}

func (p *recordingPlane) Claim(_ context.Context, id, runID, taskKey string) (Claim, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, r := range p.rows[id] {
		if r.claim.RunID == runID && r.claim.TaskKey == taskKey {
			if r.claimed || r.settled {
				return Claim{}, ErrAlreadyClaimed
			}
			r.claimed = true
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
func (p *recordingPlane) checkLocked(id string, body CommitBody) *CommitRefusal {
	if len(body.Content) == 0 || body.Content[0] != '[' {
		return nil
	}
	var blocks []map[string]any
	if err := json.Unmarshal(body.Content, &blocks); err != nil {
		return &CommitRefusal{Code: "invalid_content", Message: err.Error()}
	}
	for i, b := range blocks {
		switch b["type"] {
		case "text":
		case "resource_link":
			uri, _ := b["uri"].(string)
			upload, ok := strings.CutPrefix(uri, "nexus://uploads/")
			if !ok {
				return &CommitRefusal{Code: "invalid_content", Message: fmt.Sprintf("content[%d].uri is not a nexus upload", i)}
			}
			if s, staged := p.staged[upload]; !staged || s.executor != id {
				return &CommitRefusal{Code: "unknown_result_upload", Message: upload}
			}
		default:
			return &CommitRefusal{Code: "invalid_content", Message: fmt.Sprintf("content[%d] has no known type", i)}
		}
	}
	return nil
}

func (p *recordingPlane) ExpireNow(_ context.Context, id string, c Claim) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	row := p.rowLocked(id, c)
	if row == nil || row.settled {
		return ErrClaimLost
	}
	row.settled = true
	p.expired = append(p.expired, c)
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
