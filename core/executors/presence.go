package executors

import (
	"context"
	"time"

	"github.com/nexuskernel/nexus/core/identity"
	"github.com/nexuskernel/nexus/core/store"
)

// Presence of executors with open streams (docs/api.md#executors): an executor reads online while
// an event stream is open, and connected_at is the opening of its current stream. Both are stored
// on the executor's row so that every instance's discovery read sees streams held anywhere: opening
// a stream records connected_at and last_seen_at; while streams stay open the hub keeps
// last_seen_at inside the online window; closing this instance's last one clears connected_at
// unless a later opening (here or elsewhere) replaced it. Presence is display only: a failed write
// is logged, never a reason to refuse a stream.

// presenceRefresh is how often the hub records that executors with open streams are still
// there: the interval at which identity writes last_seen_at at most, well inside the 30-second
// online window.
const presenceRefresh = identity.PresenceWriteInterval

// presenceWriteTimeout bounds one presence write: a one-row update that takes longer means the
// store is in trouble, and presence, display only, must not hold a stream's goroutine for it.
const presenceWriteTimeout = 5 * time.Second

func (h *Hub) connected(ctx context.Context, e *executorStreams, at int64) {
	h.presenceMu.Lock()
	defer h.presenceMu.Unlock()
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), presenceWriteTimeout)
	defer cancel()
	err := h.store.Write(ctx, func(tx *store.Tx) error { return store.MarkExecutorConnected(ctx, tx, e.id, at) })
	if err != nil {
		h.log.Warn("recording an event stream's presence failed", "executor", e.publicID, "error", err)
		return
	}
	h.mu.Lock()
	e.connectedAt = at
	h.mu.Unlock()
}

// disconnected runs after e's last stream here closed. It clears connected_at unless a stream
// of the executor opened here meanwhile (that opening's write follows under presenceMu).
func (h *Hub) disconnected(e *executorStreams) {
	h.presenceMu.Lock()
	defer h.presenceMu.Unlock()
	h.mu.Lock()
	reopened := h.streams[e.id] != nil
	at := e.connectedAt
	h.mu.Unlock()
	if reopened || at == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), presenceWriteTimeout)
	defer cancel()
	if err := h.store.Write(ctx, func(tx *store.Tx) error { return store.ClearExecutorConnected(ctx, tx, e.id, at) }); err != nil {
		h.log.Warn("clearing an event stream's presence failed", "executor", e.publicID, "error", err)
	}
}

// refreshPresence keeps last_seen_at of executors with open streams inside the online window.
func (h *Hub) refreshPresence() {
	defer h.wg.Done()
	t := time.NewTicker(presenceRefresh)
	defer t.Stop()
	for {
		select {
		case <-h.stop:
			return
		case <-t.C:
			h.touchOpen()
		}
	}
}

func (h *Hub) touchOpen() {
	h.mu.Lock()
	ids := make([]int64, 0, len(h.streams))
	for id := range h.streams {
		ids = append(ids, id)
	}
	h.mu.Unlock()
	if len(ids) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), presenceWriteTimeout)
	defer cancel()
	at := store.Millis(h.now())
	if err := h.store.Write(ctx, func(tx *store.Tx) error { return store.TouchExecutors(ctx, tx, ids, at) }); err != nil {
		h.log.Warn("refreshing event stream presence failed", "executors", len(ids), "error", err)
	}
}
