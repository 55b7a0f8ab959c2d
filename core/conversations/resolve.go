package conversations

import (
	"context"

	"github.com/nexuskernel/nexus/core/envelope"
	"github.com/nexuskernel/nexus/core/identity"
	"github.com/nexuskernel/nexus/core/runs"
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
	Actor   *runs.Actor
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
func (d *Doors) Resolve(ctx context.Context, req *ResolveRequest) (*Resolution, error) {
	a, runID, key := req.Actor, req.RunID, req.TaskKey
	sub := req.Result
	if sub == nil {
		sub = &envelope.Submission{}
	}
	var res *Resolution
	err := d.e.Write(ctx, func(x *runs.Tx) error {
		tx := x.Tx
		res = nil
		r, t, err := lockRowForWrite(ctx, x, a, runID, key)
		if err != nil {
			return err
		}
		if req.Invalid != nil {
			return req.Invalid
		}
		await, err := runs.AskAwaitOf(ctx, tx, r.ID, t)
		if err != nil {
			return err
		}
		if await == nil {
			return conflict(CodeAwaitNotResolvable, "Task %s is not an ask await; only asks are answered here.", key)
		}
		if await, err = store.LockTask(ctx, tx, await.ID); err != nil {
			return err
		}
		if runs.Terminal(await.Status) {
			return resolution(ctx, tx, r, await.Key, false, &res)
		}
		if await.DeadlineAt != nil && x.NowMS() >= *await.DeadlineAt {
			// The deadline wins (docs/development.md#how-the-kernel-runs-work): the late answer is
			// discarded.
			if err := x.Expire(ctx, r, await); err != nil {
				return err
			}
			return resolution(ctx, tx, r, await.Key, false, &res)
		}
		p := &identity.Principal{Kind: a.Kind, ID: a.ID, PublicID: a.PublicID}
		result, err := envelope.Validate(sub, func(ids []string) ([]string, error) { return uploads.OwnedInputs(ctx, tx, p, ids) })
		if err != nil {
			return err
		}
		if err := x.AnswerAsk(ctx, r, await, result, runs.Member{Kind: a.Kind, PublicID: a.PublicID}); err != nil {
			return err
		}
		return resolution(ctx, tx, r, await.Key, true, &res)
	})
	return res, err
}

func resolution(ctx context.Context, q store.Querier, r *store.Run, key string, applied bool, out **Resolution) error {
	doc, err := taskDoc(ctx, q, r, key)
	if err != nil {
		return err
	}
	*out = &Resolution{Task: doc, Applied: applied}
	return nil
}
