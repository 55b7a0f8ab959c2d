package kernel

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/nexuskernel/nexus/core/conversations"
	"github.com/nexuskernel/nexus/core/declare"
	"github.com/nexuskernel/nexus/core/model"
	"github.com/nexuskernel/nexus/core/refusal"
	"github.com/nexuskernel/nexus/core/runs"
	"github.com/nexuskernel/nexus/core/store"
	"github.com/nexuskernel/nexus/sdk/announce"
)

// The graph family's canonical and wire names (docs/agent-tools.md#delegation-and-conversations).
const (
	CanonicalDelegateTask = "nexus.graph.delegate_task"
	CanonicalWait         = "nexus.graph.wait"

	wireDelegateTask = announce.WireDelegateTask
	wireWait         = "wait"
)

// The graph family's refusal words (docs/agent-tools.md#delegation-and-conversations).
const (
	WordModelNotAuthorized = conversations.WordModelNotAuthorized
	WordWaitTargetNotFound = "wait_target_not_found"
	WordWaitCycle          = "wait_cycle"
)

// The enum values of lifetime and wake (docs/agent-tools.md#delegation-and-conversations), in
// schema order.
const (
	lifetimeTurn         = "turn"
	lifetimeConversation = "conversation"
	wakeAuto             = "auto"
	wakePassive          = "passive"
)

// wait's clock bounds (docs/agent-tools.md#delegation-and-conversations, docs/api.md#limits).
const (
	// WaitDefault is a wait's clock when timeout_ms is omitted: long enough for a branch's
	// typical work, short enough that a forgotten wait does not hold a round for a day.
	WaitDefault = time.Hour
	// WaitAuthoredMax is the largest timeout_ms a wait may be written with (7 days, the same
	// authored bound as a tool park), so that a schema-valid value is never refused.
	WaitAuthoredMax = 7 * 24 * time.Hour
	// WaitClamp is the effective bound of a wait's clock, whatever it was written with: a wait
	// that outlives a working day is waiting on something that has gone wrong, and the model
	// should hear so.
	WaitClamp = 24 * time.Hour

	defaultWaitTimeoutMS   = int64(WaitDefault / time.Millisecond)
	maxAuthoredWaitTimeout = int64(WaitAuthoredMax / time.Millisecond)
)

// WaitTimeoutDetail is the detail of a wait whose own deadline passed
// (docs/agent-tools.md#delegation-and-conversations).
func WaitTimeoutDetail(task string, ms int64) string {
	return fmt.Sprintf("stopped waiting for task %q after %d ms; it keeps running and its result is still delivered.", task, ms)
}

// WaitCanceledDetail is the detail of a canceled wait
// (docs/agent-tools.md#delegation-and-conversations).
func WaitCanceledDetail(task string) string {
	return fmt.Sprintf("the wait for task %q was canceled; the task keeps running.", task)
}

// The parameters of each tool, in schema order (docs/agent-tools.md#delegation-and-conversations).
var (
	delegateParams = []string{"prompt", "model", "lifetime", "wake", "wait", "tools"}
	waitParams     = []string{"task", "run_public_id", "timeout_ms"}
)

// Graph runs delegate_task and wait: it checks the arguments, resolves a wait's target, builds the
// rows each places (a branch's first round, a wait's await) and writes the texts; core/runs
// writes and observes the rows (docs/agent-tools.md#delegation-and-conversations).
type Graph struct {
	// Compiler narrows the calling round's frozen declaration for a branch.
	Compiler *declare.Compiler
	// Models checks an explicit model (docs/agent-tools.md#what-a-model-reads).
	Models *model.Catalog
}

// DelegatedTitle is the title of a delegate_task call, detached or waited.
func DelegatedTitle(callKey string) string { return "delegated task " + callKey }

// DelegateReceipt is a detached delegate_task call's result text
// (docs/agent-tools.md#delegation-and-conversations).
func DelegateReceipt(callKey, runPublicID string) string {
	return "Task " + callKey + " started in the background. Its result will reach you later as a <task_result task=\"" + callKey +
		"\"> message, which is not from the person.\n" + TaskReference(runPublicID, callKey)
}

// TaskReference is the line a later wait uses to find the work
// (docs/agent-tools.md#what-a-model-reads).
func TaskReference(runPublicID, callKey string) string {
	return `Task reference: run_public_id="` + runPublicID + `", task="` + callKey + `"`
}

// delegateStructured is a detached receipt's structured_content.
type delegateStructured struct {
	RunPublicID string `json:"run_public_id"`
	Task        string `json:"task"`
}

// ModelNotAuthorizedDetail is the detail of an explicit model the run may not use: the model
// check's word as the reason (docs/agent-tools.md#what-a-model-reads).
func ModelNotAuthorizedDetail(ref, reason string) string {
	return fmt.Sprintf("model %q is not a model you may run here (%s).", ref, reason)
}

// Delegate runs delegate_task (docs/agent-tools.md#delegation-and-conversations): checks in order
// (arguments, the tools names, the explicit model), then places one branch with an empty context
// under the call, detached with a receipt, or waited on.
func (g *Graph) Delegate(ctx context.Context, call *runs.KernelCall) (*runs.KernelOutcome, error) {
	a, err := ReadArgs(call.Input, delegateParams, true)
	if err != nil {
		return nil, err
	}
	prompt, _ := a.String("prompt", true, true)
	requested, _ := a.String("model", false, false)
	lifetime := a.Enum("lifetime", false, "", lifetimeTurn, lifetimeConversation)
	wake := a.Enum("wake", false, "", wakeAuto, wakePassive)
	wait := a.Bool("wait", false, false)
	tools, narrow := a.Strings("tools", false)
	if e := a.Err(); e != nil {
		return argumentsRefused(wireDelegateTask, e), nil
	}
	if call.Round == nil {
		return nil, errors.New("kernel: delegate_task needs the round that made the call")
	}
	round, err := call.Round(ctx)
	if err != nil {
		return nil, err
	}
	set, err := g.Compiler.Compile(round.ToolDefinitions)
	if err != nil {
		return nil, fmt.Errorf("kernel: the calling round's declaration: %w", declare.Fault(err))
	}
	var wanted []string
	if narrow {
		wanted = tools
	}
	branchSet, err := g.Compiler.NarrowForDelegation(set, wanted)
	if r, ok := refusal.As(err); ok && r.Code == declare.WordToolNotDeclared && len(r.Errors) == 1 {
		text := declare.ToolNotDeclaredText(r.Errors[0].Name, set)
		return ErrorResult(wireDelegateTask, WordToolNotDeclared, strings.TrimPrefix(text, WordToolNotDeclared+": ")), nil
	}
	if err != nil {
		return nil, fmt.Errorf("kernel: narrowing for a branch: %w", declare.Fault(err))
	}
	ref := round.Model
	if requested = strings.TrimSpace(requested); requested != "" {
		if _, err := g.Models.Check(requested, branchSet.Len() > 0); err != nil {
			rf, ok := refusal.As(err)
			if !ok {
				return nil, err
			}
			return ErrorResult(wireDelegateTask, WordModelNotAuthorized, ModelNotAuthorizedDetail(requested, rf.Code)), nil
		}
		ref = requested
	}
	if lifetime == "" {
		lifetime = round.Lifetime
	}
	if wake == "" {
		wake = round.Wake
	}
	row := branchRow(call.TaskKey, branch{Prompt: prompt, Model: ref, Instructions: round.Instructions,
		ToolDefinitions: branchSet.Bytes(), SkillCatalog: round.SkillCatalog, Environment: round.Environment,
		Lifetime: lifetime, Wake: wake, Detached: !wait})
	title := DelegatedTitle(call.TaskKey)
	if wait {
		return &runs.KernelOutcome{Place: &runs.Placement{Rows: []*store.Task{row}, Await: row.Key, Title: title}}, nil
	}
	sc, err := compactJSON(delegateStructured{RunPublicID: call.RunPublicID, Task: call.TaskKey})
	if err != nil {
		return nil, err
	}
	return &runs.KernelOutcome{Place: &runs.Placement{Rows: []*store.Task{row}},
		Result: &runs.KernelResult{Content: DelegateReceipt(call.TaskKey, call.RunPublicID), StructuredContent: sc, Title: title}}, nil
}

// WaitTitle is a wait call's title.
func WaitTitle(task string) string { return "wait for " + task }

// WaitTargetNotFoundDetail is the detail of a target the caller may not observe, in an unknown
// run, or with an unknown key (docs/agent-tools.md#delegation-and-conversations).
func WaitTargetNotFoundDetail(task, runPublicID string) string {
	return fmt.Sprintf("no task %q in run %s that this run can observe.", task, runPublicID)
}

// WaitTargetGoneDetail is the detail of a target collected while a wait observed it.
func WaitTargetGoneDetail(task string) string {
	return fmt.Sprintf("task %q is no longer available.", task)
}

// waitTargetGone is the result of a wait whose target was collected while observed
// (docs/agent-tools.md#delegation-and-conversations): wait_target_not_found as its error result,
// the structured_content saying the target is unavailable. No path collects tasks in this
// version; the engine keeps the rule for the one that will.
func waitTargetGone(task string) *runs.KernelResult {
	detail := WaitTargetGoneDetail(task)
	type errorWire struct {
		Key    string `json:"key"`
		Detail string `json:"detail,omitempty"`
	}
	sc, err := json.Marshal(struct {
		Status string    `json:"status"`
		Error  errorWire `json:"error"`
	}{"unavailable", errorWire{WordWaitTargetNotFound, detail}})
	if err != nil {
		panic(fmt.Sprintf("kernel: marshal a wait's refusal: %v", err))
	}
	return &runs.KernelResult{Content: WordWaitTargetNotFound + ": " + detail, StructuredContent: sc, IsError: true, Title: refusedTitle(wireWait)}
}

// delegateModelLine is a waited delegate_task's "[model: …]" line
// (docs/agent-tools.md#delegation-and-conversations): the model the call named, and the one its
// branch ran on or that it never started; "" when the call named none.
func delegateModelLine(input []byte, ranOn string, started bool) (string, error) {
	var in struct {
		Model *string `json:"model"`
	}
	if input != nil {
		if err := json.Unmarshal(input, &in); err != nil {
			return "", fmt.Errorf("kernel: a delegate_task call's stored input: %w", err)
		}
	}
	if in.Model == nil {
		return "", nil
	}
	requested := strings.TrimSpace(*in.Model)
	if requested == "" {
		return "", nil
	}
	ran := "ran on " + ranOn
	if !started {
		ran = "not started"
	}
	return fmt.Sprintf("[model: requested %s, %s]", requested, ran), nil
}

// WaitCycleDetail is the detail of a target that is the call or one of its ancestors.
func WaitCycleDetail(task string) string {
	return fmt.Sprintf("task %q is this call or one of its ancestors, so waiting on it could never end.", task)
}

// Wait runs wait (docs/agent-tools.md#delegation-and-conversations): the target is resolved and
// checked; a target whose final work has settled answers at once with its envelope, otherwise one
// kernel-held await observes it.
func (g *Graph) Wait(ctx context.Context, call *runs.KernelCall) (*runs.KernelOutcome, error) {
	a, err := ReadArgs(call.Input, waitParams, false)
	if err != nil {
		return nil, err
	}
	task, _ := a.String("task", true, true)
	runID, _ := a.UUID("run_public_id", false)
	timeout := a.Int("timeout_ms", false, 1, maxAuthoredWaitTimeout, defaultWaitTimeoutMS)
	if e := a.Err(); e != nil {
		return argumentsRefused(wireWait, e), nil
	}
	target, err := lookupWaitTarget(ctx, call, runID, task)
	if err != nil {
		return nil, err
	}
	switch {
	case !target.Found:
		return ErrorResult(wireWait, WordWaitTargetNotFound, WaitTargetNotFoundDetail(task, target.RunPublicID)), nil
	case target.Cycle:
		return ErrorResult(wireWait, WordWaitCycle, WaitCycleDetail(task)), nil
	case target.Settled:
		r := *target.Result
		r.Title = WaitTitle(task)
		return &runs.KernelOutcome{Result: &r}, nil
	}
	row := waitAwait(call.TaskKey, runs.WaitSpec{RunPublicID: target.RunPublicID, Task: task, TimeoutMS: timeout})
	return &runs.KernelOutcome{Place: &runs.Placement{Rows: []*store.Task{row}, Await: row.Key, Title: WaitTitle(task)}}, nil
}

// branch is the model branch a delegate_task call places
// (docs/agent-tools.md#delegation-and-conversations): an empty context that reads only Prompt, the
// calling round's request surface, and its declaration narrowed.
type branch struct {
	Prompt string
	// Model is the provider/model ref the branch runs on.
	Model        string
	Instructions *string
	// ToolDefinitions is the narrowed, re-rendered frozen declaration ("[]" for no tools);
	// SkillCatalog and Environment are the calling round's, as stored.
	ToolDefinitions []byte
	SkillCatalog    []byte
	Environment     []byte
	Lifetime        string
	Wake            string
	// Detached is true unless the call waits for the branch (wait: true).
	Detached bool
}

// branchRow is the first round of a delegate_task branch, ready to be placed under its call
// (runs.BranchKey): off the mainline, kernel-made, absorbing its failure, visible, a lineage of
// its own that counts its rounds from 1. Readiness makes it running in the placing transaction.
func branchRow(callKey string, b branch) *store.Task {
	key := runs.BranchKey(callKey)
	defs, cat, env := string(b.ToolDefinitions), string(b.SkillCatalog), string(b.Environment)
	if defs == "" {
		defs = "[]"
	}
	t := &store.Task{TaskTrace: store.TaskTrace{
		Key: key, Kind: runs.KindModel, Status: runs.StatusWaiting, Mainline: false, Origin: runs.OriginKernel,
		OnFailure: runs.OnFailureAbsorb, Lifetime: b.Lifetime, Wake: b.Wake, Detached: b.Detached,
		Visibility: runs.VisibilityVisible, LineageRoot: key, RoundNumber: 1, Model: new(b.Model),
	},
		Prompt: new(b.Prompt), Instructions: b.Instructions, ToolDefinitions: &defs,
	}
	if cat != "" {
		t.SkillCatalog = &cat
	}
	if env != "" {
		t.Environment = &env
	}
	return t
}

// waitAwait is the await a wait call places (docs/agent-tools.md#delegation-and-conversations):
// kernel-held, dispatched from birth, hidden, absorbing, with the effective clock min(timeout_ms,
// WaitClamp). spec.TimeoutMS is the authored value (the default when omitted), served on the task
// read.
func waitAwait(callKey string, spec runs.WaitSpec) *store.Task {
	key := runs.ChildKey(callKey, runs.RoleWait, 1)
	clock := min(spec.TimeoutMS, WaitClamp.Milliseconds())
	return &store.Task{TaskTrace: store.TaskTrace{
		Key: key, Kind: runs.KindAwait, Status: runs.StatusDispatched, Origin: runs.OriginKernel, OnFailure: runs.OnFailureAbsorb,
		Lifetime: runs.LifetimeTurn, Wake: runs.WakeAuto, Visibility: runs.VisibilityHidden, LineageRoot: key,
		AwaitKind: new(runs.AwaitWait), TimeoutMS: &clock,
	},
		WaitSpec: &spec,
	}
}

// waitTarget is what a wait call would observe (docs/agent-tools.md#delegation-and-conversations).
type waitTarget struct {
	// RunPublicID is the run that holds the target (the calling run when none was named).
	RunPublicID string
	// Found is false when the run is not observable from the calling run, or has no such task.
	Found bool
	// Cycle is true when the target is the call itself or one of its ancestors.
	Cycle bool
	// Settled is true when the target's final work has settled; Result is then the call's
	// result: the target's <task_result> envelope, an error flag when it did not complete.
	Settled bool
	Result  *runs.KernelResult
}

// lookupWaitTarget resolves a wait call's target inside its settling transaction: the run (the
// calling run, or on a conversation-hosted run another run of its conversation), the task,
// whether waiting on it could never end (runs.WaitCycle), and whether its final work has already
// settled (runs.Tx.FinalWork).
func lookupWaitTarget(ctx context.Context, call *runs.KernelCall, runPublicID, task string) (*waitTarget, error) {
	if call.Tx == nil || call.Engine == nil {
		return nil, errors.New("kernel: a wait is evaluated inside its settling transaction")
	}
	q := call.Tx
	self, err := store.RunByID(ctx, q, call.RunID)
	if err != nil {
		return nil, err
	}
	out := &waitTarget{RunPublicID: self.PublicID}
	run := self
	if id := strings.ToLower(runPublicID); id != "" && id != self.PublicID {
		out.RunPublicID = id
		if self.ConversationID == nil {
			return out, nil
		}
		other, err := store.RunByPublicID(ctx, q, self.WorkspaceID, id)
		if errors.Is(err, store.ErrNotFound) {
			return out, nil
		}
		if err != nil {
			return nil, err
		}
		if other.ConversationID == nil || *other.ConversationID != *self.ConversationID {
			return out, nil
		}
		run = other
	}
	target, err := store.TaskByKey(ctx, q, run.ID, task)
	if errors.Is(err, store.ErrNotFound) {
		return out, nil
	}
	if err != nil {
		return nil, err
	}
	out.Found = true
	if run.ID == self.ID {
		tasks, err := store.TraceTasks(ctx, q, run.ID)
		if err != nil {
			return nil, err
		}
		if runs.WaitCycle(tasks, call.TaskKey, &target.TaskTrace) {
			out.Cycle = true
			return out, nil
		}
	}
	result, settled, err := call.Engine.FinalWork(ctx, run.ID, target, task)
	if err != nil {
		return nil, err
	}
	if settled {
		out.Settled = true
		out.Result = &runs.KernelResult{Content: result.Render(), IsError: result.Status != runs.StatusCompleted}
	}
	return out, nil
}
