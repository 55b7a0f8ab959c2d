package runs

import (
	"context"
	"fmt"
	"strings"

	"github.com/nexuskernel/nexus/core/store"
	"github.com/nexuskernel/nexus/sdk/announce"
)

// RoleModel is the role of a delegate_task branch's first round in its key (C-model-1).
const RoleModel = "model"

// branchRootSuffix ends a branch's first round key: C-model-1.
const branchRootSuffix = "-" + RoleModel + "-1"

// BranchKey is the key of the branch a delegate_task call places: C-model-1.
func BranchKey(callKey string) string { return ChildKey(callKey, RoleModel, 1) }

// branchCallKey is the delegate_task call that placed a branch lineage, read from the
// lineage's root key (C-model-1 → C); "" when the root is not a branch's.
func branchCallKey(lineageRoot string) string {
	c, ok := strings.CutSuffix(lineageRoot, branchRootSuffix)
	if !ok {
		return ""
	}
	return c
}

// isBranchRound reports whether a row is a round of a delegate_task branch.
func isBranchRound(t *store.TaskTrace) bool {
	return t.Kind == KindModel && !t.Mainline && branchCallKey(t.LineageRoot) != ""
}

// roundKeys are the keys a round's expansion writes: its calls' prefix and its continuation. The
// mainline takes the run's counter (docs/development.md#how-the-kernel-runs-work); a branch keeps
// its own, which is its lineage's round number, namespaced under the call that placed it (C-r<n>,
// C-r<n>t<i>).
func roundKeys(run *store.Run, t *store.TaskTrace) (n int64, callPrefix, cont string) {
	if c := branchCallKey(t.LineageRoot); !t.Mainline && c != "" {
		n = t.RoundNumber + 1
		return n, fmt.Sprintf("%s-r%dt", c, n), fmt.Sprintf("%s-r%d", c, n)
	}
	n = run.MainlineRoundCounter + 1
	return n, fmt.Sprintf("r%dt", n), fmt.Sprintf("r%d", n)
}

// lineageFinal is the newest round of a lineage in a trace, and whether the lineage is done:
// that round settled (a round that continues writes its continuation in the transaction that
// settles it, so the newest round of a working lineage is never settled).
func lineageFinal(tasks []store.TaskTrace, root string) (*store.TaskTrace, bool) {
	var last *store.TaskTrace
	for i := range tasks {
		t := &tasks[i]
		if t.Kind == KindModel && t.LineageRoot == root && (last == nil || t.RoundNumber > last.RoundNumber) {
			last = t
		}
	}
	return last, last != nil && Terminal(last.Status)
}

// branchMembers are the rows of a branch (docs/api.md#tasks-and-decisions): its rounds, their
// calls, and every row placed under one of those, recursively; in creation order.
func branchMembers(tasks []store.TaskTrace, root string) []*store.TaskTrace {
	in := map[string]bool{}
	for i := range tasks {
		if tasks[i].Kind == KindModel && tasks[i].LineageRoot == root {
			in[tasks[i].Key] = true
		}
	}
	for changed := true; changed; {
		changed = false
		for i := range tasks {
			t := &tasks[i]
			if in[t.Key] {
				continue
			}
			if (t.DeclaringTaskKey != nil && in[*t.DeclaringTaskKey]) || (t.ParentKey != nil && in[*t.ParentKey]) {
				in[t.Key] = true
				changed = true
			}
		}
	}
	var out []*store.TaskTrace
	for i := range tasks {
		if in[tasks[i].Key] {
			out = append(out, &tasks[i])
		}
	}
	return out
}

// CancelBranch cancels the branch t names, a row of r (docs/api.md#tasks-and-decisions): 409
// not_a_branch, then 409 already_terminal. Every live row of the branch settles canceled
// (task_canceled, failure_resolution canceled); the waited call that observes it, or the mainline
// round that reads it, then reads a canceled <task_result>. It answers the key of the branch's
// first round.
func (x *Tx) CancelBranch(ctx context.Context, r *store.Run, t *store.TaskTrace) (string, error) {
	e, tx, fx := x.e, x.Tx, x.fx
	tasks, err := store.TraceTasks(ctx, tx, r.ID)
	if err != nil {
		return "", err
	}
	root, ok := branchRootOf(tasks, t)
	if !ok {
		return "", conflict(CodeNotABranch, "Task %s is not a branch: only a delegate_task call's branch, or one of its rounds, is canceled here.", t.Key)
	}
	members := branchMembers(tasks, root)
	now := e.nowMS()
	canceled := 0
	for _, m := range members {
		if Terminal(m.Status) {
			continue
		}
		if err := e.cancelRow(ctx, tx, fx, r, m, KeyTaskCanceled, now); err != nil {
			return "", err
		}
		canceled++
	}
	if canceled == 0 {
		return "", conflict(CodeAlreadyTerminal, "Every row of the branch %s is already settled.", root)
	}
	return root, e.advance(ctx, tx, fx, r)
}

// branchRootOf finds the branch a cancel names: a delegate_task call that placed one, or any
// round of one. Everything else (a mainline round, a call that placed no branch, a non-model
// row) is not a branch.
func branchRootOf(tasks []store.TaskTrace, t *store.TaskTrace) (string, bool) {
	switch {
	case isBranchRound(t):
		return t.LineageRoot, true
	case t.Kind == KindTool && deref(t.ToolName) == announce.WireDelegateTask:
		root := BranchKey(t.Key)
		for i := range tasks {
			if tasks[i].Key == root && isBranchRound(&tasks[i]) {
				return root, true
			}
		}
	}
	return "", false
}

// cancelRow settles one live row canceled by a branch cancel or a stop: its executor hears
// work_canceled, an in-flight evaluation is abandoned, and a wait call that was observing keeps
// the sentence saying that only its observation ended.
func (e *Engine) cancelRow(ctx context.Context, tx *store.Tx, fx *effects, run *store.Run, t *store.TaskTrace, key string, now int64) error {
	if t.AddressedRole != nil && t.Status == StatusDispatched {
		var ids []string
		if t.AddressedExecutorPublicID != nil {
			ids = []string{*t.AddressedExecutorPublicID}
		}
		fx.canceled = append(fx.canceled, signalRow{run: run.PublicID, key: t.Key, executors: ids, reason: key})
	}
	fx.abandon = append(fx.abandon, t.ID)
	detail, err := e.canceledDetail(ctx, tx, t)
	if err != nil {
		return err
	}
	f := failAs(StatusCanceled, TaskError{Key: key, Detail: detail}, now)
	if key == KeyTaskCanceled {
		// A branch cancel resolves the failure it leaves (failure_resolution canceled).
		f.Resolution = new(StatusCanceled)
	}
	return e.settleRow(ctx, tx, fx, run, t, f)
}

// canceledDetail is the detail a canceled row carries: a wait call (or its await) says that the
// target keeps running (docs/agent-tools.md#delegation-and-conversations); other rows carry none.
func (e *Engine) canceledDetail(ctx context.Context, q store.Querier, t *store.TaskTrace) (string, error) {
	isWaitCall := t.Kind == KindTool && deref(t.ToolName) == wireWait && t.Lowered
	isWaitAwait := t.Kind == KindAwait && deref(t.AwaitKind) == AwaitWait
	if !isWaitCall && !isWaitAwait {
		return "", nil
	}
	full, err := store.TaskByID(ctx, q, t.ID)
	if err != nil {
		return "", err
	}
	target := ""
	if isWaitAwait {
		if spec, ok := parseWaitSpec(full.WaitSpec); ok {
			target = spec.Task
		}
	} else {
		if target, err = waitInputTask(full.ToolInput); err != nil {
			return "", err
		}
	}
	return e.texts.WaitCanceled(target), nil
}
