package toolprovider

import (
	"context"
	"sync"
)

// Revisions is a ready-made half of a Reannouncer: an announcement revision that starts at 1
// and every watcher of which hears each change, a slow watcher at least the latest one. A
// provider embeds it (or delegates to it) and calls Advance after its announcement changed.
type Revisions struct {
	mu       sync.Mutex
	rev      uint64
	watchers map[chan uint64]struct{}
}

// NewRevisions returns revisions at revision 1.
func NewRevisions() *Revisions {
	return &Revisions{rev: 1, watchers: map[chan uint64]struct{}{}}
}

// AnnouncementRevision implements Reannouncer: the current revision.
func (r *Revisions) AnnouncementRevision() uint64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.rev
}

// Advance increases the revision, tells every watcher, and answers the new revision. Call it
// once what Announce returns has changed, never before: the host reads Announce when it hears.
func (r *Revisions) Advance() uint64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.rev++
	for ch := range r.watchers {
		// Each channel holds one value: a stale one gives way to the latest, and the send never
		// waits, since only this lock's holder sends.
		select {
		case <-ch:
		default:
		}
		ch <- r.rev
	}
	return r.rev
}

// AnnouncementChanges implements Reannouncer: the revision after each Advance until ctx ends,
// when the channel is closed.
func (r *Revisions) AnnouncementChanges(ctx context.Context) <-chan uint64 {
	ch := make(chan uint64, 1)
	r.mu.Lock()
	r.watchers[ch] = struct{}{}
	r.mu.Unlock()
	context.AfterFunc(ctx, func() {
		r.mu.Lock()
		defer r.mu.Unlock()
		delete(r.watchers, ch)
		close(ch)
	})
	return ch
}
