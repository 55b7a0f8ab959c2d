package executors

import (
	"context"
	"strings"

	"github.com/nexuskernel/nexus/core/envelope"
	"github.com/nexuskernel/nexus/core/identity"
	"github.com/nexuskernel/nexus/core/refusal"
	"github.com/nexuskernel/nexus/core/runs"
	"github.com/nexuskernel/nexus/core/store"
	"github.com/nexuskernel/nexus/core/uploads"
)

// CommitAnswer is the commit's answer (docs/api.md#the-executor-plane): the row as it now stands,
// and whether this commit settled it (false for an idle repeat, and when the deadline won).
type CommitAnswer struct {
	Task    *Row `json:"task"`
	Applied bool `json:"applied"`
}

// CommitRequest is one commit of a claimed row (docs/api.md#the-executor-plane): the executor,
// the row, the claim token and the result as submitted. The HTTP door decodes its body into one;
// the plugin host's plane (PluginPlane) builds one from a plugin's typed result. Either way the
// envelope is judged once, by envelope.Validate, at its place in the commit's checks.
type CommitRequest struct {
	Executor   *identity.Executor
	RunID      string
	TaskKey    string
	ClaimToken string
	// Result is the result as submitted; nil is an empty one.
	Result *envelope.Submission
	// Invalid is the refusal of the body's own rules (its shape, its keys, claim_token's type
	// and presence), found when the door decoded it: Commit answers it after the row's lookup
	// and addressing, where the documented order puts the body.
	Invalid error
}

// Commit answers the row once (docs/api.md#the-executor-plane), its checks in order: 404 not_found
// (also for a row another executor claimed, whatever token is sent); not_addressed_here (before any
// token: a kernel tool row answers it whatever is sent); the body's 400 parameter_invalid and
// parameter_missing (req.Invalid: the claim token and the result's keys are all it may carry);
// task_not_running before dispatch; an idle 200 for a settled row and its last claim's token; stale_claim; an idle 200 when the deadline passed (the expiry
// rule settles the row and the content is discarded); the envelope's grammar refusals, after which
// the park stands; result_unstorable, which closes the park as failed at once; otherwise the row
// settles with the stored result, its links' uploads are bound to it, and its dependents are
// re-evaluated, all in one transaction.
func (s *Service) Commit(ctx context.Context, req *CommitRequest) (*CommitAnswer, error) {
	ex, runID, key, token := req.Executor, req.RunID, req.TaskKey, req.ClaimToken
	sub := req.Result
	if sub == nil {
		sub = &envelope.Submission{}
	}
	var ans *CommitAnswer
	var refused error
	err := s.engine.Write(ctx, func(x *runs.Tx) error {
		ans, refused = nil, nil
		run, t, err := lockRow(ctx, x.Tx, ex, runID, key)
		if err != nil {
			return err
		}
		if err := claimedElsewhere(ex, t); err != nil {
			return err
		}
		if err := addressedHere(ex, t); err != nil {
			return err
		}
		if req.Invalid != nil {
			return req.Invalid
		}
		idle := func() error {
			if t, err = store.TaskByID(ctx, x.Tx, t.ID); err != nil {
				return err
			}
			ans = &CommitAnswer{Task: rowOf(t, run.PublicID, run.WorkspacePublicID, run.ConversationPublicID)}
			return nil
		}
		switch {
		case t.Status == runs.StatusWaiting || t.Status == runs.StatusNeedsApproval:
			refused = conflict(CodeTaskNotRunning, "Task %s has not been dispatched yet.", key)
			return nil
		case runs.Terminal(t.Status) && tokenIs(t, token):
			return idle()
		case runs.Terminal(t.Status), t.ClaimedAt == nil, !tokenIs(t, token):
			refused = conflict(CodeStaleClaim, "The token is not task %s's current claim.", key)
			return nil
		case pastDeadline(t, x.NowMS()):
			// The deadline wins: the row settles by the expiry rule and the content is dropped.
			if err := x.Expire(ctx, run, t); err != nil {
				return err
			}
			return idle()
		}
		res, err := envelope.Validate(sub, s.ownership(ctx, x.Tx, ex, run, t))
		switch {
		case envelope.IsUnstorable(err):
			// A result the store cannot keep is a failed outcome, not an open park.
			if err := x.Settle(ctx, run, t, runs.ToolSettlement{Status: runs.StatusFailed,
				Error:      &runs.TaskError{Key: envelope.UnstorableErrorKey, Detail: envelope.UnstorableDetail},
				Generation: t.ClaimGeneration, TokenHash: t.ClaimTokenHash}); err != nil {
				return err
			}
			settled(t, runs.ToolSettlement{Status: runs.StatusFailed, Error: &runs.TaskError{Key: envelope.UnstorableErrorKey, Detail: envelope.UnstorableDetail}}, x.NowMS())
			refused = refusal.New(refusal.Unprocessable, CodeResultUnstorable, envelope.UnstorableClosedMessage).
				With("task", rowOf(t, run.PublicID, run.WorkspacePublicID, run.ConversationPublicID))
			return nil
		case err != nil:
			// A grammar refusal: nothing is stored, the claim and the deadline stand.
			return err
		}
		media, err := s.mediaOf(ctx, x.Tx, res.Uploads)
		if err != nil {
			return err
		}
		output := res.Output(func(id string) bool { return media[strings.ToLower(id)] })
		set := runs.ToolSettlement{Status: runs.StatusCompleted, IsError: res.IsError, Output: output,
			Content: res.ContentJSON(), StructuredContent: res.StructuredContent, Title: res.Title, Metadata: res.Metadata,
			Generation: t.ClaimGeneration, TokenHash: t.ClaimTokenHash}
		if res.Outcome == envelope.OutcomeFailed {
			set.Status = runs.StatusFailed
			set.Error = &runs.TaskError{Key: runs.KeyToolFailed}
			if d, ok := envelope.FailureDetail(output); ok {
				set.Error.Detail = d
			}
		}
		if len(res.Uploads) > 0 {
			if err := uploads.Bind(ctx, x.Tx, uploads.Target{Kind: uploads.TargetTaskResult, ID: t.ID, WorkspaceID: run.WorkspaceID},
				res.Uploads, s.engine.Now()); err != nil {
				return err
			}
		}
		if err := x.Settle(ctx, run, t, set); err != nil {
			return err
		}
		settled(t, set, x.NowMS())
		ans = &CommitAnswer{Task: rowOf(t, run.PublicID, run.WorkspacePublicID, run.ConversationPublicID), Applied: true}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if refused != nil {
		return nil, refused
	}
	return ans, nil
}

// ownership is the commit's envelope.UploadOwnership (docs/api.md#the-result-envelope): the
// executor's own complete captures, plus, when the row owns child operations, uploads already bound
// to those children's settled results. Both lock what they answer until the transaction ends.
func (s *Service) ownership(ctx context.Context, tx *store.Tx, ex *identity.Executor, run *store.Run, t *store.Task) envelope.UploadOwnership {
	return func(ids []string) ([]string, error) {
		own, err := uploads.OwnedCaptures(ctx, tx, ex.ID, ids)
		if err != nil || len(own) == len(ids) {
			return own, err
		}
		children, err := store.SettledChildren(ctx, tx, run.ID, t.Key)
		if err != nil || len(children) == 0 {
			return own, err
		}
		bound, err := uploads.BoundToResults(ctx, tx, children, ids)
		if err != nil {
			return nil, err
		}
		return append(own, bound...), nil
	}
}

// mediaOf answers, for the uploads a result links, which are media by their detected type.
func (s *Service) mediaOf(ctx context.Context, q store.Querier, ids []string) (map[string]bool, error) {
	out := map[string]bool{}
	if len(ids) == 0 || s.uploads == nil {
		return out, nil
	}
	found, err := s.uploads.Lookup(ctx, q, ids)
	if err != nil {
		return nil, err
	}
	for id, u := range found {
		out[strings.ToLower(id)] = u.IsMedia()
	}
	return out, nil
}

// settled brings the locked row up to what a settle wrote, so that the answer needs no re-read.
func settled(t *store.Task, s runs.ToolSettlement, now int64) {
	t.Status = s.Status
	t.CompletedAt = &now
	if s.Error != nil {
		key, detail := s.Error.Key, s.Error.Detail
		t.ErrorKey = &key
		t.ErrorDetail = nil
		if detail != "" {
			t.ErrorDetail = &detail
		}
	}
}
