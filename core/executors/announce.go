package executors

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/nexuskernel/nexus/core/identity"
	"github.com/nexuskernel/nexus/core/profiles"
	"github.com/nexuskernel/nexus/core/runs"
	"github.com/nexuskernel/nexus/core/store"
	"github.com/nexuskernel/nexus/sdk/announce"
)

// Announcement is an executor's announcement as the executor plane and member discovery serve it
// (docs/api.md#executors, docs/api.md#the-executor-plane): the stored tool entries, the
// environment, the documents and when it was made. An executor that never announced serves no
// tools, {} and no documents, with AnnouncedAt nil.
type Announcement struct {
	Tools       []announce.Tool     `json:"tools"`
	Environment json.RawMessage     `json:"environment"`
	Documents   []announce.Document `json:"documents"`
	// AnnouncedAt is Unix ms of the replacement; nil before the first.
	AnnouncedAt *int64 `json:"-"`
}

func emptyAnnouncement() *Announcement {
	return &Announcement{Tools: []announce.Tool{}, Environment: json.RawMessage(`{}`), Documents: []announce.Document{}}
}

func announcementOf(a *profiles.Announced) *Announcement {
	out := &Announcement{Tools: a.Announcement.Tools, Environment: a.Announcement.Environment, Documents: a.Announcement.Documents}
	if out.Tools == nil {
		out.Tools = []announce.Tool{}
	}
	if out.Documents == nil {
		out.Documents = []announce.Document{}
	}
	if len(out.Environment) == 0 {
		out.Environment = json.RawMessage(`{}`)
	}
	at := a.AnnouncedAt
	out.AnnouncedAt = &at
	return out
}

// AnnounceRequest is the announcement door's request: the executor, and the announcement its body
// parses to by sdk/announce (ParseAnnouncement, the one parser, whose refusal, already in the door's
// shape, the door answers as it is).
type AnnounceRequest struct {
	Executor     *identity.Executor
	Announcement announce.Announcement
}

// Announce replaces the executor's whole announcement (docs/api.md#the-executor-plane). It is
// validated whole by sdk/announce, the one validator the plugin host also runs, before anything is
// stored: a refusal names the first failure and lists every one, and the previous announcement
// stays exactly as it was. The served-names table that addressing reads is replaced in the same
// transaction.
func (s *Service) Announce(ctx context.Context, req *AnnounceRequest) (*Announcement, error) {
	ex := req.Executor
	if err := s.PutAnnouncement(ctx, ex.ID, ex.WorkspaceID, req.Announcement, s.now()); err != nil {
		return nil, err
	}
	return s.AnnouncementOf(ctx, ex.ID)
}

// PutAnnouncement replaces an executor's announcement with a checked one (announce.Validate runs
// again before anything is written), with its served names, in one transaction: the door's path,
// and the one a plugin host's executor plane takes after announce.ValidatePlugin.
func (s *Service) PutAnnouncement(ctx context.Context, executorID, workspaceID int64, a announce.Announcement, at time.Time) error {
	if r := announce.Validate(a); r != nil {
		return r
	}
	return s.store.Write(ctx, func(tx *store.Tx) error {
		// Two announcements of one executor replace its rows one after the other.
		if err := store.LockExecutor(ctx, tx, executorID); err != nil {
			return err
		}
		ex, err := store.ExecutorByID(ctx, tx, executorID)
		if err != nil {
			return err
		}
		served, err := servedTools(workspaceID, ex, a)
		if err != nil {
			return err
		}
		if err := profiles.PutAnnouncement(ctx, tx, executorID, a, at); err != nil {
			return err
		}
		return store.ReplaceServedTools(ctx, tx, executorID, served)
	})
}

// servedTools derives the served-names rows of executor ex's validated announcement, each with
// the address a row addressed to it freezes (runs.FrozenAddress).
func servedTools(workspaceID int64, ex *store.Executor, a announce.Announcement) ([]store.ServedTool, error) {
	out := make([]store.ServedTool, 0, len(a.Tools))
	for _, t := range a.Tools {
		p, err := t.EffectProfile.Profile()
		if err != nil {
			return nil, fmt.Errorf("executors: a validated profile of %s: %w", t.Name, err)
		}
		raw, err := json.Marshal(p)
		if err != nil {
			return nil, err
		}
		sv := runs.Served{ExecutorPublicID: ex.PublicID, DisplayName: ex.DisplayName, Profile: p}
		if t.TimeoutMS != nil {
			sv.TimeoutMS = *t.TimeoutMS
		}
		target, frozen := runs.FrozenAddress(sv)
		out = append(out, store.ServedTool{WorkspaceID: workspaceID, Name: t.Name, Profile: string(raw), TimeoutMS: t.TimeoutMS,
			FrozenTarget: target, FrozenProfile: frozen, DefinitionDigest: announce.DefinitionDigest(t)})
	}
	return out, nil
}

// AnnouncementOf reads an executor's current announcement.
func (s *Service) AnnouncementOf(ctx context.Context, executorID int64) (*Announcement, error) {
	a, err := profiles.AnnouncementOf(ctx, s.store.Reader(), executorID)
	if errors.Is(err, store.ErrNotFound) {
		return emptyAnnouncement(), nil
	}
	if err != nil {
		return nil, err
	}
	return announcementOf(a), nil
}

// Announcements reads the current announcements of several executors for member discovery;
// an executor that never announced maps to the empty announcement.
func (s *Service) Announcements(ctx context.Context, executorIDs []int64) (map[int64]*Announcement, error) {
	out := make(map[int64]*Announcement, len(executorIDs))
	for _, id := range executorIDs {
		a, err := s.AnnouncementOf(ctx, id)
		if err != nil {
			return nil, err
		}
		out[id] = a
	}
	return out, nil
}
