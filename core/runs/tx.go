package runs

import (
	"context"
	"time"

	"github.com/nexuskernel/nexus/core/envelope"
	"github.com/nexuskernel/nexus/core/events"
	"github.com/nexuskernel/nexus/core/store"
)

// Tx is one engine transaction, the one window the packages above the engine have into it: the
// store transaction (Tx), the run and row locks taken through it (LockRun, LockRow), and the
// effects the engine owes the world once it commits (kernel wake-ups, work_available and
// work_canceled, the observing runs to advance after), which it collects as the engine's own
// changes are made through it and delivers after the commit, never before and never after a
// rollback. The executor plane settles its rows through a Tx (executor.go); a kernel call's
// settling transaction is one too (KernelCall.Engine), through which the conversation tools
// place their rows under the calling run's lock; so is the transaction in which the engine calls
// core/conversations back (Conversations).
type Tx struct {
	e *Engine
	// Tx is the store transaction; rows the caller writes itself go here, so that they commit
	// with the engine's changes or not at all.
	Tx *store.Tx
	fx *effects
	// run is the calling run when the Tx settles a kernel call, under that run's lock; nil
	// otherwise.
	run *store.Run
}

// Write runs fn in one engine transaction (retried when the store answers store.ErrRetryable)
// and delivers its effects once it commits.
func (e *Engine) Write(ctx context.Context, fn func(x *Tx) error) error {
	return e.write(ctx, func(tx *store.Tx, fx *effects) error {
		return fn(&Tx{e: e, Tx: tx, fx: fx})
	})
}

// WriteIn runs fn in the caller's transaction (a revocation's, which core/identity owns) and
// returns what to deliver once that transaction commits; the caller must not deliver after a
// rollback.
func (e *Engine) WriteIn(ctx context.Context, tx *store.Tx, fn func(x *Tx) error) (deliver func(), err error) {
	fx := &effects{}
	if err := fn(&Tx{e: e, Tx: tx, fx: fx}); err != nil {
		return nil, err
	}
	return func() { e.deliver(fx) }, nil
}

// Now is the engine's clock, which every deadline reads.
func (x *Tx) Now() time.Time { return x.e.now() }

// NowMS is Now in Unix milliseconds.
func (x *Tx) NowMS() int64 { return x.e.nowMS() }

// LockRun takes the run's lock (docs/development.md#how-the-kernel-runs-work) and reads the run
// under it.
func (x *Tx) LockRun(ctx context.Context, runID int64) (*store.Run, error) {
	return store.LockRun(ctx, x.Tx, runID)
}

// LockRow takes the run's lock, then the row's (docs/development.md#how-the-kernel-runs-work), and
// reads both under them.
func (x *Tx) LockRow(ctx context.Context, runID, taskID int64) (*store.Run, *store.Task, error) {
	run, err := x.LockRun(ctx, runID)
	if err != nil {
		return nil, nil, err
	}
	t, err := store.LockTask(ctx, x.Tx, taskID)
	if err != nil {
		return nil, nil, err
	}
	return run, t, nil
}

// The engine's operations core/conversations runs on a Tx (the spawn, send, status and cancel
// tools on a kernel call's, the conversation doors on Engine.Write's, the turns it keeps in step
// on the engine's own), each the engine's own, so that a turn's run and a stopped run go through
// one lifecycle and its wake-ups.

// Run is the calling run, under its lock, when the Tx settles a kernel call; nil otherwise.
func (x *Tx) Run() *store.Run { return x.run }

// TurnRun is what the run of a new conversation turn is made of (Tx.InsertTurnRun).
type TurnRun struct {
	// AuthorKind is "kernel", "agent" or "user" (a member's message); AuthorPublicID the
	// author's id ("" for the kernel).
	AuthorKind, AuthorPublicID string
	// AgentPublicID answers the turn with Profile, the profile frozen for it.
	AgentPublicID string
	Profile       *AcceptedProfile
	// Model is the first round's model; Text its prompt and Attachments its input uploads.
	Model, Text string
	Attachments []Attachment
}

// InsertTurnRun writes the pending run of a new turn of conversation c, which the caller has
// locked, and the run's first round r1 (docs/api.md#conversations): the run freezes its memory
// configuration now and the answerer's profile as in.Profile froze it (its approval mode, bypass
// when the profile sets none), and the round reads in.Text and in.Attachments. The turn that names
// the run is the caller's to write, and to start (StartRun).
func (x *Tx) InsertTurnRun(ctx context.Context, c *store.Conversation, in *TurnRun, now int64) (*store.Run, error) {
	e, tx := x.e, x.Tx
	prof := in.Profile
	mc, err := e.freezeMemory(ctx, tx, c.WorkspacePublicID, c.PublicID, Member{Kind: store.KindAgent, PublicID: in.AgentPublicID})
	if err != nil {
		return nil, err
	}
	rules, mode := prof.ApprovalRules, prof.ApprovalMode
	if len(rules) == 0 {
		rules = []byte("[]")
	}
	if mode == "" {
		mode = ModeBypass
	}
	convID, agentID := c.ID, in.AgentPublicID
	r := &store.Run{PublicID: store.NewPublicID(), WorkspaceID: c.WorkspaceID, WorkspacePublicID: c.WorkspacePublicID,
		ConversationID: &convID, ConversationPublicID: &c.PublicID, CreatedByKind: in.AuthorKind, CreatedByPublicID: in.AuthorPublicID,
		AnsweringAgentPublicID: &agentID, Status: RunPending, ApprovalMode: mode, ApprovalRules: string(rules),
		DefaultRunnerExecutorPublicID: c.DefaultRunnerExecutorPublicID, DeliverableTaskKey: "r1", Revision: 1,
		MainlineRoundCounter: 1, MemoryContext: mc, CreatedAt: now, UpdatedAt: now}
	if err := store.InsertRun(ctx, tx, r); err != nil {
		return nil, err
	}
	x.fx.note(events.RunStatus{Scope: scopeOf(r), Status: r.Status})
	origin := OriginKernel
	if in.AuthorKind != OriginKernel {
		origin = OriginAuthor
	}
	ref := in.Model
	round := &store.Task{TaskTrace: store.TaskTrace{
		RunID: r.ID, Key: "r1", Kind: KindModel, Status: StatusWaiting, Mainline: true, Origin: origin,
		OnFailure: OnFailureHalt, Lifetime: LifetimeConversation, Wake: WakeAuto,
		Visibility: VisibilityVisible, LineageRoot: "r1", RoundNumber: 1, Model: &ref, CreatedAt: now,
	},
		Prompt: &in.Text, Instructions: prof.Instructions,
		ToolDefinitions: new(string(prof.Frozen.ToolDefinitions)),
		Environment:     new(string(prof.Frozen.Environment)), SkillCatalog: new(string(prof.Frozen.SkillCatalog)),
	}
	if len(in.Attachments) > 0 {
		round.Attachments = in.Attachments
	}
	return r, store.InsertTask(ctx, tx, round)
}

// AdvanceAfter has the engine advance run runID, in a transaction of its own, once this one
// commits: a turn this transaction ended may have settled the run's reply rows, and this
// transaction does not take that run's lock (docs/development.md#how-the-kernel-runs-work).
func (x *Tx) AdvanceAfter(runID int64) { x.fx.observe = append(x.fx.observe, runID) }

// FinalWork reads the logical final work of t, a row of run runID
// (docs/agent-tools.md#delegation-and-conversations): its <task_result> envelope, keyed
// readerKey, and whether it has settled. A wait call reads its target with it.
func (x *Tx) FinalWork(ctx context.Context, runID int64, t *store.Task, readerKey string) (envelope.TaskResult, bool, error) {
	st, err := x.e.finalState(ctx, x.Tx, runID, t, readerKey)
	if err != nil {
		return envelope.TaskResult{}, false, err
	}
	return st.result, st.settled, nil
}

// AcceptProfile freezes the profile of c's answering agent for a new turn of c.
func (x *Tx) AcceptProfile(ctx context.Context, c *store.Conversation, toolNames []string) (*AcceptedProfile, error) {
	return x.e.acceptProfile(ctx, x.Tx, c, toolNames)
}

// AcceptProfileFor freezes the profile of the agent that answers a new turn of c: its answering
// agent, or the agent a send selected.
func (x *Tx) AcceptProfileFor(ctx context.Context, c *store.Conversation, agentID int64, agentPublicID string, toolNames []string) (*AcceptedProfile, error) {
	return x.e.acceptProfileFor(ctx, x.Tx, c, agentID, agentPublicID, toolNames)
}

// EligibleRunner reports whether id is an active Runner of the workspace.
func (x *Tx) EligibleRunner(ctx context.Context, workspaceID int64, id string) bool {
	return x.e.eligibleRunner(ctx, x.Tx, workspaceID, id)
}

// CheckModel checks a model reference for work whose declaration has tools or not; its refusal
// is the model catalog's.
func (x *Tx) CheckModel(ref string, hasTools bool) error {
	_, err := x.e.models.Check(ref, hasTools)
	return err
}

// DefaultModel is the deployment's default model reference.
func (x *Tx) DefaultModel() string { return x.e.models.Default().Ref }

// InputAttachments checks that every id is one of the actor's own complete uploads (422
// unknown_input_upload at path[i] otherwise) and answers their descriptors in order, locked until
// the transaction ends so that a turn posted in it binds them (conversations.TurnPost.Attachments).
func (x *Tx) InputAttachments(ctx context.Context, a *Actor, ids []string, path string) ([]Attachment, error) {
	return x.e.uploads.Inputs(ctx, x.Tx, a.principal(), ids, path)
}

// The engine's reads outside a transaction, for the doors above it.

// Reader is the store's reader the engine's own reads use.
func (e *Engine) Reader() store.Querier { return e.store.Reader() }

// NowMS is the engine's clock in Unix milliseconds.
func (e *Engine) NowMS() int64 { return e.nowMS() }

// The engine's operations the run doors (core/conversations) run on a Tx, on a run the door has
// locked and found the caller standing on: what a start, a stop, a decision, an answer, an
// append or a branch cancel changes, and the readiness that follows.

// StartRun moves the pending run r to running at now and makes its roots ready.
func (x *Tx) StartRun(ctx context.Context, r *store.Run, now int64) error {
	return x.e.startRun(ctx, x.Tx, x.fx, r, now)
}

// StopRun stops r (docs/api.md#runs): its open rows are canceled (without force, rows a claimant
// holds are left to finish), and its turn follows. The unfinished work derived from its spawn
// briefs and sends is core/conversations' to cancel (docs/agent-tools.md#delegation-and-conversations).
func (x *Tx) StopRun(ctx context.Context, r *store.Run, by Member, force bool) error {
	return x.e.stopRunTx(ctx, x.Tx, x.fx, r, by, force, x.NowMS())
}

// Decide approves (deny false) or denies t, a row of r awaiting approval, for a: the approval is
// recorded and the row dispatched, or settled failed approval_denied with the reason. A row whose
// deadline passed is settled by the expiry rule instead, and Decide answers expired.
func (x *Tx) Decide(ctx context.Context, r *store.Run, t *store.Task, a *Actor, deny bool, reason string) (expired bool, err error) {
	e, tx, fx := x.e, x.Tx, x.fx
	now := e.nowMS()
	if t.DeadlineAt != nil && now >= *t.DeadlineAt {
		return true, e.expire(ctx, tx, fx, r, t, now, "")
	}
	origin := ApprovalOriginHuman
	if a.Kind == "agent" {
		origin = ApprovalOriginAgent
	}
	by := a.member()
	// The decision's record is written by the statement that settles or parks the row.
	record := approvalOf(origin, &by, now)
	decision := "approved"
	if deny {
		decision = "denied"
	}
	fx.note(events.ApprovalDecided{Scope: scopeOf(r), Row: rowOf(&t.TaskTrace), Decision: decision, By: by.PublicID})
	if deny {
		f := failAs(StatusFailed, TaskError{Key: KeyApprovalDenied, Detail: envelope.CutUTF8(reason, MaxReasonBytes)}, now)
		f.Approval = record
		if err := e.settleRow(ctx, tx, fx, r, &t.TaskTrace, f); err != nil {
			return false, err
		}
	} else if err := e.dispatch(ctx, tx, fx, r, &t.TaskTrace, now, nil, record); err != nil {
		return false, err
	}
	return false, e.advance(ctx, tx, fx, r)
}
