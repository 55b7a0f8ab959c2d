package runs

import (
	"context"
	"errors"
	"strings"

	"github.com/nexuskernel/nexus/core/envelope"
	"github.com/nexuskernel/nexus/core/identity"
	"github.com/nexuskernel/nexus/core/store"
	"github.com/nexuskernel/nexus/core/uploads"
)

// Resolution is what the resolution door answers: the await as it stands, and whether this
// answer settled it.
type Resolution struct {
	Task    *TaskDoc
	Applied bool
}

// ResolveRequest is the resolution door's request: the caller, the await (or its ask call) and the
// answer as submitted.
type ResolveRequest struct {
	Actor   *Actor
	RunID   string
	TaskKey string
	// Result is the answer as submitted; nil is an empty one.
	Result *envelope.Submission
	// Invalid is the refusal of the body's own rules (not one object, a key beside the
	// envelope's own), found when the door decoded it: Resolve answers it after the row's
	// lookup and the caller's standing, where the documented order puts the body.
	Invalid error
}

// Resolve is the resolution door (docs/api.md#tasks-and-decisions), the only door that answers an
// ask. Checks, in this order: 404 not_found (run, then key); 403 not_authorized; 400
// parameter_invalid (req.Invalid); 409 await_not_resolvable (anything but an ask await, reached by its own key or
// its call's); a settled await answers applied: false; an await whose deadline passed is first
// settled by the expiry rule, then answers applied: false; the result envelope's grammar (422, the
// park stands); result_unstorable (422, the park stands too: the resolver is a person at an
// interactive door). A fresh answer settles the await completed (failed, await_failed, when outcome
// is failed), binds the uploads it links, and settles the ask call in the same transaction.
func (e *Engine) Resolve(ctx context.Context, req *ResolveRequest) (*Resolution, error) {
	a, runID, key := req.Actor, req.RunID, req.TaskKey
	sub := req.Result
	if sub == nil {
		sub = &envelope.Submission{}
	}
	var res *Resolution
	err := e.write(ctx, func(tx *store.Tx, fx *effects) error {
		res = nil
		r, err := e.loadRun(ctx, tx, a, runID)
		if err != nil {
			return err
		}
		if r, err = store.LockRun(ctx, tx, r.ID); err != nil {
			return err
		}
		t, err := store.TaskByKey(ctx, tx, r.ID, key)
		if errors.Is(err, store.ErrNotFound) {
			return taskNotFound(key)
		}
		if err != nil {
			return err
		}
		if err := e.writeStanding(ctx, tx, a, r); err != nil {
			return err
		}
		if req.Invalid != nil {
			return req.Invalid
		}
		await, err := askAwaitOf(ctx, tx, r.ID, t)
		if err != nil {
			return err
		}
		if await == nil {
			return conflict(CodeAwaitNotResolvable, "Task %s is not an ask await; only asks are answered here.", key)
		}
		if await, err = store.LockTask(ctx, tx, await.ID); err != nil {
			return err
		}
		if Terminal(await.Status) {
			return e.resolution(ctx, tx, r, await.Key, false, &res)
		}
		now := e.nowMS()
		if await.DeadlineAt != nil && now >= *await.DeadlineAt {
			// The deadline wins (docs/development.md#how-the-kernel-runs-work): the late answer is
			// discarded.
			if err := e.expire(ctx, tx, fx, r, await, now); err != nil {
				return err
			}
			return e.resolution(ctx, tx, r, await.Key, false, &res)
		}
		p := &identity.Principal{Kind: a.Kind, ID: a.ID, PublicID: a.PublicID}
		result, err := envelope.Validate(sub, func(ids []string) ([]string, error) { return uploads.OwnedInputs(ctx, tx, p, ids) })
		if err != nil {
			return err
		}
		if err := e.answerAsk(ctx, tx, r, await, result, a.member(), now); err != nil {
			return err
		}
		if err := e.advance(ctx, tx, fx, r); err != nil {
			return err
		}
		return e.resolution(ctx, tx, r, await.Key, true, &res)
	})
	return res, err
}

func (e *Engine) resolution(ctx context.Context, q store.Querier, r *store.Run, key string, applied bool, out **Resolution) error {
	doc, err := e.taskDoc(ctx, q, r, key)
	if err != nil {
		return err
	}
	*out = &Resolution{Task: doc, Applied: applied}
	return nil
}

// askAwaitOf finds the ask await a resolution names: the await itself, or the ask call that
// placed it (docs/api.md#tasks-and-decisions). nil when the key names anything else.
func askAwaitOf(ctx context.Context, q store.Querier, runID int64, t *store.Task) (*store.Task, error) {
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

// answerAsk settles a live ask await with a member's answer: completed with the result as
// stored (its text projection is what <answer> carries), or failed await_failed when the
// member declines (outcome failed); the uploads it links are bound to it.
func (e *Engine) answerAsk(ctx context.Context, tx *store.Tx, run *store.Run, await *store.Task, res *envelope.Result, by Member, now int64) error {
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
	seq, err := store.NextSettleSeq(ctx, tx, run.ID)
	if err != nil {
		return err
	}
	set := []store.Assign{{Col: "is_error", Val: res.IsError}, {Col: "output", Val: output},
		{Col: "resolved_by", Val: *jsonText(by)}, {Col: "completed_at", Val: now}, {Col: "settle_seq", Val: seq}}
	if c := res.ContentJSON(); c != nil {
		set = append(set, store.Assign{Col: "content", Val: string(c)})
	}
	if res.StructuredContent != nil {
		set = append(set, store.Assign{Col: "structured_content", Val: string(res.StructuredContent)})
	}
	if res.Title != "" {
		set = append(set, store.Assign{Col: "title", Val: res.Title})
	}
	if res.Metadata != nil {
		set = append(set, store.Assign{Col: "metadata", Val: string(res.Metadata)})
	}
	if res.Outcome == envelope.OutcomeFailed {
		set = append(set, store.Assign{Col: "status", Val: StatusFailed}, store.Assign{Col: "error_key", Val: KeyAwaitFailed})
		if d, ok := envelope.FailureDetail(output); ok {
			set = append(set, store.Assign{Col: "error_detail", Val: d})
		}
	} else {
		set = append(set, store.Assign{Col: "status", Val: StatusCompleted})
	}
	ok, err := store.SetTask(ctx, tx, await.ID, &store.TaskGuard{Statuses: []string{StatusAwaitingInput}}, set...)
	if err != nil {
		return err
	}
	if !ok {
		return errors.New("runs: the ask left awaiting_input under the run's lock")
	}
	return nil
}
