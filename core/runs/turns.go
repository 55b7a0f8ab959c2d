package runs

import (
	"context"

	"github.com/nexuskernel/nexus/core/store"
)

// The engine's side of a conversation's turns (docs/api.md#conversations): the answering agent's
// profile frozen onto a turn, a queued turn started, and a turn kept in step with its run. The
// conversation doors themselves are core/conversations'.

// acceptProfile freezes the answering agent's profile onto a turn of c.
func (e *Engine) acceptProfile(ctx context.Context, q store.Querier, c *store.Conversation, toolNames []string) (*AcceptedProfile, error) {
	return e.acceptProfileFor(ctx, q, c, c.AnsweringAgentID, c.AnsweringAgentPublicID, toolNames)
}

// acceptProfileFor freezes the profile of the agent that answers a turn of c: its answering
// agent, or the agent a send selected.
func (e *Engine) acceptProfileFor(ctx context.Context, q store.Querier, c *store.Conversation, agentID int64, agentPublicID string, toolNames []string) (*AcceptedProfile, error) {
	// The turn's run will freeze this memory configuration; its skill catalog is read against it.
	principal := Member{Kind: store.KindAgent, PublicID: agentPublicID}
	mc, err := e.freezeMemory(ctx, q, c.WorkspacePublicID, c.PublicID, principal)
	if err != nil {
		return nil, err
	}
	skills := &skillFacts{MemoryContext: mc, WorkspacePublicID: c.WorkspacePublicID, ConversationPublicID: c.PublicID, Principal: principal}
	return e.freezeProfile(ctx, q, agentID, deref(c.DefaultRunnerExecutorPublicID), toolNames, skills)
}

// startTurn starts a queued turn's run.
func (e *Engine) startTurn(ctx context.Context, tx *store.Tx, fx *effects, t *store.Turn, r *store.Run, now int64) error {
	t.Status, t.StartedAt = TurnRunning, &now
	if err := store.SetTurn(ctx, tx, t); err != nil {
		return err
	}
	return e.startRun(ctx, tx, fx, r, now)
}

// followTurn keeps a conversation-hosted run's turn in step with it (docs/api.md#conversations)
// and, when the turn leaves running, starts the conversation's oldest queued turn. It runs in the
// transaction that changed the run.
func (e *Engine) followTurn(ctx context.Context, tx *store.Tx, fx *effects, run *store.Run, now int64) error {
	if run.ConversationID == nil {
		return nil
	}
	t, err := store.TurnOfRun(ctx, tx, run.ID)
	if err != nil {
		return err
	}
	if t.Status != TurnRunning && t.Status != TurnQueued {
		return nil
	}
	switch run.Status {
	case RunCompleted:
		d := run.DeliverableTaskKey
		t.Status, t.AnswerTaskKey, t.AnswerText, t.CompletedAt = TurnCompleted, &d, new(deref(run.Answer)), &now
	case RunNeedsAttention:
		t.Status, t.CompletedAt = TurnFailed, &now
		te, err := e.firstAttentionError(ctx, tx, run)
		if err != nil {
			return err
		}
		t.FailureKey, t.FailureDetail = &te.Key, nullable(te.Detail)
	case RunCanceled:
		t.Status, t.CompletedAt = TurnCanceled, &now
	default:
		return nil
	}
	if err := store.SetTurn(ctx, tx, t); err != nil {
		return err
	}
	if err := e.noteReply(ctx, tx, fx, t); err != nil {
		return err
	}
	if err := e.requeueSteers(ctx, tx, fx, run, now); err != nil {
		return err
	}
	return e.startNextTurn(ctx, tx, fx, *run.ConversationID, now)
}

// firstAttentionError is the error of the first task listed under the run's first attention
// reason.
func (e *Engine) firstAttentionError(ctx context.Context, q store.Querier, run *store.Run) (TaskError, error) {
	tasks, err := store.TraceTasks(ctx, q, run.ID)
	if err != nil {
		return TaskError{}, err
	}
	byKey := map[string]*store.TaskTrace{}
	for i := range tasks {
		byKey[tasks[i].Key] = &tasks[i]
	}
	for _, att := range AttentionOf(run, tasks, byKey) {
		for _, k := range att.TaskKeys {
			if t := byKey[k]; t != nil && t.ErrorKey != nil {
				return TaskError{Key: *t.ErrorKey, Detail: deref(t.ErrorDetail)}, nil
			}
		}
	}
	return TaskError{Key: KeyPredecessorFailed}, nil
}
