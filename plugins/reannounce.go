package plugins

import (
	"context"
	"errors"
	"time"

	"github.com/nexuskernel/nexus/sdk/announce"
	"github.com/nexuskernel/nexus/sdk/plugin"
)

// DefaultReannounceSpacing is the least time between two re-announcements of one plugin
// (docs/plugins.md#protocol-11): each is a whole replacement written to the store, so a plugin
// whose list churns costs one write a second, and changes arriving meanwhile coalesce.
const DefaultReannounceSpacing = time.Second

// watchRetry is how soon a watch stream that failed while its instance lives is opened again,
// and a re-announcement the executor plane could not write is tried again.
const watchRetry = time.Second

// AnnouncementStatus is the announcement part of a status: the revision the executor serves
// (0 when the plugin keeps none), when it was written, and the last re-announcement refused,
// which changed nothing.
type AnnouncementStatus struct {
	Revision    uint64         `json:"revision"`
	AnnouncedAt *time.Time     `json:"announced_at"`
	Refusal     *RefusalStatus `json:"refusal"`
}

// announced records what the executor now serves; the caller holds s.mu.
func (s *supervisor) announcedLocked(in *instance, a announce.Announcement, revision uint64, at time.Time) {
	in.announce, in.revision = a, revision
	s.annAt, s.annRefusal = at, nil
}

// watchAnnouncement follows a ready tool-provider instance's re-announcements until ctx ends
// (docs/plugins.md#protocol-11): a revision above the applied one is taken, at least the spacing
// after the last re-announcement, through Describe and the load's validation, and replaces the
// executor's announcement whole. A plugin at minor 0, or one whose announcement never changes,
// is not watched.
func (s *supervisor) watchAnnouncement(ctx context.Context, in *instance) {
	if in.tools == nil || in.info.ProtocolMinor < 1 {
		return
	}
	heard := make(chan uint64, 1) // the latest revision heard and not yet taken
	ended := make(chan error, 1)
	open := func() {
		go func() {
			ended <- in.tools.WatchAnnouncement(ctx, func(rev uint64) {
				select {
				case <-heard:
				default:
				}
				heard <- rev
			})
		}()
	}
	open()
	spacing := s.h.timings.ReannounceSpacing
	var last time.Time // the last re-announcement; the load's does not hold the first back
	var pending uint64 // a revision heard above the applied one, waiting for its turn
	var timer <-chan time.Time
	for {
		select {
		case <-ctx.Done():
			return
		case err := <-ended:
			if ctx.Err() != nil || errors.Is(err, errors.ErrUnsupported) || errors.Is(err, plugin.ErrPluginShutdown) {
				return // the instance's end is the supervisor's to handle
			}
			if err != nil {
				s.logger.Warn("announcement watch failed; reopening", "plugin", s.entry.Name, "error", err)
			}
			go func() {
				select {
				case <-ctx.Done():
				case <-time.After(watchRetry):
					open()
				}
			}()
			continue
		case rev := <-heard:
			s.mu.Lock()
			applied := in.revision
			s.mu.Unlock()
			if rev <= applied || rev <= pending {
				continue
			}
			pending = rev
		case <-timer:
			timer = nil
		}
		if pending == 0 || timer != nil {
			continue
		}
		if wait := spacing - time.Since(last); !last.IsZero() && wait > 0 {
			timer = time.After(wait)
			continue
		}
		last = time.Now()
		if !s.reannounce(ctx, in) {
			timer = time.After(watchRetry) // the plane failed: try the same change again
			continue
		}
		pending = 0
	}
}

// reannounce takes the plugin's current announcement and, when it passes the load's checks,
// replaces the executor's. A refusal changes nothing and is kept for the status; it answers
// false only when the executor plane could not be written, so the change is tried again.
func (s *supervisor) reannounce(ctx context.Context, in *instance) bool {
	_, a, rev, err := in.tools.DescribeRevision(ctx)
	if err != nil {
		if ctx.Err() == nil && !errors.Is(err, plugin.ErrPluginShutdown) {
			s.logger.Warn("re-announcement: describe failed", "plugin", s.entry.Name, "error", err)
			return false
		}
		return true
	}
	s.mu.Lock()
	serving := s.state == StateReady && s.inst == in
	id := s.executorID
	s.mu.Unlock()
	if !serving {
		return true // a draining or replaced instance's changes are not its executor's any more
	}
	if r := announce.ValidatePlugin(string(s.entry.Kind), a); r != nil {
		s.mu.Lock()
		s.annRefusal = r
		s.mu.Unlock()
		st := refusalStatus(r)
		s.logger.Warn("re-announcement refused; the previous announcement stays", "plugin", s.entry.Name,
			"revision", rev, "code", r.Code, "name", st.Name, "path", st.Path, "message", r.Message)
		return true
	}
	a = a.Normalize()
	if err := s.h.plane.Announce(ctx, id, a); err != nil {
		if ctx.Err() == nil {
			s.logger.Warn("re-announcement: the executor plane failed", "plugin", s.entry.Name, "revision", rev, "error", err)
		}
		return ctx.Err() != nil
	}
	s.mu.Lock()
	before := in.announce
	s.announcedLocked(in, a, rev, time.Now())
	s.mu.Unlock()
	added, removed := toolDiff(before, a)
	s.logger.Info("re-announced", "plugin", s.entry.Name, "executor", id, "revision", rev, "tools", len(a.Tools), "added", added, "removed", removed)
	return true
}

// toolDiff names the tools b announces that a did not, and those it dropped.
func toolDiff(a, b announce.Announcement) (added, removed []string) {
	had := map[string]bool{}
	for _, t := range a.Tools {
		had[t.Name] = true
	}
	has := map[string]bool{}
	for _, t := range b.Tools {
		has[t.Name] = true
		if !had[t.Name] {
			added = append(added, t.Name)
		}
	}
	for _, t := range a.Tools {
		if !has[t.Name] {
			removed = append(removed, t.Name)
		}
	}
	return added, removed
}
