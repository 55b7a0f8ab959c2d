package runs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/nexuskernel/nexus/core/envelope"
	"github.com/nexuskernel/nexus/core/store"
	"github.com/nexuskernel/nexus/sdk/announce"
	"github.com/nexuskernel/nexus/sdk/jsonwire"
)

// Await kinds (docs/api.md#runs) and the roles of the awaits in their keys
// (docs/development.md#how-the-kernel-runs-work).
const (
	AwaitAsk   = "ask"
	AwaitWait  = "wait"
	AwaitSpawn = "spawn"

	RoleAsk  = "ask"
	RoleWait = "wait"
)

// Wire names of the observing kernel tools as their rows record them.
const (
	wireWait  = "wait"
	wireAsk   = "ask"
	wireSpawn = "spawn"
)

// WaitSpec is a wait await's target and clock, as the task read serves it
// (docs/api.md#tasks-and-decisions).
type WaitSpec = store.WaitSpec

// parseWaitSpec is a wait await's spec; false when the row has none, or none naming a task.
func parseWaitSpec(s *WaitSpec) (WaitSpec, bool) {
	if s == nil || s.Task == "" {
		return WaitSpec{}, false
	}
	return *s, true
}

// waitInputTask reads the task argument of a wait call's stored input.
func waitInputTask(input *string) (string, error) {
	var in struct {
		Task string `json:"task"`
	}
	if input != nil {
		if err := json.Unmarshal([]byte(*input), &in); err != nil {
			return "", fmt.Errorf("runs: a wait call's stored input: %w", err)
		}
	}
	return in.Task, nil
}

// AddressedMember is an ask's addressee as stored and served: {role: "member", member}.
type AddressedMember = store.AddressedMember

// inheritPlacement completes an await a call places: it belongs to the call's work (its
// lifetime, wake and detachment, so that a detached branch's question is the branch's), and its
// park starts as it is placed, ready and dispatched now, its deadline its clock from now
// (docs/development.md#how-the-kernel-runs-work). A branch keeps what its call's arguments gave it.
func inheritPlacement(t *store.Task, call *store.TaskTrace, now int64) {
	if t.Kind != KindAwait {
		return
	}
	t.Lifetime, t.Wake, t.Detached = call.Lifetime, call.Wake, call.Detached
	if t.TimeoutMS == nil || t.DeadlineAt != nil {
		return
	}
	t.ReadyAt, t.DispatchedAt = &now, &now
	t.DeadlineAt = new(now + *t.TimeoutMS)
}

// WaitCycle reports whether waiting on target from the call callKey could never end
// (docs/agent-tools.md#delegation-and-conversations, wait_cycle): the target is the call, or an
// ancestor of it (the call that placed it, the round that made it, a
// round of that round's lineage, whose final work waits on this call, and so up through the
// delegate_task or tool_call call whose work contains it).
func WaitCycle(tasks []store.TaskTrace, callKey string, target *store.TaskTrace) bool {
	byKey := make(map[string]*store.TaskTrace, len(tasks))
	for i := range tasks {
		byKey[tasks[i].Key] = &tasks[i]
	}
	ancestors, lineages := map[string]bool{}, map[string]bool{}
	queue := []string{callKey}
	for len(queue) > 0 {
		k := queue[0]
		queue = queue[1:]
		t := byKey[k]
		if t == nil || ancestors[k] {
			continue
		}
		ancestors[k] = true
		if t.ParentKey != nil {
			queue = append(queue, *t.ParentKey)
		}
		if t.DeclaringTaskKey != nil {
			queue = append(queue, *t.DeclaringTaskKey)
		}
		if t.Kind == KindModel && !lineages[t.LineageRoot] {
			lineages[t.LineageRoot] = true
			queue = append(queue, t.LineageRoot)
		}
	}
	if ancestors[target.Key] {
		return true
	}
	return target.Kind == KindModel && lineages[target.LineageRoot]
}

// targetState is a wait target's final work: whether it has settled, and its envelope.
type targetState struct {
	settled bool
	result  envelope.TaskResult
}

// finalState reads the logical final work of a task
// (docs/agent-tools.md#delegation-and-conversations): a model round's lineage ends with its final
// round; a delegate_task call that placed a branch ends with the branch; an await is read through
// the call that placed it; every other row is its own final work (a tool_call call mirrors its
// child, an ask call carries the answer). readerKey is the key the envelope names, the one the
// reader asked for.
func (e *Engine) finalState(ctx context.Context, q store.Querier, runID int64, t *store.Task, readerKey string) (*targetState, error) {
	if (t.Kind == KindAwait || t.Kind == KindDelegation) && t.ParentKey != nil {
		parent, err := store.TaskByKey(ctx, q, runID, *t.ParentKey)
		if err != nil {
			return nil, err
		}
		t = parent
	}
	if t.Kind == KindTool && deref(t.ToolName) == announce.WireDelegateTask {
		branch, err := store.TaskByKey(ctx, q, runID, BranchKey(t.Key))
		switch {
		case err == nil:
			t = branch
		case !errors.Is(err, store.ErrNotFound):
			return nil, err
		}
	}
	if t.Kind == KindTool && deref(t.ToolName) == wireSpawn && !(Terminal(t.Status) && (t.Status != StatusCompleted || deref(t.IsError))) {
		// A spawn that opened its child follows the child's reply to the brief, even if the
		// child later does other work (docs/agent-tools.md#delegation-and-conversations).
		if _, err := store.RequestByCall(ctx, q, runID, t.Key); err == nil {
			tr, done, err := e.conv.Reply(ctx, q, runID, t.Key)
			if err != nil || !done {
				return &targetState{}, err
			}
			tr.Key = readerKey
			return &targetState{settled: true, result: *tr}, nil
		} else if !errors.Is(err, store.ErrNotFound) {
			return nil, err
		}
	}
	if t.Kind == KindModel {
		root, err := store.TaskByKey(ctx, q, runID, t.LineageRoot)
		if err != nil {
			return nil, err
		}
		final, err := store.LastLineageRound(ctx, q, runID, t.LineageRoot)
		if err != nil {
			return nil, err
		}
		st := &targetState{settled: Terminal(final.Status)}
		st.result = lineageResult(readerKey, root, final)
		return st, nil
	}
	st := &targetState{settled: Terminal(t.Status)}
	st.result = toolResult(readerKey, t)
	return st, nil
}

// lineageResult is a model source's envelope: the final round's status and body under the
// opening round's prompt (docs/agent-tools.md#what-a-model-reads).
func lineageResult(key string, root, final *store.Task) envelope.TaskResult {
	return envelope.TaskResult{Key: key, ModelSource: true, ModelPrompt: deref(root.Prompt), Status: final.Status,
		IsError: deref(final.IsError), Output: deref(final.Output), Error: failureOf(final.ErrorKey, final.ErrorDetail)}
}

// toolResult is a tool source's envelope: the call as the model made it, and its own result.
func toolResult(key string, t *store.Task) envelope.TaskResult {
	tr := envelope.TaskResult{Key: key, ToolName: deref(t.ToolName), Status: t.Status, IsError: deref(t.IsError), Output: deref(t.Output),
		Error: failureOf(t.ErrorKey, t.ErrorDetail)}
	if t.ToolAlias != nil {
		tr.ToolName = *t.ToolAlias
	}
	if t.ToolInput != nil {
		if c, err := jsonwire.CanonicalValue([]byte(*t.ToolInput)); err == nil {
			tr.ToolInput = c
		}
	}
	return tr
}

// textContent is the stored content of a plain-string result: one text block, or none when
// blank (docs/api.md#the-result-envelope).
func textContent(s string) *string {
	if strings.TrimSpace(s) == "" {
		return nil
	}
	return jsonText([]map[string]string{{"type": "text", "text": s}})
}

// observeBranch reads a waited delegate_task's branch: once its lineage's final round has
// settled, the call completes with the branch's envelope framed with the call's key, an error
// flag when the branch did not complete, and the [model: …] line when the call named a model
// (docs/agent-tools.md#delegation-and-conversations).
func (e *Engine) observeBranch(ctx context.Context, q store.Querier, call, child *store.TaskTrace) (*settlement, error) {
	final, err := store.LastLineageRound(ctx, q, call.RunID, child.LineageRoot)
	if err != nil {
		return nil, err
	}
	if !Terminal(final.Status) {
		return nil, nil
	}
	root, err := store.TaskByID(ctx, q, child.ID)
	if err != nil {
		return nil, err
	}
	full, err := store.TaskByID(ctx, q, call.ID)
	if err != nil {
		return nil, err
	}
	tr := lineageResult(call.Key, root, final)
	var input []byte
	if full.ToolInput != nil {
		input = []byte(*full.ToolInput)
	}
	started := final.SealedRequestID != nil && final.StartedAt != nil
	if tr.ModelLine, err = e.texts.DelegateModelLine(input, deref(final.Model), started); err != nil {
		return nil, err
	}
	out := tr.Render()
	return &settlement{status: StatusCompleted, isError: new(final.Status != StatusCompleted), output: out, content: textContent(out)}, nil
}

// observeAwait reads an await a call placed. An ask's call completes with the <answer>
// envelope, or carries the await's failure (await_timeout, await_failed, a cancellation). A
// wait's await resolves when its target's final work settles, which in the calling run happens
// in this very transaction, and the call completes with the target's envelope; its expiry or
// cancellation ends only the observation.
func (e *Engine) observeAwait(ctx context.Context, q store.Querier, call, child *store.TaskTrace) (*settlement, error) {
	switch deref(child.AwaitKind) {
	case AwaitAsk:
		if !Terminal(child.Status) {
			return nil, nil
		}
		full, err := store.TaskByID(ctx, q, child.ID)
		if err != nil {
			return nil, err
		}
		if full.Status == StatusCompleted {
			out := envelope.Answer(full.Key, deref(full.Output))
			return &settlement{status: StatusCompleted, isError: new(false), output: out, content: textContent(out)}, nil
		}
		return carried(full, ""), nil
	case AwaitWait:
		full, err := store.TaskByID(ctx, q, child.ID)
		if err != nil {
			return nil, err
		}
		if Terminal(full.Status) {
			if full.Status == StatusCompleted {
				return &settlement{status: StatusCompleted, isError: full.IsError, output: deref(full.Output), content: full.Content}, nil
			}
			return carried(full, ""), nil
		}
		spec, ok := parseWaitSpec(full.WaitSpec)
		if !ok {
			return nil, fmt.Errorf("runs: wait await %s has no target", full.Key)
		}
		st, err := e.waitTargetState(ctx, q, call.RunID, spec)
		if err != nil {
			return nil, err
		}
		if st == nil {
			return e.targetGone(ctx, q, full, child, spec.Task)
		}
		if !st.settled {
			return nil, nil
		}
		out := st.result.Render()
		isErr := st.result.Status != StatusCompleted
		if err := e.resolveWait(ctx, q, full, out, isErr); err != nil {
			return nil, err
		}
		child.Status = StatusCompleted
		return &settlement{status: StatusCompleted, isError: &isErr, output: out, content: textContent(out)}, nil
	case AwaitSpawn:
		return e.observeSpawn(ctx, q, call, child)
	}
	return nil, fmt.Errorf("runs: %s awaits %s, a %s await, which no observation reads in this version", call.Key, child.Key, deref(child.AwaitKind))
}

// targetGone settles a wait whose target was collected while observed: the await and the call
// complete with the error result the kernel words (ToolTexts.WaitTargetGone). No path
// collects tasks in this version; the rule is kept for the one that will.
func (e *Engine) targetGone(ctx context.Context, q store.Querier, await *store.Task, child *store.TaskTrace, task string) (*settlement, error) {
	r := e.texts.WaitTargetGone(task)
	out := r.Content
	if err := e.resolveWait(ctx, q, await, out, true); err != nil {
		return nil, err
	}
	child.Status = StatusCompleted
	return &settlement{status: StatusCompleted, isError: new(true), output: out, content: textContent(out),
		structuredContent: stored(r.StructuredContent), title: &r.Title}, nil
}

// carried is the settlement of a call whose await failed: its status and error, unchanged.
func carried(await *store.Task, output string) *settlement {
	s := &settlement{status: await.Status, output: output}
	if await.ErrorKey != nil {
		s.err = &TaskError{Key: *await.ErrorKey, Detail: deref(await.ErrorDetail)}
	}
	return s
}

// waitTargetState reads a wait's target wherever it lives; nil when the target is gone (no
// path collects tasks in this version, so this is defensive).
func (e *Engine) waitTargetState(ctx context.Context, q store.Querier, runID int64, spec WaitSpec) (*targetState, error) {
	self, err := store.RunByID(ctx, q, runID)
	if err != nil {
		return nil, err
	}
	targetRun := self
	if spec.RunPublicID != "" && spec.RunPublicID != self.PublicID {
		if targetRun, err = store.RunByPublicID(ctx, q, self.WorkspaceID, spec.RunPublicID); err != nil {
			if errors.Is(err, store.ErrNotFound) {
				return nil, nil
			}
			return nil, err
		}
	}
	t, err := store.TaskByKey(ctx, q, targetRun.ID, spec.Task)
	if errors.Is(err, store.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return e.finalState(ctx, q, targetRun.ID, t, spec.Task)
}

// resolveWait settles a wait await completed with the target's envelope: it is kernel-held,
// so the kernel is who resolved it.
func (e *Engine) resolveWait(ctx context.Context, q store.Querier, await *store.Task, out string, isErr bool) error {
	settle := store.Settle{ID: await.ID, Status: StatusCompleted, Result: store.Result{IsError: &isErr, Output: out, Content: textContent(out)},
		ResolvedBy: &Member{Kind: OriginKernel}, At: e.nowMS(), From: StatusDispatched}
	_, err := settle.Exec(ctx, q, nil)
	return err
}

// observeWaits settles the waits whose target has settled meanwhile in another run: such a settle
// never takes the observer's lock, so the observer settles in its own transaction afterwards
// (docs/development.md#how-the-kernel-runs-work). It reads every open wait, a page at a time, and
// takes a run's lock only for one whose target is final. It reports how many it settled.
func (e *Engine) observeWaits(ctx context.Context) (int, error) {
	q := e.store.Reader()
	n := 0
	var after int64
	for {
		ws, err := store.OpenWaits(ctx, q, after, SweepBatch)
		if err != nil {
			return n, err
		}
		for i := range ws {
			w := &ws[i]
			after = w.ID
			spec, ok := parseWaitSpec(w.WaitSpec)
			if !ok {
				continue
			}
			st, err := e.waitTargetState(ctx, q, w.RunID, spec)
			if err != nil {
				return n, err
			}
			if st != nil && !st.settled {
				continue
			}
			err = e.write(ctx, func(tx *store.Tx, fx *effects) error {
				run, err := store.LockRun(ctx, tx, w.RunID)
				if err != nil {
					return err
				}
				return e.advance(ctx, tx, fx, run)
			})
			if err != nil {
				return n, err
			}
			n++
		}
		if len(ws) < SweepBatch {
			return n, nil
		}
	}
}

// mayHaveSettled answers from the run's trace alone whether an awaited row's work may have
// settled, so that each readiness pass reads rows only for the calls that may settle now: a
// branch whose newest round still works, or an ask still awaiting its answer, cannot.
func mayHaveSettled(tasks []store.TaskTrace, child *store.TaskTrace) bool {
	switch {
	case child.Kind == KindModel:
		_, done := lineageFinal(tasks, child.LineageRoot)
		return done
	case child.Kind == KindAwait && deref(child.AwaitKind) == AwaitAsk:
		return Terminal(child.Status)
	}
	return true
}
