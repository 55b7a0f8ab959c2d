package runs

import (
	"context"
	"fmt"

	"github.com/nexuskernel/nexus/core/steps"
	"github.com/nexuskernel/nexus/core/store"
)

// Steps are steps the step grammar accepted for a run (Tx.ParseSteps), not yet written.
type Steps struct {
	acc *accepted
}

// ParseSteps judges list, steps to append to r for a, by the step grammar (422 at the step's
// path); existing holds the keys r's rows already have, which a step's key may not repeat.
func (x *Tx) ParseSteps(ctx context.Context, a *Actor, r *store.Run, list []steps.Step, existing map[string]bool) (*Steps, error) {
	p := &stepReader{e: x.e, ctx: ctx, q: x.Tx, tx: x.Tx, actor: a, runner: deref(r.DefaultRunnerExecutorPublicID), skills: runSkillFacts(r), fx: x.fx}
	acc, problems := p.judge(steps.Envelope{Steps: list, Revision: r.Revision + 1, After: r.DeliverableTaskKey, Existing: existing})
	if err := steps.Refusal(problems, ""); err != nil {
		return nil, err
	}
	return &Steps{acc: acc}, nil
}

// AppendSteps appends s to r, whose rows are trace and whose keys are existing (409
// duplicate_task_key for a key among them): rows held behind a failed halt row are skipped (the
// append is their repair), the steps are written after the deliverable (or as a root when it has
// settled), the last becomes the deliverable at the next revision, and readiness runs. It answers
// the keys written; r carries the new revision.
func (x *Tx) AppendSteps(ctx context.Context, r *store.Run, trace []store.TaskTrace, s *Steps, existing map[string]bool) ([]string, error) {
	e, tx, fx := x.e, x.Tx, x.fx
	if err := steps.DuplicateKey(s.acc.checked, existing, ""); err != nil {
		return nil, err
	}
	prev := r.DeliverableTaskKey
	deliverable, err := store.TaskByKey(ctx, tx, r.ID, prev)
	if err != nil {
		return nil, err
	}
	now := e.nowMS()
	skipped, err := e.skipHeld(ctx, tx, fx, r, trace, now)
	if err != nil {
		return nil, err
	}
	// A deliverable settled before the append, or skipped by it just now, is read, not
	// waited on: the first step is a root.
	first := prev
	if Terminal(deliverable.Status) || skipped[prev] {
		first = ""
	}
	keys, _, err := e.insertSteps(ctx, tx, r, s.acc.list, first, now)
	if err != nil {
		return nil, err
	}
	rev := r.Revision + 1
	revise := store.ReviseRun{ID: r.ID, Revision: rev, Deliverable: keys[len(keys)-1], At: now}
	if r.Status == RunNeedsAttention {
		revise.Status = RunRunning
		r.Status = RunRunning
	}
	if err := revise.Exec(ctx, tx); err != nil {
		return nil, err
	}
	r.Revision, r.DeliverableTaskKey = rev, keys[len(keys)-1]
	return keys, e.advance(ctx, tx, x.fx, r)
}

// skipHeld settles every row held behind a failed halt row skipped (predecessor_failed): it
// could never run, and the append is the repair.
func (e *Engine) skipHeld(ctx context.Context, tx *store.Tx, fx *effects, r *store.Run, trace []store.TaskTrace, now int64) (map[string]bool, error) {
	byKey := map[string]*store.TaskTrace{}
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
			for _, k := range AfterKeys(t) {
				p := byKey[k]
				if p == nil {
					continue
				}
				if FailedStatus(p.Status) && p.OnFailure == OnFailureHalt {
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
		if err := e.settleRow(ctx, tx, fx, r, t, failAs(StatusSkipped, TaskError{Key: KeyPredecessorFailed, Detail: detail}, now)); err != nil {
			return nil, err
		}
		skipped[t.Key] = true
	}
	return skipped, nil
}
