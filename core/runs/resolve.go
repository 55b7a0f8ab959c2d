package runs

import (
	"context"
	"errors"
	"strings"

	"github.com/nexuskernel/nexus/core/envelope"
	"github.com/nexuskernel/nexus/core/events"
	"github.com/nexuskernel/nexus/core/store"
	"github.com/nexuskernel/nexus/core/uploads"
)

// AskAwaitOf finds the ask await a resolution names: the await itself, or the ask call that
// placed it (docs/api.md#tasks-and-decisions). nil when the key names anything else.
func AskAwaitOf(ctx context.Context, q store.Querier, runID int64, t *store.Task) (*store.Task, error) {
	if t.Kind == KindAwait {
		if deref(t.AwaitKind) == AwaitAsk {
			return t, nil
		}
		return nil, nil
	}
	if t.Kind != KindTool || deref(t.ToolName) != wireAsk {
		return nil, nil
	}
	await, err := store.TaskByKey(ctx, q, runID, ChildKey(t.Key, RoleAsk, 1))
	if errors.Is(err, store.ErrNotFound) {
		return nil, nil // an ask call that placed nothing (an error result)
	}
	return await, err
}

// AnswerAsk settles the live ask await of r with by's answer, as answerAsk does, and advances r.
func (x *Tx) AnswerAsk(ctx context.Context, r *store.Run, await *store.Task, res *envelope.Result, by Member) error {
	if err := x.e.answerAsk(ctx, x.Tx, x.fx, r, await, res, by, x.NowMS()); err != nil {
		return err
	}
	return x.e.advance(ctx, x.Tx, x.fx, r)
}

// answerAsk settles a live ask await with a member's answer: completed with the result as
// stored (its text projection is what <answer> carries), or failed await_failed when the
// member declines (outcome failed); the uploads it links are bound to it.
func (e *Engine) answerAsk(ctx context.Context, tx *store.Tx, fx *effects, run *store.Run, await *store.Task, res *envelope.Result, by Member, now int64) error {
	media := map[string]bool{}
	if len(res.Uploads) > 0 {
		if e.uploads == nil {
			return errors.New("runs: an answer links uploads, and this engine has no upload store")
		}
		found, err := e.uploads.Lookup(ctx, tx, res.Uploads)
		if err != nil {
			return err
		}
		for id, u := range found {
			media[strings.ToLower(id)] = u.IsMedia()
		}
		if err := uploads.Bind(ctx, tx, uploads.Target{Kind: uploads.TargetTaskResult, ID: await.ID, WorkspaceID: run.WorkspaceID},
			res.Uploads, timeOf(now)); err != nil {
			return err
		}
	}
	output := res.Output(func(id string) bool { return media[strings.ToLower(id)] })
	settle := store.Settle{ID: await.ID, Status: StatusCompleted, Result: store.Result{IsError: &res.IsError, Output: output,
		Content: stored(res.ContentJSON()), StructuredContent: stored(res.StructuredContent), Metadata: stored(res.Metadata)},
		ResolvedBy: &by, At: now, From: StatusAwaitingInput}
	if res.Title != "" {
		settle.Result.Title = &res.Title
	}
	if res.Outcome == envelope.OutcomeFailed {
		// A declined ask fails await_failed, its detail the answer's text when it has one.
		detail, _ := envelope.FailureDetail(output)
		settle.Status, settle.Error = StatusFailed, &store.Failure{Key: KeyAwaitFailed, Detail: detail}
	}
	ok, err := settle.Exec(ctx, tx, nil)
	if err != nil {
		return err
	}
	if !ok {
		return errors.New("runs: the ask left awaiting_input under the run's lock")
	}
	fx.note(events.AskAnswered{Scope: scopeOf(run), TaskKey: await.Key, By: by.PublicID})
	fx.settledAs(run, &await.TaskTrace, settle.Status, settle.Error)
	return nil
}
