package conversations

import (
	"context"
	"errors"
	"time"

	"github.com/nexuskernel/nexus/core/envelope"
	"github.com/nexuskernel/nexus/core/runs"
	"github.com/nexuskernel/nexus/core/store"
	"github.com/nexuskernel/nexus/core/uploads"
)

// The turns of a conversation and the requests the conversation tools write, in the life of the
// runs they host (docs/api.md#conversations, docs/agent-tools.md#delegation-and-conversations): a
// turn posted (a member's message, a tool's brief or send, a scheduled input whose time came, a
// steer that ended before a seal carried it, a late result delivered as kernel mail), its run
// started, the turn kept in step with its run and the next queued turn started after it, the
// reply a request's sender reads, and a stopped run's requests canceled. The engine reaches this
// side through runs.Conversations (Hosted), on its own transaction; the run and its rounds are
// the engine's (runs.Tx.InsertTurnRun, StartRun, StopRun).

// Request kinds and deliveries as conversation_requests stores them.
const (
	RequestSpawn = "spawn"
	RequestSend  = "send"

	DeliveryQueued    = "queued"
	DeliverySteering  = "steering"
	DeliveryScheduled = "scheduled"

	RequestPending   = "pending"
	RequestPosted    = "posted"
	RequestWithdrawn = "withdrawn"
)

// Hosted is the conversation side of the runs a conversation hosts: it implements
// runs.Conversations, which core/server and the engine's test kit fill with it.
type Hosted struct{}

var _ runs.Conversations = Hosted{}

// TurnPost is one turn posted into a locked conversation: a member's message, an agent's spawn
// brief or send, a held request released, or a delivery.
type TurnPost struct {
	PublicID string
	// AuthorKind is "kernel", "agent" or "user" (a member's message); AuthorPublicID the
	// author's id ("" for the kernel).
	AuthorKind, AuthorPublicID string
	SenderConversation         *string
	Text                       string
	Model                      string
	// AgentID answers the turn (the conversation's answerer, or a send's selected agent) with
	// the profile frozen for it.
	AgentID       int64
	AgentPublicID string
	Profile       *runs.AcceptedProfile
	// Attachments are the turn's input uploads, checked and locked by runs.Tx.InputAttachments;
	// the turn binds them.
	Attachments []runs.Attachment
	// ToolNames is the turn's tool_names as posted; nil stores none.
	ToolNames []string
}

// postTurn writes a turn, its run and the run's first round into a conversation the caller has
// locked, and starts it when nothing else of the conversation is running or queued.
func postTurn(ctx context.Context, x *runs.Tx, c *store.Conversation, in *TurnPost, now int64) (*store.Turn, error) {
	tx := x.Tx
	open, err := store.OpenTurns(ctx, tx, c.ID)
	if err != nil {
		return nil, err
	}
	r, err := x.InsertTurnRun(ctx, c, &runs.TurnRun{AuthorKind: in.AuthorKind, AuthorPublicID: in.AuthorPublicID,
		AgentPublicID: in.AgentPublicID, Profile: in.Profile, Model: in.Model, Text: in.Text, Attachments: in.Attachments}, now)
	if err != nil {
		return nil, err
	}
	pos, err := store.NextTurnPosition(ctx, tx, c.ID)
	if err != nil {
		return nil, err
	}
	t := &store.Turn{PublicID: in.PublicID, ConversationID: c.ID, Position: pos, AuthorKind: in.AuthorKind,
		SenderConversationPublicID: in.SenderConversation, InputText: in.Text, InputAttachments: store.Attachments{}, Model: in.Model,
		Status: runs.TurnQueued, RunID: r.ID, RunPublicID: r.PublicID, CreatedAt: now}
	if len(in.Attachments) > 0 {
		t.InputAttachments = in.Attachments
	}
	t.ToolNames = in.ToolNames
	if in.AuthorPublicID != "" {
		t.AuthorPublicID = &in.AuthorPublicID
	}
	if err := store.InsertTurn(ctx, tx, t); err != nil {
		return nil, err
	}
	x.NoteTurn(r, t)
	if err := uploads.BindAttachments(ctx, tx, uploads.Target{Kind: uploads.TargetTurnInput, ID: t.ID, WorkspaceID: c.WorkspaceID},
		in.Attachments, time.UnixMilli(now)); err != nil {
		return nil, err
	}
	if len(open) == 0 {
		if err := startTurn(ctx, x, t, r, now); err != nil {
			return nil, err
		}
	}
	return t, store.SetConversation(ctx, tx, c.ID, c.Status, now, c.ArchivedAt)
}

// startTurn starts a queued turn's run.
func startTurn(ctx context.Context, x *runs.Tx, t *store.Turn, r *store.Run, now int64) error {
	t.Status, t.StartedAt = runs.TurnRunning, &now
	if err := store.SetTurn(ctx, x.Tx, t); err != nil {
		return err
	}
	x.NoteTurn(r, t)
	return x.StartRun(ctx, r, now)
}

// startNextTurn starts a conversation's oldest queued turn, if any, once its turn left running.
func startNextTurn(ctx context.Context, x *runs.Tx, conversationID int64, now int64) error {
	c, err := store.LockConversation(ctx, x.Tx, conversationID)
	if err != nil {
		return err
	}
	next, err := store.OldestQueuedTurn(ctx, x.Tx, c.ID)
	if errors.Is(err, store.ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	nr, err := x.LockRun(ctx, next.RunID)
	if err != nil || nr.Status != runs.RunPending {
		return err
	}
	return startTurn(ctx, x, next, nr, now)
}

// FollowTurn keeps a conversation-hosted run's turn in step with it (docs/api.md#conversations)
// and, when the turn leaves running, starts the conversation's oldest queued turn. It runs in the
// transaction that changed the run.
func (Hosted) FollowTurn(ctx context.Context, x *runs.Tx, run *store.Run, now int64) error {
	tx := x.Tx
	t, err := store.TurnOfRun(ctx, tx, run.ID)
	if err != nil {
		return err
	}
	if t.Status != runs.TurnRunning && t.Status != runs.TurnQueued {
		return nil
	}
	switch run.Status {
	case runs.RunCompleted:
		d := run.DeliverableTaskKey
		t.Status, t.AnswerTaskKey, t.AnswerText, t.CompletedAt = runs.TurnCompleted, &d, ptr(deref(run.Answer)), &now
	case runs.RunNeedsAttention:
		t.Status, t.CompletedAt = runs.TurnFailed, &now
		te, err := firstAttentionError(ctx, tx, run)
		if err != nil {
			return err
		}
		t.FailureKey, t.FailureDetail = &te.Key, nullable(te.Detail)
	case runs.RunCanceled:
		t.Status, t.CompletedAt = runs.TurnCanceled, &now
	default:
		return nil
	}
	return turnEnded(ctx, x, run, t, now)
}

// AnswerTurn completes a conversation-hosted run's running turn with the answer of its mainline's
// final round, d, while its conversation-lifetime detached work still runs
// (docs/api.md#conversations): the conversation moves on to its next queued turn, and the run
// stays running for the branches.
func (Hosted) AnswerTurn(ctx context.Context, x *runs.Tx, run *store.Run, d *store.TaskTrace, now int64) error {
	tx := x.Tx
	turn, err := store.TurnOfRun(ctx, tx, run.ID)
	if err != nil {
		return err
	}
	if turn.Status != runs.TurnRunning {
		return nil
	}
	full, err := store.TaskByID(ctx, tx, d.ID)
	if err != nil {
		return err
	}
	turn.Status, turn.AnswerTaskKey, turn.AnswerText, turn.CompletedAt = runs.TurnCompleted, &d.Key, ptr(deref(full.Output)), &now
	return turnEnded(ctx, x, run, turn, now)
}

// turnEnded writes a turn that left running, records the reply it owes, queues the steers bound
// to its run that no seal carried, and starts the conversation's next queued turn.
func turnEnded(ctx context.Context, x *runs.Tx, run *store.Run, t *store.Turn, now int64) error {
	if err := store.SetTurn(ctx, x.Tx, t); err != nil {
		return err
	}
	x.NoteTurn(run, t)
	if err := noteReply(ctx, x, t); err != nil {
		return err
	}
	if err := requeueSteers(ctx, x, run, now); err != nil {
		return err
	}
	return startNextTurn(ctx, x, *run.ConversationID, now)
}

// firstAttentionError is the error of the first task listed under the run's first attention
// reason.
func firstAttentionError(ctx context.Context, q store.Querier, run *store.Run) (runs.TaskError, error) {
	tasks, err := store.TraceTasks(ctx, q, run.ID)
	if err != nil {
		return runs.TaskError{}, err
	}
	byKey := map[string]*store.TaskTrace{}
	for i := range tasks {
		byKey[tasks[i].Key] = &tasks[i]
	}
	for _, att := range runs.AttentionOf(run, tasks, byKey) {
		for _, k := range att.TaskKeys {
			if t := byKey[k]; t != nil && t.ErrorKey != nil {
				return runs.TaskError{Key: *t.ErrorKey, Detail: deref(t.ErrorDetail)}, nil
			}
		}
	}
	return runs.TaskError{Key: runs.KeyPredecessorFailed}, nil
}

// PostDelivery queues a late conversation-lifetime result, text, as a turn authored {kind:
// "kernel"} into c, which the engine has locked and found active
// (docs/agent-tools.md#delegation-and-conversations): its run freezes the answering agent's
// profile as it stands, like any turn, and the conversation's queue bound does not apply (a
// delivery is never refused). It starts at once when the conversation has no running or queued
// turn. root is the delivered row: the turn's sender_conversation_public_id is the child
// conversation a reply came from (none for a branch result), so that status can count the replies
// from it that wait in the queue.
func (Hosted) PostDelivery(ctx context.Context, x *runs.Tx, c *store.Conversation, text string, root *store.TaskTrace, now int64) (*store.Turn, error) {
	sender := replySender(ctx, x.Tx, root)
	prof, err := x.AcceptProfile(ctx, c, nil)
	if err != nil {
		return nil, err
	}
	ref := prof.DefaultModel
	if ref == "" {
		ref = x.DefaultModel()
	}
	in := &TurnPost{AuthorKind: runs.OriginKernel, Text: text, Model: ref, AgentID: c.AnsweringAgentID, AgentPublicID: c.AnsweringAgentPublicID,
		Profile: prof, PublicID: store.NewPublicID()}
	if sender != "" {
		in.SenderConversation = &sender
	}
	return postTurn(ctx, x, c, in, now)
}

// replySender is the child conversation a delivered reply came from, "" for a branch result.
func replySender(ctx context.Context, q store.Querier, root *store.TaskTrace) string {
	if root.Kind != runs.KindDelegation || root.ParentKey == nil {
		return ""
	}
	r, err := store.RequestByCall(ctx, q, root.RunID, *root.ParentKey)
	if err != nil {
		return ""
	}
	c, err := store.ConversationByID(ctx, q, r.ConversationID)
	if err != nil {
		return ""
	}
	return c.PublicID
}

// Reply reads the reply a request's addressee gave (docs/agent-tools.md#delegation-and-conversations):
// settled once its turn ended (completed, failed or canceled) or the request was withdrawn before it
// started; the envelope is keyed by the call and names the child conversation.
func (Hosted) Reply(ctx context.Context, q store.Querier, runID int64, callKey string) (*envelope.TaskResult, bool, error) {
	return replyOf(ctx, q, runID, callKey)
}

func replyOf(ctx context.Context, q store.Querier, runID int64, callKey string) (*envelope.TaskResult, bool, error) {
	r, err := store.RequestByCall(ctx, q, runID, callKey)
	if errors.Is(err, store.ErrNotFound) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	conv, err := store.ConversationByID(ctx, q, r.ConversationID)
	if err != nil {
		return nil, false, err
	}
	tr := &envelope.TaskResult{Key: callKey, Conversation: conv.PublicID, ModelSource: true, ModelPrompt: r.InputText}
	if r.Status == RequestWithdrawn && r.TurnID == nil {
		tr.Status, tr.Error = runs.StatusCanceled, &envelope.Failure{Key: runs.KeyTaskCanceled}
		return tr, true, nil
	}
	if r.TurnID == nil {
		return nil, false, nil
	}
	turn, err := store.TurnByID(ctx, q, *r.TurnID)
	if err != nil {
		return nil, false, err
	}
	switch turn.Status {
	case runs.TurnCompleted:
		tr.Status, tr.Output = runs.StatusCompleted, deref(turn.AnswerText)
	case runs.TurnFailed:
		tr.Status = runs.StatusFailed
		tr.Error = &envelope.Failure{Key: deref(turn.FailureKey), Detail: deref(turn.FailureDetail)}
	case runs.TurnCanceled:
		tr.Status, tr.Error = runs.StatusCanceled, &envelope.Failure{Key: runs.KeyTaskCanceled}
	default:
		return nil, false, nil
	}
	return tr, true, nil
}

// noteReply records, when a turn ends, the sending run whose reply row observes it: the engine
// advances that run after the commit without this transaction taking its lock
// (docs/development.md#how-the-kernel-runs-work).
func noteReply(ctx context.Context, x *runs.Tx, turn *store.Turn) error {
	r, err := store.RequestOfTurn(ctx, x.Tx, turn.ID)
	if errors.Is(err, store.ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	if r.ReplyOwed || r.Kind == RequestSpawn {
		x.AdvanceAfter(r.RunID)
	}
	return nil
}

// Sweep is the sweeper's pass over conversations (docs/development.md#how-the-kernel-runs-work):
// the runs whose reply rows a reply settled meanwhile are advanced, then the scheduled inputs
// whose time has come are posted. It reports how many runs it advanced and inputs it released.
func (Hosted) Sweep(ctx context.Context, e *runs.Engine) (int, error) {
	replies, err := observeReplies(ctx, e)
	if err != nil {
		return replies, err
	}
	released, err := releaseScheduled(ctx, e)
	return replies + released, err
}

// observeReplies is the poll behind the engine's advance of reply observers: it settles the spawn
// awaits and delegation rows whose reply has arrived meanwhile, taking a run's lock only for one
// whose reply is final. It reports how many runs it advanced.
func observeReplies(ctx context.Context, e *runs.Engine) (int, error) {
	q := e.Reader()
	n := 0
	var after int64
	for {
		ts, err := store.OpenRequestObservers(ctx, q, after, runs.SweepBatch)
		if err != nil {
			return n, err
		}
		for i := range ts {
			t := &ts[i]
			after = t.ID
			if t.ParentKey == nil {
				continue
			}
			if _, done, err := replyOf(ctx, q, t.RunID, *t.ParentKey); err != nil || !done {
				if err != nil {
					return n, err
				}
				continue
			}
			e.Advance(ctx, []int64{t.RunID})
			n++
		}
		if len(ts) < runs.SweepBatch {
			return n, nil
		}
	}
}

// releaseScheduled queues the scheduled inputs whose time has come
// (docs/development.md#how-the-kernel-runs-work, docs/agent-tools.md#delegation-and-conversations,
// docs/agent-tools.md#the-approval-gate): each takes its queue position now, as a turn authored by
// its sender, in its own transaction under the addressee's lock. An addressee archived meanwhile
// withdraws the input, and its owed reply reads canceled. It reports how many it released.
func releaseScheduled(ctx context.Context, e *runs.Engine) (int, error) {
	due, err := store.DueRequests(ctx, e.Reader(), e.NowMS(), runs.SweepBatch)
	if err != nil {
		return 0, err
	}
	n := 0
	for i := range due {
		id := due[i].ID
		var observer int64
		err := e.Write(ctx, func(x *runs.Tx) error {
			tx := x.Tx
			observer = 0
			c, err := store.LockConversation(ctx, tx, due[i].ConversationID)
			if err != nil {
				return err
			}
			r, err := store.RequestByCall(ctx, tx, due[i].RunID, due[i].CallKey)
			if err != nil || r.ID != id || r.Status != RequestPending {
				return err
			}
			now := x.NowMS()
			if r.ReplyOwed {
				observer = r.RunID
			}
			if c.Status != runs.ConversationActive {
				r.Status = RequestWithdrawn
				return store.SetRequest(ctx, tx, r)
			}
			if err := postRequest(ctx, x, c, r, now); err != nil {
				return err
			}
			n++
			return store.SetRequest(ctx, tx, r)
		})
		if err != nil {
			return n, err
		}
		if observer != 0 {
			e.Advance(ctx, []int64{observer})
		}
	}
	return n, nil
}

// postRequest posts a held request (a scheduled input whose time came, or a steer whose reply
// ended before any seal carried it) as a turn of its sender into a conversation the caller has
// locked, taking its queue position now; the queue bound does not apply to an input already
// accepted.
func postRequest(ctx context.Context, x *runs.Tx, c *store.Conversation, r *store.ConversationRequest, now int64) error {
	tx := x.Tx
	agent, err := store.AgentByID(ctx, tx, r.AnsweringAgentID)
	if err != nil {
		return err
	}
	prof, err := x.AcceptProfileFor(ctx, c, agent.ID, agent.PublicID, nil)
	if err != nil {
		return err
	}
	sender, err := store.ConversationByID(ctx, tx, r.SenderConversationID)
	if err != nil {
		return err
	}
	turn, err := postTurn(ctx, x, c, &TurnPost{PublicID: r.PublicID, AuthorKind: store.KindAgent, AuthorPublicID: r.AuthorPublicID,
		SenderConversation: &sender.PublicID, Text: r.InputText, Model: r.Model, AgentID: agent.ID, AgentPublicID: agent.PublicID,
		Profile: prof}, now)
	if err != nil {
		return err
	}
	r.Status, r.TurnID, r.ReleasedAt = RequestPosted, &turn.ID, &now
	return store.SetRequest(ctx, tx, r)
}

// requeueSteers falls back to the queue for the steers bound to a run whose turn ended before a
// seal carried them (docs/agent-tools.md#delegation-and-conversations: with nothing running a steer
// queues): each becomes a queued turn of its sender, so a steer is never lost.
func requeueSteers(ctx context.Context, x *runs.Tx, run *store.Run, now int64) error {
	tx := x.Tx
	steers, err := store.PendingSteers(ctx, tx, run.ID)
	if err != nil || len(steers) == 0 || run.ConversationID == nil {
		return err
	}
	c, err := store.LockConversation(ctx, tx, *run.ConversationID)
	if err != nil {
		return err
	}
	for i := range steers {
		if c.Status != runs.ConversationActive {
			steers[i].Status = RequestWithdrawn
			if err := store.SetRequest(ctx, tx, &steers[i]); err != nil {
				return err
			}
			continue
		}
		if err := postRequest(ctx, x, c, &steers[i], now); err != nil {
			return err
		}
	}
	return nil
}

// stopRun stops r (runs.Tx.StopRun) and cancels the unfinished work derived from its spawn briefs
// and sends (docs/agent-tools.md#delegation-and-conversations), whose undelivered replies were
// suppressed with the run's rows.
func stopRun(ctx context.Context, x *runs.Tx, r *store.Run, by runs.Member, force bool) error {
	if err := x.StopRun(ctx, r, by, force); err != nil {
		return err
	}
	reqs, err := store.RequestsOfRun(ctx, x.Tx, r.ID)
	if err != nil {
		return err
	}
	seen := map[int64]bool{r.ID: true}
	for i := range reqs {
		if _, err := cancelRequest(ctx, x, &reqs[i], by, seen); err != nil {
			return err
		}
	}
	return nil
}

// cancelRequest withdraws one request or stops, with force, the run answering it, and recursively
// what that run sent on; seen holds the runs already visited. It reports whether anything was left
// to cancel.
func cancelRequest(ctx context.Context, x *runs.Tx, r *store.ConversationRequest, by runs.Member, seen map[int64]bool) (bool, error) {
	tx := x.Tx
	if r.Status == RequestWithdrawn {
		return false, nil
	}
	if r.TurnID == nil {
		if r.Status != RequestPending {
			return false, nil
		}
		r.Status = RequestWithdrawn
		return true, store.SetRequest(ctx, tx, r)
	}
	turn, err := store.TurnByID(ctx, tx, *r.TurnID)
	if err != nil {
		return false, err
	}
	run, err := x.LockRun(ctx, turn.RunID)
	if err != nil {
		return false, err
	}
	if seen[run.ID] {
		return false, nil
	}
	seen[run.ID] = true
	did := false
	if run.Status != runs.RunCompleted && run.Status != runs.RunCanceled && run.Status != runs.RunCanceling {
		if turn.Status == runs.TurnQueued {
			r.Status = RequestWithdrawn
			if err := store.SetRequest(ctx, tx, r); err != nil {
				return false, err
			}
		}
		if err := x.StopRun(ctx, run, by, true); err != nil {
			return false, err
		}
		did = true
	}
	// The requests the answering run sent on to its own children are canceled by source.
	onward, err := store.RequestsOfRun(ctx, tx, run.ID)
	if err != nil {
		return false, err
	}
	for i := range onward {
		d, err := cancelRequest(ctx, x, &onward[i], by, seen)
		if err != nil {
			return false, err
		}
		did = did || d
	}
	return did, nil
}

func nullable(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}
