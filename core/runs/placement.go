package runs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"

	"github.com/nexuskernel/nexus/core/events"
	"github.com/nexuskernel/nexus/core/store"
)

// Placement is what a kernel tool that places rows answers
// (docs/agent-tools.md#delegation-and-conversations): the rows to write under its call, and the one
// the call waits on. The engine writes them in the transaction that evaluated the call; while the
// awaited row's work lives, the call row stays running with awaiting_child set and no deadline of
// its own, out of every claim and sweep; it settles in the same transaction as that work, with what
// observation.go reads from it. Nothing here is specific to one tool: tool_call places its child
// through Call, the other observing tools (a waited delegate_task, wait, ask, a waited spawn) place
// their branch or await through Rows.
type Placement struct {
	// Call is tool_call's child (docs/agent-tools.md#delegation-and-conversations): one ordinary tool
	// task C-call-1 for the named callable, born through exactly the path of a model's direct call:
	// the pairing law's checks 2-7, alias mapping and addressing at birth, then readiness, the
	// approval gate and the park deadline. The call awaits it (Await is ignored).
	Call *ChildCall
	// Rows are kernel-made rows written as given, each keyed under the call ("C-wait-1",
	// "C-model-1"); the engine fills run_id, parent_key and created_at. A row with no after is
	// made ready by readiness in the same transaction, like any root.
	Rows []*store.Task
	// Await is the key of a placed row the call waits on. "" settles the call at once with the
	// outcome's Result (a detached branch's receipt).
	Await string
	// Title is the call row's title, written when it starts waiting and kept when it settles
	// (tool_call's "tool call"); "" writes none.
	Title string
}

// ChildCall names the callable a tool_call child runs and its input (a JSON object, before
// alias mapping, exactly as a model's direct call would carry it).
type ChildCall struct {
	Name  string
	Input json.RawMessage
}

// ChildKey is the key of a row a kernel call places (docs/development.md#how-the-kernel-runs-work):
// the call's key, the row's role and its ordinal, as in r2t0-call-1 or r2t0-ask-1.
func ChildKey(callKey, role string, n int) string {
	return callKey + "-" + role + "-" + strconv.Itoa(n)
}

// RoleCall is the role of tool_call's child in its key (C-call-1).
const RoleCall = "call"

// place writes a kernel call's placement and either settles the call at once or leaves it
// waiting on its child, then runs readiness, which makes a placed root ready and settles the
// call already when its child was born settled.
func (e *Engine) place(ctx context.Context, tx *store.Tx, fx *effects, run *store.Run, call *store.Task, c *store.Claimed, out *KernelOutcome) error {
	p := out.Place
	now := e.nowMS()
	await := p.Await
	if p.Call != nil {
		await = ChildKey(call.Key, RoleCall, 1)
		if err := e.placeCall(ctx, tx, fx, run, call, await, p.Call, now); err != nil {
			return err
		}
	}
	for _, r := range p.Rows {
		if !strings.HasPrefix(r.Key, call.Key+"-") {
			return fmt.Errorf("runs: %s placed %q, which is not keyed under it", call.Key, r.Key)
		}
		r.RunID, r.ParentKey, r.CreatedAt = run.ID, &call.Key, now
		inheritPlacement(r, &call.TaskTrace, now)
		if err := store.InsertTask(ctx, tx, r); err != nil {
			return err
		}
		if r.Status == StatusAwaitingInput {
			fx.note(events.AskWaiting{Scope: scopeOf(run), TaskKey: r.Key})
		}
	}
	if await == "" {
		if out.Result == nil {
			return fmt.Errorf("runs: %s placed rows with neither a result nor a row to await", call.Key)
		}
		return e.settleKernel(ctx, tx, fx, run, &call.TaskTrace, c, &KernelOutcome{Result: out.Result})
	}
	if _, err := store.TaskByKey(ctx, tx, run.ID, await); err != nil {
		return fmt.Errorf("runs: %s awaits %s: %w", call.Key, await, err)
	}
	// The call now waits: no clock of its own (the child's park carries one), and no claim, so
	// that nothing sweeps it, no worker claims it (lowered), and a stop cancels it at once.
	wait := store.AwaitChild{ID: c.ID, Child: await, From: StatusRunning, Claim: *fenceOf(c)}
	if p.Title != "" {
		wait.Title = &p.Title
	}
	ok, err := wait.Exec(ctx, tx)
	if err != nil {
		return err
	}
	if !ok {
		return errLostClaim
	}
	return e.advance(ctx, tx, fx, run)
}

// placeCall births tool_call's child under the calling round's frozen declaration, exactly as
// the round's own expansion births a call, except that the child waits on nothing (it is ready
// at once) and is the call's child rather than the round's pair. A child already there (a
// second evaluation of the same row) is not placed twice.
func (e *Engine) placeCall(ctx context.Context, tx *store.Tx, fx *effects, run *store.Run, call *store.Task, key string, child *ChildCall, now int64) error {
	if _, err := store.TaskByKey(ctx, tx, run.ID, key); err == nil {
		return nil
	} else if !errors.Is(err, store.ErrNotFound) {
		return err
	}
	if call.DeclaringTaskKey == nil {
		return fmt.Errorf("runs: %s places a call but no model round declared it", call.Key)
	}
	round, err := store.TaskByKey(ctx, tx, run.ID, *call.DeclaringTaskKey)
	if err != nil {
		return err
	}
	ts, err := e.toolset(round)
	if err != nil {
		return err
	}
	row := &store.Task{TaskTrace: store.TaskTrace{
		RunID: run.ID, Key: key, Kind: KindTool, Mainline: false, Origin: OriginModel, ParentKey: &call.Key,
		DeclaringTaskKey: &round.Key, OnFailure: OnFailureAbsorb, Lifetime: round.Lifetime, Wake: round.Wake,
		Detached: call.Detached, Visibility: VisibilityCollapsed, LineageRoot: key, CreatedAt: now,
	}}
	return e.birthRow(ctx, tx, fx, run, ts, row, child.Name, string(child.Input), false, now)
}

// observe settles every call row whose awaited work is final, in the transaction that settled that
// work (docs/agent-tools.md#delegation-and-conversations), keeping the in-memory trace current. It
// reports whether it settled any, since a settled call can make its dependents ready and its own
// waiting caller final.
func (e *Engine) observe(ctx context.Context, tx *store.Tx, fx *effects, run *store.Run, tasks []store.TaskTrace, byKey map[string]*store.TaskTrace, now int64) (bool, error) {
	settled := false
	for i := range tasks {
		call := &tasks[i]
		if call.Status != StatusRunning || !call.Lowered || call.AwaitingChild == nil {
			continue
		}
		child := byKey[*call.AwaitingChild]
		if child == nil {
			return false, fmt.Errorf("runs: %s awaits %s, which does not exist", call.Key, *call.AwaitingChild)
		}
		if !mayHaveSettled(tasks, child) {
			continue
		}
		s, err := e.observation(ctx, tx, call, child)
		if err != nil {
			return false, err
		}
		if s == nil {
			continue
		}
		if err := e.settleObserved(ctx, tx, fx, run, call, s, now); err != nil {
			return false, err
		}
		settled = true
	}
	return settled, nil
}

// settlement is how an observing call settles: the status and result or error it carries.
type settlement struct {
	status            string
	isError           *bool
	output            string
	content           *string
	structuredContent *string
	err               *TaskError
	// title replaces the title the call took when it started waiting; nil keeps it.
	title *string
}

// observation reads the awaited row and answers how the call settles, or nil while its work lives.
// Each kind of awaited work has its reading: tool_call's child is mirrored
// (docs/agent-tools.md#delegation-and-conversations); the branch, await and spawn readings arrive
// with the tools that place those rows.
func (e *Engine) observation(ctx context.Context, q store.Querier, call, child *store.TaskTrace) (*settlement, error) {
	switch child.Kind {
	case KindTool:
		if !Terminal(child.Status) {
			return nil, nil
		}
		full, err := store.TaskByID(ctx, q, child.ID)
		if err != nil {
			return nil, err
		}
		return mirror(full), nil
	case KindModel:
		return e.observeBranch(ctx, q, call, child)
	case KindAwait:
		return e.observeAwait(ctx, q, call, child)
	}
	return nil, fmt.Errorf("runs: %s awaits %s, a %s, which no observation reads in this version", call.Key, child.Key, child.Kind)
}

// mirror is a settled child's outcome as its tool_call settles with it: status, error, output,
// content, structured_content and is_error, unchanged.
func mirror(child *store.Task) *settlement {
	s := &settlement{status: child.Status, isError: child.IsError, output: deref(child.Output), content: child.Content,
		structuredContent: child.StructuredContent}
	if child.ErrorKey != nil {
		s.err = &TaskError{Key: *child.ErrorKey, Detail: deref(child.ErrorDetail)}
	}
	return s
}

// settleObserved writes an observing call's settlement, which keeps its in-memory trace current;
// the call stops awaiting.
func (e *Engine) settleObserved(ctx context.Context, tx *store.Tx, fx *effects, run *store.Run, call *store.TaskTrace, s *settlement, now int64) error {
	settle := store.Settle{ID: call.ID, Status: s.status, Result: store.Result{IsError: s.isError, Output: s.output,
		Content: s.content, StructuredContent: s.structuredContent, Title: s.title}, Error: (*store.Failure)(s.err),
		At: now, From: StatusRunning}
	ok, err := settle.Exec(ctx, tx, call)
	if err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("runs: %s was no longer running when its child settled", call.Key)
	}
	fx.settled(run, call)
	return nil
}

// roundReader reads a kernel call's calling round once, inside the evaluating transaction.
func roundReader(tx *store.Tx, runID int64, key string) func(ctx context.Context) (*CallingRound, error) {
	var once sync.Once
	var round *CallingRound
	var rerr error
	return func(ctx context.Context) (*CallingRound, error) {
		once.Do(func() {
			t, err := store.TaskByKey(ctx, tx, runID, key)
			if err != nil {
				rerr = fmt.Errorf("runs: calling round %s: %w", key, err)
				return
			}
			round = &CallingRound{Key: t.Key, Model: deref(t.Model), Instructions: t.Instructions,
				ToolDefinitions: []byte(deref(t.ToolDefinitions)), SkillCatalog: []byte(deref(t.SkillCatalog)),
				Environment: []byte(deref(t.Environment)), Lifetime: t.Lifetime, Wake: t.Wake, Mainline: t.Mainline,
				LineageRoot: t.LineageRoot}
		})
		return round, rerr
	}
}
