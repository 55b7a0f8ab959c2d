package runs

import (
	"context"
	"errors"

	"github.com/nexuskernel/nexus/core/envelope"
	"github.com/nexuskernel/nexus/core/store"
)

// The engine's side of the conversation tools (docs/agent-tools.md#delegation-and-conversations):
// the rows that carry replies back (observeRequests, observeSpawn, the reply follow-ups), the
// release of scheduled sends and steers, and the cancel of a stopped run's requests. The tools
// themselves, which resolve addressees and write the requests, are core/conversations', on the
// kernel call's Tx.
//
// Lock order (docs/development.md#how-the-kernel-runs-work). A kernel call runs under its own run's
// lock, and spawn, send and cancel then write into another conversation: a brand-new child
// conversation (which nobody else can hold yet), or an existing addressee whose conversation row,
// and for cancel whose runs, are locked after the caller's run. That inverts the documented order
// for those transitions; a PostgreSQL deadlock it causes is retried by Engine.write (the store
// answers it as store.ErrRetryable), so the inversion costs a retry, never a hang. The reply
// travelling back the other way never takes the caller's lock: the child's transaction records
// the sending run in its effects, and a follow-up transaction after the commit advances it (and
// the sweeper's poll settles any observer a crash left behind).

// Roles of the rows a spawn or send places under its call
// (docs/development.md#how-the-kernel-runs-work).
const (
	RoleSpawn      = "spawn"
	RoleDelegation = "delegation"
)

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

// cancelRequestsOf cancels every unfinished request a stopped run made, recursively.
func (e *Engine) cancelRequestsOf(ctx context.Context, tx *store.Tx, fx *effects, run *store.Run, by Member) error {
	reqs, err := store.RequestsOfRun(ctx, tx, run.ID)
	if err != nil {
		return err
	}
	seen := map[int64]bool{run.ID: true}
	for i := range reqs {
		if _, err := e.cancelRequest(ctx, tx, fx, &reqs[i], by, seen); err != nil {
			return err
		}
	}
	return nil
}

// cancelRequest withdraws one request or stops the run answering it, and recursively what that
// run sent on. seen guards against visiting a run twice.
func (e *Engine) cancelRequest(ctx context.Context, tx *store.Tx, fx *effects, r *store.ConversationRequest, by Member, seen map[int64]bool) (bool, error) {
	now := e.nowMS()
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
	run, err := store.LockRun(ctx, tx, turn.RunID)
	if err != nil {
		return false, err
	}
	if seen[run.ID] {
		return false, nil
	}
	seen[run.ID] = true
	did := false
	if run.Status != RunCompleted && run.Status != RunCanceled && run.Status != RunCanceling {
		if turn.Status == TurnQueued {
			r.Status = RequestWithdrawn
			if err := store.SetRequest(ctx, tx, r); err != nil {
				return false, err
			}
		}
		if err := e.stopRunTx(ctx, tx, fx, run, by, true, now); err != nil {
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
		d, err := e.cancelRequest(ctx, tx, fx, &onward[i], by, seen)
		if err != nil {
			return false, err
		}
		did = did || d
	}
	return did, nil
}

// replyOf reads the reply a request's addressee gave
// (docs/agent-tools.md#delegation-and-conversations): settled once its turn ended (completed,
// failed or canceled) or the request was withdrawn before it started; the envelope is keyed by the
// call and names the child conversation.
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
		tr.Status, tr.Error = StatusCanceled, &envelope.Failure{Key: KeyTaskCanceled}
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
	case TurnCompleted:
		tr.Status, tr.Output = StatusCompleted, deref(turn.AnswerText)
	case TurnFailed:
		tr.Status = StatusFailed
		tr.Error = &envelope.Failure{Key: deref(turn.FailureKey), Detail: deref(turn.FailureDetail)}
	case TurnCanceled:
		tr.Status, tr.Error = StatusCanceled, &envelope.Failure{Key: KeyTaskCanceled}
	default:
		return nil, false, nil
	}
	return tr, true, nil
}

// observeRequests settles the delegation rows of a run whose reply has arrived, in the caller's
// transaction under the run's lock: the row completes with the reply's envelope and is then
// delivered as a detached result (docs/agent-tools.md#delegation-and-conversations), unless the
// call's waited await took the reply first, in which case it is recorded as delivered with the
// await and never mailed (the reply comes back once). It reports whether it settled any.
func (e *Engine) observeRequests(ctx context.Context, tx *store.Tx, run *store.Run, tasks []store.TaskTrace, byKey map[string]*store.TaskTrace, now int64) (bool, error) {
	settled := false
	for i := range tasks {
		t := &tasks[i]
		if t.Kind != KindDelegation || t.Status != StatusDispatched || t.ParentKey == nil {
			continue
		}
		tr, done, err := replyOf(ctx, tx, run.ID, *t.ParentKey)
		if err != nil {
			return false, err
		}
		if !done {
			continue
		}
		out := tr.Render()
		isErr := tr.Status != StatusCompleted
		settle := store.Settle{ID: t.ID, Status: StatusCompleted, Result: store.Result{IsError: &isErr, Output: out, Content: textContent(out)},
			ResolvedBy: &Member{Kind: OriginKernel}, At: now, From: StatusDispatched}
		if a := byKey[ChildKey(*t.ParentKey, RoleSpawn, 1)]; a != nil && a.Status == StatusCompleted {
			settle.DeliveredWith = a.Key
		}
		if _, err := settle.Exec(ctx, tx, t); err != nil {
			return false, err
		}
		settled = true
	}
	return settled, nil
}

// SpawnStructured is a spawn's structured_content
// (docs/agent-tools.md#delegation-and-conversations).
type SpawnStructured struct {
	ConversationPublicID string  `json:"conversation_public_id"`
	Label                *string `json:"label"`
	AnsweredBy           string  `json:"answered_by"`
	RunPublicID          string  `json:"run_public_id"`
	Task                 string  `json:"task"`
	Wait                 bool    `json:"wait"`
}

// observeSpawn reads a waited spawn's await: the child's reply settles it (resolved by the
// kernel) and the call completes with the reply's envelope, an error flag when the reply did not
// complete; an await that expired or was canceled first ends only the waiting, and the call
// completes with the two-line text and the receipt's structured_content.
func (e *Engine) observeSpawn(ctx context.Context, q store.Querier, call, child *store.TaskTrace) (*settlement, error) {
	full, err := store.TaskByID(ctx, q, child.ID)
	if err != nil {
		return nil, err
	}
	if Terminal(full.Status) {
		if full.Status == StatusCompleted {
			return &settlement{status: StatusCompleted, isError: full.IsError, output: deref(full.Output), content: full.Content}, nil
		}
		return e.spawnStillWorking(ctx, q, call)
	}
	tr, done, err := replyOf(ctx, q, call.RunID, call.Key)
	if err != nil || !done {
		return nil, err
	}
	out := tr.Render()
	isErr := tr.Status != StatusCompleted
	if err := e.resolveWait(ctx, q, full, out, isErr); err != nil {
		return nil, err
	}
	child.Status = StatusCompleted
	return &settlement{status: StatusCompleted, isError: &isErr, output: out, content: textContent(out)}, nil
}

func (e *Engine) spawnStillWorking(ctx context.Context, q store.Querier, call *store.TaskTrace) (*settlement, error) {
	r, err := store.RequestByCall(ctx, q, call.RunID, call.Key)
	if err != nil {
		return nil, err
	}
	conv, err := store.ConversationByID(ctx, q, r.ConversationID)
	if err != nil {
		return nil, err
	}
	agent, err := store.AgentInWorkspace(ctx, q, conv.WorkspaceID, conv.AnsweringAgentPublicID)
	if err != nil {
		return nil, err
	}
	run, err := store.RunByID(ctx, q, call.RunID)
	if err != nil {
		return nil, err
	}
	label := deref(conv.Label)
	out := e.texts.SpawnStillWorking(conv.PublicID, label, "@"+agent.Handle)
	sc := jsonText(SpawnStructured{ConversationPublicID: conv.PublicID, Label: conv.Label, AnsweredBy: "@" + agent.Handle,
		RunPublicID: run.PublicID, Task: call.Key, Wait: true})
	return &settlement{status: StatusCompleted, isError: new(false), output: out, content: textContent(out), structuredContent: sc}, nil
}

// noteReply records, when a turn ends, the sending run whose reply row observes it: the
// follow-up after the commit advances that run without this transaction taking its lock
// (docs/development.md#how-the-kernel-runs-work).
func (e *Engine) noteReply(ctx context.Context, q store.Querier, fx *effects, turn *store.Turn) error {
	r, err := store.RequestOfTurn(ctx, q, turn.ID)
	if errors.Is(err, store.ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	if r.ReplyOwed || r.Kind == RequestSpawn {
		fx.observe = append(fx.observe, r.RunID)
	}
	return nil
}

// replySender is the child conversation a delivered reply came from, "" for a branch result.
func replySender(ctx context.Context, q store.Querier, b pendingBranch) string {
	if b.root.Kind != KindDelegation || b.root.ParentKey == nil {
		return ""
	}
	r, err := store.RequestByCall(ctx, q, b.root.RunID, *b.root.ParentKey)
	if err != nil {
		return ""
	}
	c, err := store.ConversationByID(ctx, q, r.ConversationID)
	if err != nil {
		return ""
	}
	return c.PublicID
}

// advanceObservers advances, each in its own transaction, the runs whose reply rows may have
// settled in the transaction that just committed.
func (e *Engine) advanceObservers(ctx context.Context, runIDs []int64) {
	done := map[int64]bool{}
	for _, id := range runIDs {
		if done[id] {
			continue
		}
		done[id] = true
		err := e.write(ctx, func(tx *store.Tx, fx *effects) error {
			run, err := store.LockRun(ctx, tx, id)
			if err != nil {
				return err
			}
			return e.advance(ctx, tx, fx, run)
		})
		if err != nil && ctx.Err() == nil {
			// The sweeper's poll settles the observer later (docs/development.md#how-the-kernel-runs-work).
			e.log.Error("advance reply observer", "run_id", id, "error", err)
		}
	}
}

// observeReplies is the poll behind advanceObservers: it settles the spawn awaits and delegation
// rows whose reply has arrived meanwhile, taking a run's lock only for one whose reply is final.
// It reports how many runs it advanced.
func (e *Engine) observeReplies(ctx context.Context) (int, error) {
	q := e.store.Reader()
	n := 0
	var after int64
	for {
		ts, err := store.OpenRequestObservers(ctx, q, after, SweepBatch)
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
			e.advanceObservers(ctx, []int64{t.RunID})
			n++
		}
		if len(ts) < SweepBatch {
			return n, nil
		}
	}
}

// releaseScheduled queues the scheduled inputs whose time has come
// (docs/development.md#how-the-kernel-runs-work, docs/agent-tools.md#delegation-and-conversations
// docs/agent-tools.md#the-approval-gate): each takes its queue position now, as a turn authored by
// its sender, in its own transaction under the addressee's lock. An addressee archived meanwhile
// withdraws the input, and its owed reply reads canceled. It reports how many it released.
func (e *Engine) releaseScheduled(ctx context.Context) (int, error) {
	due, err := store.DueRequests(ctx, e.store.Reader(), e.nowMS(), SweepBatch)
	if err != nil {
		return 0, err
	}
	n := 0
	for i := range due {
		id := due[i].ID
		var observer int64
		err := e.write(ctx, func(tx *store.Tx, fx *effects) error {
			observer = 0
			c, err := store.LockConversation(ctx, tx, due[i].ConversationID)
			if err != nil {
				return err
			}
			r, err := store.RequestByCall(ctx, tx, due[i].RunID, due[i].CallKey)
			if err != nil || r.ID != id || r.Status != RequestPending {
				return err
			}
			now := e.nowMS()
			if r.ReplyOwed {
				observer = r.RunID
			}
			if c.Status != ConversationActive {
				r.Status = RequestWithdrawn
				return store.SetRequest(ctx, tx, r)
			}
			if err := e.postRequest(ctx, tx, fx, c, r, now); err != nil {
				return err
			}
			n++
			return store.SetRequest(ctx, tx, r)
		})
		if err != nil {
			return n, err
		}
		if observer != 0 {
			e.advanceObservers(ctx, []int64{observer})
		}
	}
	return n, nil
}

// postRequest posts a held request (a scheduled input whose time came, or a steer whose reply
// ended before any seal carried it) as a turn of its sender into a conversation the caller has
// locked, taking its queue position now; the queue bound does not apply to an input already
// accepted.
func (e *Engine) postRequest(ctx context.Context, tx *store.Tx, fx *effects, c *store.Conversation, r *store.ConversationRequest, now int64) error {
	agent, err := store.AgentByID(ctx, tx, r.AnsweringAgentID)
	if err != nil {
		return err
	}
	prof, err := e.acceptProfileFor(ctx, tx, c, agent.ID, agent.PublicID, nil)
	if err != nil {
		return err
	}
	sender, err := store.ConversationByID(ctx, tx, r.SenderConversationID)
	if err != nil {
		return err
	}
	turn, err := e.postTurn(ctx, tx, fx, c, &TurnPost{PublicID: r.PublicID, AuthorKind: store.KindAgent, AuthorPublicID: r.AuthorPublicID,
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
func (e *Engine) requeueSteers(ctx context.Context, tx *store.Tx, fx *effects, run *store.Run, now int64) error {
	steers, err := store.PendingSteers(ctx, tx, run.ID)
	if err != nil || len(steers) == 0 || run.ConversationID == nil {
		return err
	}
	c, err := store.LockConversation(ctx, tx, *run.ConversationID)
	if err != nil {
		return err
	}
	for i := range steers {
		if c.Status != ConversationActive {
			steers[i].Status = RequestWithdrawn
			if err := store.SetRequest(ctx, tx, &steers[i]); err != nil {
				return err
			}
			continue
		}
		if err := e.postRequest(ctx, tx, fx, c, &steers[i], now); err != nil {
			return err
		}
	}
	return nil
}
