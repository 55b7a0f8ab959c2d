package runs

import (
	"context"

	"github.com/nexuskernel/nexus/core/store"
)

// The engine's side of the conversation tools' rows (docs/agent-tools.md#delegation-and-conversations):
// the reply rows under a spawn's or send's call settle when the reply arrives (observeRequests,
// observeSpawn), read through Conversations.Reply; the requests, the turns and their lifecycle are
// core/conversations', on the engine's Tx. The reply travelling back never takes the sending run's
// lock: the child's transaction records the sending run (Tx.AdvanceAfter), and a follow-up
// transaction after the commit advances it (Advance; the sweeper's poll settles any observer a
// crash left behind).

// Roles of the rows a spawn or send places under its call
// (docs/development.md#how-the-kernel-runs-work).
const (
	RoleSpawn      = "spawn"
	RoleDelegation = "delegation"
)

// observeRequests settles the delegation rows of a run whose reply has arrived, in the caller's
// transaction under the run's lock: the row completes with the reply's envelope and is then
// delivered as a detached result (docs/agent-tools.md#delegation-and-conversations), unless the
// call's waited await took the reply first, in which case it is recorded as delivered with the
// await and never mailed (the reply comes back once). It reports whether it settled any.
func (e *Engine) observeRequests(ctx context.Context, tx *store.Tx, fx *effects, run *store.Run, tasks []store.TaskTrace, byKey map[string]*store.TaskTrace, now int64) (bool, error) {
	settled := false
	for i := range tasks {
		t := &tasks[i]
		if t.Kind != KindDelegation || t.Status != StatusDispatched || t.ParentKey == nil {
			continue
		}
		tr, done, err := e.conv.Reply(ctx, tx, run.ID, *t.ParentKey)
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
		ok, err := settle.Exec(ctx, tx, t)
		if err != nil {
			return false, err
		}
		if ok {
			fx.settled(run, t)
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
	tr, done, err := e.conv.Reply(ctx, q, call.RunID, call.Key)
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

// Advance runs readiness on each of runIDs, each in a transaction of its own: the runs whose reply
// rows may have settled in a transaction that just committed (docs/development.md#how-the-kernel-runs-work).
// A failure is logged, and the sweeper's poll settles the observer later.
func (e *Engine) Advance(ctx context.Context, runIDs []int64) {
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
