package conversations

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/nexuskernel/nexus/core/runs"
	"github.com/nexuskernel/nexus/core/steps"
	"github.com/nexuskernel/nexus/core/store"
	"github.com/nexuskernel/nexus/sdk/jsonwire"
)

// Appended is the answer of the append door.
type Appended struct {
	Receipt  Receipt
	Replayed bool
}

// AppendRequest is the append door's request: the caller, the run, the idempotency, and the
// steps (core/steps' grammar, judged by the engine when it accepts them) and expected revision.
type AppendRequest struct {
	Actor            *runs.Actor
	RunID            string
	Replay           Replay
	Steps            []steps.Step
	ExpectedRevision *int64
	// Invalid is the refusal of the body's own rules (absent, not one object, a key it does not
	// know, steps absent, expected_revision not an integer, steps not an array), found when the
	// door decoded it: Append answers it after the replay, where the documented order puts the
	// body.
	Invalid error
}

// Append is the append door (docs/api.md#runs), in its check order: not_found, not_authorized, an
// Idempotency-Key replay, the body (400, req.Invalid), the step grammar (422), then the conflicts
// conversation_hosted, stale_revision, run_not_appendable, duplicate_task_key.
func (d *Doors) Append(ctx context.Context, req *AppendRequest) (*Appended, error) {
	a, runID, key, canon := req.Actor, req.RunID, req.Replay.Key, req.Replay.Fingerprint
	q := d.e.Reader()
	r, err := loadRun(ctx, q, a, runID)
	if err != nil {
		return nil, err
	}
	if err := writeStanding(ctx, q, a, r); err != nil {
		return nil, err
	}
	scope := fmt.Sprintf("append:%d", r.ID)
	if key != "" {
		if res, found, err := d.replayAppend(ctx, scope, key, canon); found || err != nil {
			return res, err
		}
	}
	if req.Invalid != nil {
		return nil, req.Invalid
	}
	expected := req.ExpectedRevision
	var out *Appended
	err = d.e.Write(ctx, func(x *runs.Tx) error {
		r, err := x.LockRun(ctx, r.ID)
		if err != nil {
			return err
		}
		existing := map[string]bool{}
		trace, err := store.TraceTasks(ctx, x.Tx, r.ID)
		if err != nil {
			return err
		}
		for i := range trace {
			existing[trace[i].Key] = true
		}
		accepted, err := x.ParseSteps(ctx, a, r, req.Steps, existing)
		if err != nil {
			return err
		}
		switch {
		case r.ConversationID != nil:
			return conflict(CodeConversationHosted, "Append is for standalone runs; a conversation-hosted run takes messages.")
		case expected != nil && *expected != r.Revision:
			return conflict(CodeStaleRevision, "The run is at revision %d, not %d.", r.Revision, *expected).With("current_revision", r.Revision)
		case r.Status != runs.RunPending && r.Status != runs.RunRunning && r.Status != runs.RunNeedsAttention:
			return conflict(CodeRunNotAppendable, "The run is %s; nothing can be appended.", r.Status)
		}
		keys, err := x.AppendSteps(ctx, r, trace, accepted, existing)
		if err != nil {
			return err
		}
		out = &Appended{Receipt: Receipt{AcceptedTaskKeys: keys, DeliverableTaskKey: r.DeliverableTaskKey, Revision: r.Revision}}
		if key != "" {
			now := x.NowMS()
			res, _ := json.Marshal(out.Receipt)
			return store.InsertIdempotency(ctx, x.Tx, scope, key, string(canon), string(res), now, now-runs.IdempotencyTTL.Milliseconds())
		}
		return nil
	})
	if err != nil && key != "" && store.IsUniqueViolation(err) {
		if res, found, err := d.replayAppend(ctx, scope, key, canon); found || err != nil {
			return res, err
		}
	}
	return out, err
}

func (d *Doors) replayAppend(ctx context.Context, scope, key string, canon []byte) (*Appended, bool, error) {
	now := d.e.NowMS()
	rec, err := store.LookupIdempotency(ctx, d.e.Reader(), scope, key, now-runs.IdempotencyTTL.Milliseconds())
	if errors.Is(err, store.ErrNotFound) {
		return nil, false, nil
	}
	if err != nil {
		return nil, true, err
	}
	if same, _ := jsonwire.Equal([]byte(rec.Body), canon); !same {
		return nil, true, conflict(CodeIdempotencyEnvelopeMismatch, "The Idempotency-Key %s was used with a different body.", key)
	}
	var rc Receipt
	if err := json.Unmarshal([]byte(rec.Result), &rc); err != nil {
		return nil, true, err
	}
	return &Appended{Receipt: rc, Replayed: true}, true, nil
}
