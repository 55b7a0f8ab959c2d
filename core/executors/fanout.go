package executors

import (
	"context"
	"encoding/json"

	"github.com/nexuskernel/nexus/core/store"
)

// notifyBatch bounds the executors one notification names: 100 public ids take about 4 KB of
// JSON, well inside PostgreSQL's 8,000-byte payload limit with the event's other fields.
const notifyBatch = 100

// Notification kinds and events on the wake-up channel.
// docs/development.md#how-the-kernel-runs-work fixes kind and the ids; the event and its fields
// ride along so that a receiving instance writes the frame without reading the row. "revoked"
// closes an executor's streams on every instance.
const (
	notifyKindExecutor = "executor"
	notifyRevoked      = "revoked"
)

// notification is the JSON payload of an executor wake-up.
type notification struct {
	Kind        string   `json:"kind"`
	RunPublicID string   `json:"run_public_id,omitempty"`
	TaskKey     string   `json:"task_key,omitempty"`
	Executors   []string `json:"executor_public_ids"`
	Event       string   `json:"event"`
	ToolName    string   `json:"tool_name,omitempty"`
	Reason      string   `json:"reason,omitempty"`
	// ExecutorIDs names revoked executors by internal id (the revocation hook's form).
	ExecutorIDs []int64 `json:"executor_ids,omitempty"`
	Origin      string  `json:"origin"`
}

// payloads encodes ev for ids in notifications of at most notifyBatch executors.
func (h *Hub) payloads(ids []string, ev Event) []string {
	var out []string
	for len(ids) > 0 {
		n := min(len(ids), notifyBatch)
		b, _ := json.Marshal(notification{
			Kind: notifyKindExecutor, RunPublicID: ev.RunPublicID, TaskKey: ev.TaskKey, Executors: ids[:n],
			Event: ev.Type, ToolName: ev.ToolName, Reason: ev.Reason, Origin: h.origin,
		})
		out = append(out, string(b))
		ids = ids[n:]
	}
	return out
}

// notifyRevokedIn tells every instance, when tx commits, to close the executor's streams.
func (h *Hub) notifyRevokedIn(ctx context.Context, tx *store.Tx, executorID int64) error {
	b, _ := json.Marshal(notification{Kind: notifyKindExecutor, Executors: []string{}, Event: notifyRevoked,
		ExecutorIDs: []int64{executorID}, Origin: h.origin})
	return store.Notify(ctx, tx, h.channel, string(b))
}

// subscription feeds the wake-up channel into the hub.
type subscription struct{ h *Hub }

// Notified delivers another instance's executor events to the streams held here. Kernel
// wake-ups and this instance's own notifications (already delivered) are ignored, and so is
// everything while no stream is held here: there is nobody to deliver to or to close.
func (s subscription) Notified(payload string) {
	s.h.mu.Lock()
	none := len(s.h.streams) == 0
	s.h.mu.Unlock()
	if none {
		return
	}
	var n notification
	if err := json.Unmarshal([]byte(payload), &n); err != nil || n.Kind != notifyKindExecutor || n.Origin == s.h.origin {
		return
	}
	switch n.Event {
	case notifyRevoked:
		for _, id := range n.ExecutorIDs {
			s.h.CloseExecutor(id)
		}
	case EventWorkAvailable, EventWorkCanceled:
		s.h.deliver(n.Executors, Event{Type: n.Event, Kind: kindOf(n.Event), RunPublicID: n.RunPublicID, TaskKey: n.TaskKey, ToolName: n.ToolName, Reason: n.Reason})
	}
}

func kindOf(event string) string {
	if event == EventWorkAvailable {
		return KindToolCall
	}
	return ""
}

// Lost: events published elsewhere may be missed from now on. Every stream is closed, so that
// its executor reconnects and reads its inbox (docs/api.md#the-executor-plane), which is how a lost hint
// costs latency and never work. A feed stays open and is told that it may have missed both
// kinds of event: its reader reads the inbox and re-reads the claims it holds.
func (s subscription) Lost() {
	s.h.mu.Lock()
	s.h.lost = true
	all, feeds := s.h.allLocked(), s.h.feedsLocked()
	s.h.mu.Unlock()
	for _, st := range all {
		st.Close()
	}
	for _, f := range feeds {
		f.missed()
	}
}

// Live: listening (again). After a loss, the streams opened meanwhile may have missed events
// too, so they are closed as well, and every feed is told again: what was published between
// the loss and now was missed.
func (s subscription) Live() {
	s.h.mu.Lock()
	wasLost := s.h.lost
	s.h.lost = false
	var all []*Stream
	var feeds []*Feed
	if wasLost {
		all, feeds = s.h.allLocked(), s.h.feedsLocked()
	}
	s.h.mu.Unlock()
	for _, st := range all {
		st.Close()
	}
	for _, f := range feeds {
		f.missed()
	}
}
