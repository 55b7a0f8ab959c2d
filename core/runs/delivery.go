package runs

import (
	"context"
	"fmt"
	"sort"

	"github.com/nexuskernel/nexus/core/model"
	"github.com/nexuskernel/nexus/core/store"
)

// Branch result delivery (docs/agent-tools.md#delegation-and-conversations). A detached branch's
// answer is an unpaired result: it reaches the mainline as a <task_result> user message rather than
// as a paired tool result. A result that settles while the mainline still works is read by the next
// mainline round sealed after it. One that settles after the mainline's final round follows the
// branch's lifetime and wake: turn lifetime keeps the run open and, with auto wake, plants a wake
// round; a conversation-lifetime branch on a conversation-hosted run lets the turn complete first
// and is then posted as a kernel-authored turn (auto) or held for the conversation's next turn
// (passive, or an archived conversation).

// deliveredToTurn marks a branch result a kernel-authored turn carries: delivered_with is an
// internal column, and a key never contains ':'.
const deliveredToTurn = "turn:"

// pendingBranch is a detached branch whose final round has settled and whose result nothing has
// carried yet.
type pendingBranch struct {
	callKey string
	root    *store.TaskTrace
	final   *store.TaskTrace
}

// pendingBranches lists a run's settled, undelivered detached branches in settlement order.
func pendingBranches(tasks []store.TaskTrace) []pendingBranch {
	var out []pendingBranch
	for i := range tasks {
		root := &tasks[i]
		if root.Kind == KindDelegation && root.Detached && root.ParentKey != nil {
			// A spawn's or send's reply (docs/agent-tools.md#delegation-and-conversations): the row is its
			// own final work.
			if Terminal(root.Status) && root.DeliveredWith == nil && root.ResultDeliveredAt == nil {
				out = append(out, pendingBranch{callKey: *root.ParentKey, root: root, final: root})
			}
			continue
		}
		if !root.Detached || !isBranchRound(root) || root.Key != root.LineageRoot {
			continue
		}
		final, done := lineageFinal(tasks, root.Key)
		if !done || final.DeliveredWith != nil || final.ResultDeliveredAt != nil {
			continue
		}
		out = append(out, pendingBranch{callKey: branchCallKey(root.Key), root: root, final: final})
	}
	sort.SliceStable(out, func(i, j int) bool { return deref(out[i].final.SettleSeq) < deref(out[j].final.SettleSeq) })
	return out
}

// branchEnvelope renders a branch's result for its reader, keyed by the delegate_task call.
func branchEnvelope(ctx context.Context, q store.Querier, b pendingBranch) (string, error) {
	if b.root.Kind == KindDelegation {
		full, err := store.TaskByID(ctx, q, b.root.ID)
		if err != nil {
			return "", err
		}
		return deref(full.Output), nil
	}
	root, err := store.TaskByID(ctx, q, b.root.ID)
	if err != nil {
		return "", err
	}
	final, err := store.TaskByID(ctx, q, b.final.ID)
	if err != nil {
		return "", err
	}
	return lineageResult(b.callKey, root, final).Render(), nil
}

// unpairedEntries are the <task_result> messages a mainline round carries for the branch results
// that settled before its seal and were never delivered
// (docs/development.md#how-the-kernel-runs-work), in settlement order, with the ids of the rows
// they deliver.
func (e *Engine) unpairedEntries(ctx context.Context, q store.Querier, run *store.Run) ([]model.Entry, []int64, error) {
	tasks, err := store.TraceTasks(ctx, q, run.ID)
	if err != nil {
		return nil, nil, err
	}
	var entries []model.Entry
	var ids []int64
	for _, b := range pendingBranches(tasks) {
		text, err := branchEnvelope(ctx, q, b)
		if err != nil {
			return nil, nil, err
		}
		entries = append(entries, userText(text))
		ids = append(ids, b.final.ID)
	}
	return entries, ids, nil
}

// heldEntries are the held passive deliveries a conversation turn's first round carries before its
// opening entry (docs/development.md#how-the-kernel-runs-work), with the ids of the rows they
// deliver.
func (e *Engine) heldEntries(ctx context.Context, q store.Querier, run *store.Run) ([]model.Entry, []int64, error) {
	held, err := store.HeldDeliveries(ctx, q, *run.ConversationID, run.ID)
	if err != nil {
		return nil, nil, err
	}
	var entries []model.Entry
	var ids []int64
	for i := range held {
		final := &held[i]
		if final.Kind == KindDelegation {
			entries = append(entries, userText(deref(final.Output)))
			ids = append(ids, final.ID)
			continue
		}
		root, err := store.TaskByKey(ctx, q, final.RunID, final.LineageRoot)
		if err != nil {
			return nil, nil, err
		}
		entries = append(entries, userText(lineageResult(branchCallKey(root.Key), root, final).Render()))
		ids = append(ids, final.ID)
	}
	return entries, ids, nil
}

func userText(text string) model.Entry {
	return model.Entry{Role: model.RoleUser, Content: []model.Part{{Type: model.PartText, Text: text}}}
}

// mainlineDone reports whether a run's mainline has given its final answer: the deliverable is
// a mainline model round that completed (a round that continued handed the deliverable on).
func mainlineDone(run *store.Run, byKey map[string]*store.TaskTrace) (*store.TaskTrace, bool) {
	d := byKey[run.DeliverableTaskKey]
	if d == nil || d.Kind != KindModel || !d.Mainline || d.Status != StatusCompleted {
		return nil, false
	}
	return d, true
}

// conversationLifetime reports whether a row's conversation lifetime holds: on a standalone
// run conversation behaves as turn (docs/agent-tools.md#delegation-and-conversations).
func conversationLifetime(run *store.Run, t *store.TaskTrace) bool {
	return run.ConversationID != nil && t.Lifetime == LifetimeConversation
}

// deliverLate handles branch results once the mainline's final round has completed, in the
// transaction that settled the last of them (or the final round): a conversation-hosted turn
// whose only open work is conversation-lifetime detached work completes now; late
// conversation-lifetime results are posted as kernel turns or held; late turn-lifetime results
// with auto wake get one wake round that reads them all and becomes the deliverable. It reports
// whether it wrote a row readiness must see.
func (e *Engine) deliverLate(ctx context.Context, tx *store.Tx, fx *effects, run *store.Run, tasks []store.TaskTrace, byKey map[string]*store.TaskTrace, now int64) (bool, error) {
	if run.Status != RunRunning {
		return false, nil
	}
	d, done := mainlineDone(run, byKey)
	if !done {
		return false, nil
	}
	if err := e.completeTurnEarly(ctx, tx, fx, run, tasks, d, now); err != nil {
		return false, err
	}
	var wake []string
	for _, b := range pendingBranches(tasks) {
		if conversationLifetime(run, b.root) {
			if err := e.deliverToConversation(ctx, tx, fx, run, b, now); err != nil {
				return false, err
			}
			continue
		}
		if b.root.Wake == WakeAuto {
			wake = append(wake, b.final.Key)
		}
	}
	if len(wake) == 0 {
		return false, nil
	}
	return true, e.plantWakeRound(ctx, tx, run, d, wake, now)
}

// plantWakeRound creates a wake round (docs/agent-tools.md#delegation-and-conversations): a
// mainline continuation r<n> of the final round, after the branches it delivers, which reads them
// as unpaired results and becomes the deliverable. It copies the final round's frozen context like
// any continuation.
func (e *Engine) plantWakeRound(ctx context.Context, tx *store.Tx, run *store.Run, last *store.TaskTrace, after []string, now int64) error {
	d, err := store.TaskByID(ctx, tx, last.ID)
	if err != nil {
		return err
	}
	n := run.MainlineRoundCounter + 1
	key := fmt.Sprintf("r%d", n)
	if err := (store.PlantRound{ID: run.ID, Counter: n, Deliverable: key}).Exec(ctx, tx); err != nil {
		return err
	}
	run.MainlineRoundCounter, run.DeliverableTaskKey = n, key
	wake := &store.Task{TaskTrace: store.TaskTrace{
		RunID: run.ID, Key: key, Kind: KindModel, Status: StatusWaiting, Mainline: true, Origin: OriginKernel,
		AfterKeys: after, OnFailure: d.OnFailure, Lifetime: d.Lifetime, Wake: d.Wake,
		Visibility: d.Visibility, LineageRoot: d.LineageRoot, RoundNumber: d.RoundNumber + 1, Model: d.Model,
		CreatedAt: now,
	},
		Instructions: d.Instructions, ToolDefinitions: d.ToolDefinitions, SkillCatalog: d.SkillCatalog,
		Environment: d.Environment,
	}
	return store.InsertTask(ctx, tx, wake)
}

// completeTurnEarly completes a conversation-hosted run's turn when its mainline has answered and
// everything still open is conversation-lifetime detached work (docs/api.md#conversations): the
// turn takes the answer, and the conversation moves on to its next queued turn while the run stays
// running for the branches.
func (e *Engine) completeTurnEarly(ctx context.Context, tx *store.Tx, fx *effects, run *store.Run, tasks []store.TaskTrace, d *store.TaskTrace, now int64) error {
	if run.ConversationID == nil {
		return nil
	}
	open := false
	for i := range tasks {
		t := &tasks[i]
		if Terminal(t.Status) {
			continue
		}
		if !t.Detached || t.Lifetime != LifetimeConversation {
			return nil
		}
		open = true
	}
	if !open {
		return nil // the run completes now, and its turn follows it
	}
	return e.conv.AnswerTurn(ctx, &Tx{e: e, Tx: tx, fx: fx}, run, d, now)
}

// deliverToConversation delivers a conversation-lifetime branch result that settled after its
// turn's reply was final: with auto wake, as a kernel-authored turn whose input is the
// envelope, queued like any message but never refused; with passive wake, or into an archived
// conversation, it stays held and the conversation's next turn reads it before its input.
func (e *Engine) deliverToConversation(ctx context.Context, tx *store.Tx, fx *effects, run *store.Run, b pendingBranch, now int64) error {
	if b.root.Wake != WakeAuto {
		return nil
	}
	c, err := store.LockConversation(ctx, tx, *run.ConversationID)
	if err != nil {
		return err
	}
	if c.Status != ConversationActive {
		return nil
	}
	text, err := branchEnvelope(ctx, tx, b)
	if err != nil {
		return err
	}
	turn, err := e.conv.PostDelivery(ctx, &Tx{e: e, Tx: tx, fx: fx}, c, text, b.root, now)
	if err != nil {
		return err
	}
	err = (store.Deliver{ID: b.final.ID, With: deliveredToTurn + turn.PublicID, At: now}).Exec(ctx, tx)
	b.final.DeliveredWith = new(deliveredToTurn + turn.PublicID)
	return err
}
