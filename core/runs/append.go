package runs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/nexuskernel/nexus/core/store"
	"github.com/nexuskernel/nexus/sdk/jsonwire"
)

// Appended is the answer of the append door.
type Appended struct {
	Receipt  Receipt
	Replayed bool
}

// AppendRequest is the append door's request: the caller, the run, the idempotency, and the
// body's steps (the step grammar's, judged here) and expected revision.
type AppendRequest struct {
	Actor            *Actor
	RunID            string
	Replay           Replay
	Steps            json.RawMessage
	ExpectedRevision *int64
	// Invalid is the refusal of the body's own rules (absent, not one object, a key it does not
	// know, steps absent, expected_revision not an integer), found when the door decoded it:
	// Append answers it after the replay, where the documented order puts the body.
	Invalid error
}

// Append is the append door (docs/api.md#runs), in its check order: not_found, not_authorized, an
// Idempotency-Key replay, the body (400, req.Invalid), the step grammar (422), then the conflicts
// conversation_hosted, stale_revision, run_not_appendable, duplicate_task_key.
func (e *Engine) Append(ctx context.Context, req *AppendRequest) (*Appended, error) {
	a, runID, key, canon := req.Actor, req.RunID, req.Replay.Key, req.Replay.Fingerprint
	q := e.store.Reader()
	r, err := e.loadRun(ctx, q, a, runID)
	if err != nil {
		return nil, err
	}
	if err := e.writeStanding(ctx, q, a, r); err != nil {
		return nil, err
	}
	scope := fmt.Sprintf("append:%d", r.ID)
	if key != "" {
		if res, found, err := e.replayAppend(ctx, scope, key, canon); found || err != nil {
			return res, err
		}
	}
	if req.Invalid != nil {
		return nil, req.Invalid
	}
	expected := req.ExpectedRevision
	var out *Appended
	err = e.write(ctx, func(tx *store.Tx, fx *effects) error {
		r, err := store.LockRun(ctx, tx, r.ID)
		if err != nil {
			return err
		}
		deliverable, err := store.TaskByKey(ctx, tx, r.ID, r.DeliverableTaskKey)
		if err != nil {
			return err
		}
		existing := map[string]bool{}
		trace, err := store.TraceTasks(ctx, tx, r.ID)
		if err != nil {
			return err
		}
		for i := range trace {
			existing[trace[i].Key] = true
		}
		prev := r.DeliverableTaskKey
		p := &stepParser{e: e, ctx: ctx, q: tx, tx: tx, actor: a, runner: deref(r.DefaultRunnerExecutorPublicID), skills: runSkillFacts(r), fx: fx,
			existing: copyKeys(existing)}
		steps := p.parse(req.Steps, r.Revision+1, prev)
		if err := p.refusal(""); err != nil {
			return err
		}
		switch {
		case r.ConversationID != nil:
			return conflict(CodeConversationHosted, "Append is for standalone runs; a conversation-hosted run takes messages.")
		case expected != nil && *expected != r.Revision:
			return conflict(CodeStaleRevision, "The run is at revision %d, not %d.", r.Revision, *expected).With("current_revision", r.Revision)
		case r.Status != RunPending && r.Status != RunRunning && r.Status != RunNeedsAttention:
			return conflict(CodeRunNotAppendable, "The run is %s; nothing can be appended.", r.Status)
		}
		if err := duplicateKeys(steps, existing, ""); err != nil {
			return err
		}
		now := e.nowMS()
		skipped, err := e.skipHeld(ctx, tx, r, trace, now)
		if err != nil {
			return err
		}
		// A deliverable settled before the append, or skipped by it just now, is read, not
		// waited on: the first step is a root.
		first := prev
		if Terminal(deliverable.Status) || skipped[prev] {
			first = ""
		}
		keys, _, err := e.insertSteps(ctx, tx, r, steps, first, now)
		if err != nil {
			return err
		}
		rev := r.Revision + 1
		set := []store.Assign{{Col: "revision", Val: rev}, {Col: "deliverable_task_key", Val: keys[len(keys)-1]}, {Col: "updated_at", Val: now}}
		if r.Status == RunNeedsAttention {
			set = append(set, store.Assign{Col: "status", Val: RunRunning})
			r.Status = RunRunning
		}
		if err := store.SetRun(ctx, tx, r.ID, set...); err != nil {
			return err
		}
		r.Revision, r.DeliverableTaskKey = rev, keys[len(keys)-1]
		if err := e.advance(ctx, tx, fx, r); err != nil {
			return err
		}
		out = &Appended{Receipt: Receipt{AcceptedTaskKeys: keys, DeliverableTaskKey: r.DeliverableTaskKey, Revision: rev}}
		if key != "" {
			res, _ := json.Marshal(out.Receipt)
			return store.InsertIdempotency(ctx, tx, scope, key, string(canon), string(res), now, now-IdempotencyTTL.Milliseconds())
		}
		return nil
	})
	if err != nil && key != "" && store.IsUniqueViolation(err) {
		if res, found, err := e.replayAppend(ctx, scope, key, canon); found || err != nil {
			return res, err
		}
	}
	return out, err
}

func copyKeys(m map[string]bool) map[string]bool {
	out := make(map[string]bool, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// skipHeld settles every row held behind a failed halt row skipped (predecessor_failed): it
// could never run, and the append is the repair.
func (e *Engine) skipHeld(ctx context.Context, tx *store.Tx, r *store.Run, trace []store.Task, now int64) (map[string]bool, error) {
	byKey := map[string]*store.Task{}
	for i := range trace {
		byKey[trace[i].Key] = &trace[i]
	}
	held := map[string]string{} // held key -> failed halt key it is behind
	for changed := true; changed; {
		changed = false
		for i := range trace {
			t := &trace[i]
			if t.Status != StatusWaiting || held[t.Key] != "" {
				continue
			}
			for _, k := range afterOf(t) {
				p := byKey[k]
				if p == nil {
					continue
				}
				if failedStatus(p.Status) && p.OnFailure == OnFailureHalt {
					held[t.Key] = p.Key
					changed = true
					break
				}
				if h := held[p.Key]; h != "" {
					held[t.Key] = h
					changed = true
					break
				}
			}
		}
	}
	skipped := map[string]bool{}
	for i := range trace {
		t := &trace[i]
		h := held[t.Key]
		if h == "" {
			continue
		}
		p := byKey[h]
		detail := fmt.Sprintf("%s %s", p.Key, p.Status)
		if p.ErrorKey != nil {
			detail = fmt.Sprintf("%s failed (%s)", p.Key, *p.ErrorKey)
		}
		if err := e.settleRow(ctx, tx, r, t, StatusSkipped, TaskError{Key: KeyPredecessorFailed, Detail: detail}, now); err != nil {
			return nil, err
		}
		skipped[t.Key] = true
	}
	return skipped, nil
}

func (e *Engine) replayAppend(ctx context.Context, scope, key string, canon []byte) (*Appended, bool, error) {
	now := e.nowMS()
	rec, err := store.LookupIdempotency(ctx, e.store.Reader(), scope, key, now-IdempotencyTTL.Milliseconds())
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
