package runs

import (
	"context"

	"github.com/nexuskernel/nexus/core/refusal"
	"github.com/nexuskernel/nexus/core/store"
)

// The engine's side of a conversation's turns (docs/api.md#conversations): the answering agent's
// profile frozen onto a turn, a queued turn started, and a turn kept in step with its run. The
// conversation doors themselves are core/conversations'.

// Profiles freezes an answering agent's profile as it stands now onto a conversation turn
// (docs/api.md#conversations acceptance step 1): its composed and rendered declaration (narrowed by
// the turn's tool_names), skill catalog and environment, instructions, default model, approval mode
// and rules. Agent profiles own it; nil means every agent has the empty profile (no tools, no
// instructions, bypass).
type Profiles interface {
	AcceptProfile(ctx context.Context, q store.Querier, agentID int64, in *ProfileAcceptance) (*AcceptedProfile, error)
}

// ProfileAcceptance is what a turn adds to its agent's profile.
type ProfileAcceptance struct {
	// Selection is the conversation's default Runner, "" for none.
	Selection string
	// ToolNames narrows by callable name; nil keeps everything.
	ToolNames []string
	// Path prefixes refusal paths ("message.").
	Path string
	// Skills are the facts a kernel skill callable's catalog is read against; nil reads none.
	Skills *SkillFacts
}

// AcceptedProfile is a frozen profile.
type AcceptedProfile struct {
	Frozen        FrozenDeclaration
	Instructions  *string
	DefaultModel  string
	ApprovalMode  string
	ApprovalRules []byte
}

// acceptProfile freezes the answering agent's profile, or the empty profile without the
// profile service.
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
	skills := &SkillFacts{MemoryContext: mc, WorkspacePublicID: c.WorkspacePublicID, ConversationPublicID: c.PublicID, Principal: principal}
	in := &ProfileAcceptance{Selection: deref(c.DefaultRunnerExecutorPublicID), ToolNames: toolNames, Path: "message.", Skills: skills}
	if e.profiles != nil {
		return e.profiles.AcceptProfile(ctx, q, agentID, in)
	}
	empty := &AcceptedProfile{Frozen: FrozenDeclaration{ToolDefinitions: []byte("[]"), Environment: []byte("null"), SkillCatalog: []byte("[]")},
		ApprovalMode: ModeBypass}
	if e.decls == nil {
		if len(toolNames) > 0 {
			return nil, refusal.Newf(refusal.Unprocessable, CodeToolNotDeclared, "%q is not one of this turn's tools.", toolNames[0]).
				With("path", "message.tool_names[0]").With("tool_name", toolNames[0])
		}
		return empty, nil
	}
	f, err := e.decls.AcceptStep(ctx, q, &StepDeclaration{WorkspaceID: c.WorkspaceID, Selection: in.Selection, ToolNames: toolNames,
		NarrowPath: "message.", Skills: skills})
	if err != nil {
		return nil, err
	}
	empty.Frozen = *f
	return empty, nil
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
