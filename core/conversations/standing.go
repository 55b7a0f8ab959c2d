package conversations

import (
	"context"
	"errors"

	"github.com/nexuskernel/nexus/core/refusal"
	"github.com/nexuskernel/nexus/core/runs"
	"github.com/nexuskernel/nexus/core/store"
)

var errNotAuthorized = refusal.New(refusal.Forbidden, refusal.CodeNotAuthorized, "Write standing on this run is required.")

// writeStanding checks the write standing on a run (docs/api.md#conventions): a workspace owner;
// the run's creator; for a conversation-hosted run the conversation's creator and its answering
// agent; the steward user of any agent among them.
func writeStanding(ctx context.Context, q store.Querier, a *runs.Actor, run *store.Run) error {
	if a.Role == store.RoleOwner {
		return nil
	}
	members := []runs.Member{{Kind: run.CreatedByKind, PublicID: run.CreatedByPublicID}}
	if run.AnsweringAgentPublicID != nil && run.ConversationID != nil {
		members = append(members, runs.Member{Kind: "agent", PublicID: *run.AnsweringAgentPublicID})
	}
	if run.ConversationID != nil {
		if c, err := store.ConversationCreator(ctx, q, *run.ConversationID); err == nil {
			members = append(members, c)
		}
	}
	for _, m := range members {
		if m.Kind == a.Kind && m.PublicID == a.PublicID {
			return nil
		}
	}
	if a.Kind == "user" {
		for _, m := range members {
			if m.Kind != "agent" {
				continue
			}
			steward, err := store.AgentStewardPublicID(ctx, q, m.PublicID)
			if err == nil && steward == a.PublicID {
				return nil
			}
		}
	}
	return errNotAuthorized
}

// loadRun finds a run of the actor's workspace; a malformed or unknown id is not_found.
func loadRun(ctx context.Context, q store.Querier, a *runs.Actor, publicID string) (*store.Run, error) {
	if !store.IsPublicID(publicID) {
		return nil, refusal.Newf(refusal.NotFound, refusal.CodeNotFound, "No run %s in this workspace.", publicID)
	}
	r, err := store.RunByPublicID(ctx, q, a.WorkspaceID, publicID)
	if errors.Is(err, store.ErrNotFound) {
		return nil, refusal.Newf(refusal.NotFound, refusal.CodeNotFound, "No run %s in this workspace.", publicID)
	}
	return r, err
}

func taskNotFound(key string) error {
	return refusal.Newf(refusal.NotFound, refusal.CodeNotFound, "No task %s in this run.", key)
}

// lockForWrite is the head every changing run door shares: the run by its public id, its lock,
// then the actor's write standing on it, in the order docs/api.md#runs states.
func lockForWrite(ctx context.Context, x *runs.Tx, a *runs.Actor, runID string) (*store.Run, error) {
	r, err := loadRun(ctx, x.Tx, a, runID)
	if err != nil {
		return nil, err
	}
	if r, err = x.LockRun(ctx, r.ID); err != nil {
		return nil, err
	}
	if err := writeStanding(ctx, x.Tx, a, r); err != nil {
		return nil, err
	}
	return r, nil
}

// lockRowForWrite is lockForWrite for a door on one of the run's rows: an unknown row is
// not_found before the standing is read.
func lockRowForWrite(ctx context.Context, x *runs.Tx, a *runs.Actor, runID, key string) (*store.Run, *store.Task, error) {
	r, err := loadRun(ctx, x.Tx, a, runID)
	if err != nil {
		return nil, nil, err
	}
	if r, err = x.LockRun(ctx, r.ID); err != nil {
		return nil, nil, err
	}
	t, err := store.TaskByKey(ctx, x.Tx, r.ID, key)
	if errors.Is(err, store.ErrNotFound) {
		return nil, nil, taskNotFound(key)
	}
	if err != nil {
		return nil, nil, err
	}
	if err := writeStanding(ctx, x.Tx, a, r); err != nil {
		return nil, nil, err
	}
	return r, t, nil
}
