package plugins

import (
	"context"
	"errors"
	"fmt"
	"time"
	"unicode/utf8"

	"github.com/nexuskernel/nexus/sdk/announce"
	"github.com/nexuskernel/nexus/sdk/memory"
	"github.com/nexuskernel/nexus/sdk/plugin"
	"github.com/nexuskernel/nexus/sdk/refusal"
	"github.com/nexuskernel/nexus/sdk/toolprovider"
)

// Bounds of what the host commits for a plugin (docs/development.md#the-plugin-host).
const (
	// MaxCaptures bounds the captures of one result: a result links a handful of files; more
	// is a plugin bug, not a use.
	MaxCaptures = 16
	// MaxCaptureBytes bounds the captures of one result in total: 8 MiB fits the message bound
	// with a full result beside it.
	MaxCaptureBytes = 8 << 20
	// MaxFailureDetailBytes clips a failure detail as docs/api.md#the-executor-plane clips a commit's.
	MaxFailureDetailBytes = 1024
	// settleTimeout bounds a commit or an expiry made after the call's own context ended.
	settleTimeout = 10 * time.Second
)

// Causes of a settlement at once, before the claim's deadline (docs/plugins.md#crashes): the row's
// detail says "the claim at <time> by executor <id> ended before its deadline: <cause>".
const (
	// ExpiredPluginExited: the plugin process exited (or was killed) during the call.
	ExpiredPluginExited = "the plugin exited during the call"
	// ExpiredAnswerLost: the plugin reported the call's answer lost (protocol 1.1).
	ExpiredAnswerLost = "the plugin lost the call's answer"
	// ExpiredReplaysSpent: a replayable call's answer was lost on every attempt; %d is how many.
	ExpiredReplaysSpent = "the plugin lost the call's answer on each of %d attempts"
)

// CaptureBoundDetail is the failure detail of a result over the capture bounds.
const CaptureBoundDetail = "captures over the bound: at most 16 files and 8 MiB"

// call is one claimed row in flight.
type call struct {
	claim      Claim
	ctx        context.Context
	cancel     context.CancelFunc
	replayable bool
}

func callKey(runID, taskKey string) string { return runID + "\x00" + taskKey }

func (s *supervisor) claiming() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.state == StateReady && s.ctx.Err() == nil
}

func (s *supervisor) running(runID, taskKey string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.inflight[callKey(runID, taskKey)]
	return ok
}

func (s *supervisor) cancelCall(runID, taskKey string) {
	s.mu.Lock()
	c := s.inflight[callKey(runID, taskKey)]
	s.mu.Unlock()
	if c != nil {
		c.cancel()
	}
}

// begin records a claimed call and runs it. Its context is the host's, bounded by the claim's
// deadline: the call outlives its instance, so a replay can move to the next one.
func (s *supervisor) begin(c Claim, in *instance) {
	ctx, cancel := context.WithDeadline(s.h.ctx, c.DeadlineAt)
	cl := &call{claim: c, ctx: ctx, cancel: cancel, replayable: announce.Replayable(c.EffectProfile)}
	s.mu.Lock()
	s.inflight[callKey(c.RunID, c.TaskKey)] = cl
	s.mu.Unlock()
	go func() {
		defer func() {
			cancel()
			// The slot is free before the claim loop hears of it: a loop woken first would
			// count it taken and wait for the next call's end, or for the poll.
			<-s.slots
			s.mu.Lock()
			delete(s.inflight, callKey(c.RunID, c.TaskKey))
			s.setStateLocked(s.state) // wakes the claim loop and drains
			s.mu.Unlock()
		}()
		s.runCall(cl, in)
	}()
}

// runCall runs a call to its settlement (docs/plugins.md#crashes): committed once, replayed on the
// next instance after a crash when replayable, expired at once when not, or left to lapse. A
// lost answer (docs/plugins.md#protocol-11) is replayed on the same instance when replayable, up
// to the attempt bound, after which the row expires; a non-replayable one expires at once.
func (s *supervisor) runCall(c *call, in *instance) {
	owner := s
	for attempt := 1; ; attempt++ {
		start := time.Now()
		body, err := owner.invoke(c, in, attempt)
		outcome := "committed"
		switch {
		case err == nil:
			if owner.commit(c, body) {
				// The claim fence refused the result: the row's deadline passed, it was
				// cancelled, or this instance was declared dead and its claim released
				// (docs/operations.md#instance-liveness-and-takeover). Nothing was applied.
				outcome = "claim_lost"
			}
		case errors.Is(err, toolprovider.ErrOutcomeUnknown) && c.ctx.Err() == nil:
			// The call reached the tool and its answer was lost (protocol 1.1): settled as if
			// the plugin had crashed during it, without restarting the plugin.
			switch {
			case !c.replayable:
				outcome = "uncertain"
				owner.expire(c, ExpiredAnswerLost)
			case attempt >= s.h.timings.MaxAttempts:
				outcome = "expired" // the expiry rule settles a replayable row timed_out
				owner.expire(c, fmt.Sprintf(ExpiredReplaysSpent, attempt))
			default:
				owner.logCall(c, attempt, start, "answer lost; replaying")
				owner.mu.Lock()
				owner.counts.Replayed++
				owner.mu.Unlock()
				continue // on the same instance
			}
		case errors.Is(err, plugin.ErrPluginShutdown):
			switch {
			case !c.replayable:
				outcome = "expired"
				owner.expire(c, ExpiredPluginExited)
			case attempt >= s.h.timings.MaxAttempts:
				outcome = "lapsed" // the claim lapses; the sweep settles it timed_out
			default:
				next, sup, werr := owner.waitReady(c.ctx, in.generation)
				if werr != nil {
					outcome = "lapsed"
					break
				}
				owner.logCall(c, attempt, start, "replaying")
				sup.mu.Lock()
				sup.counts.Replayed++
				sup.mu.Unlock()
				in, owner = next, sup
				continue
			}
		default:
			outcome = "dropped" // cancelled or past the deadline: the deadline wins
		}
		owner.logCall(c, attempt, start, outcome)
		return
	}
}

func (s *supervisor) logCall(c *call, attempt int, start time.Time, outcome string) {
	s.logger.Debug("plugin call", "plugin", s.entry.Name, "executor", s.executorID, "run", c.claim.RunID,
		"task", c.claim.TaskKey, "tool", c.claim.ToolName, "attempt", attempt,
		"duration_ms", time.Since(start).Milliseconds(), "outcome", outcome)
}

// invoke runs one attempt (this host's count) on an instance and answers the commit body, or an
// error when nothing is to be committed (plugin.ErrPluginShutdown, toolprovider.ErrOutcomeUnknown, or the call's
// context ended).
func (s *supervisor) invoke(c *call, in *instance, attempt int) (CommitBody, error) {
	// The attempt the plugin hears counts the runs under earlier claims of the row too, which
	// instances that died holding them made.
	attempt += c.claim.priorRuns()
	if in.memory != nil {
		engine := &memory.Engine{Provider: in.memory}
		res, err := engine.Run(c.ctx, c.claim.ToolName, c.claim.ToolInput, c.claim.MemoryBindings, memory.RunOptions{Replay: attempt > 1})
		if err != nil {
			return CommitBody{}, err
		}
		return CommitBody{Outcome: OutcomeCompleted, Text: res.Text, IsError: res.IsError, Title: &res.Title, StructuredContent: res.StructuredContent}, nil
	}
	cl := c.claim
	res, err := in.tools.Call(c.ctx, toolprovider.Call{
		Tool: cl.ToolName, Input: cl.ToolInput, Deadline: cl.DeadlineAt,
		Scope: toolprovider.CallScope{
			WorkspaceID: cl.WorkspaceID, ConversationID: cl.ConversationID, RunID: cl.RunID, TaskKey: cl.TaskKey,
			ToolCallID: cl.ToolCallID, ToolAlias: cl.ToolAlias, MemoryBindings: cl.MemoryBindings,
		},
		Claim: toolprovider.ClaimInfo{ExecutorID: s.executorID, ClaimedAt: cl.ClaimedAt, Attempt: attempt, Replay: attempt > 1},
	})
	if err != nil {
		if errors.Is(err, plugin.ErrPluginShutdown) || errors.Is(err, toolprovider.ErrOutcomeUnknown) || c.ctx.Err() != nil {
			return CommitBody{}, err
		}
		return failedBody(s.failureDetail(cl.ToolName, err)), nil
	}
	return s.resultBody(c, res)
}

// failureDetail is the tool_failed detail of a Call error (docs/development.md#the-plugin-host).
func (s *supervisor) failureDetail(tool string, err error) string {
	var failed *toolprovider.FailedError
	var ce *toolprovider.CallError
	switch {
	case errors.As(err, &failed):
		return failed.Detail
	case errors.Is(err, toolprovider.ErrUnknownTool):
		return fmt.Sprintf("plugin %s does not serve %s", s.entry.Name, tool)
	case errors.As(err, &ce):
		return ce.Kind + ": " + ce.Message
	}
	return "internal: " + err.Error()
}

func failedBody(detail string) CommitBody {
	return CommitBody{Outcome: OutcomeFailed, FailureDetail: clipBytes(detail, MaxFailureDetailBytes)}
}

// clipBytes cuts s to at most n bytes without splitting a character.
func clipBytes(s string, n int) string {
	if len(s) <= n {
		return s
	}
	s = s[:n]
	for len(s) > 0 && !utf8.ValidString(s) {
		s = s[:len(s)-1]
	}
	return s
}

// uploadURIPrefix is how a committed link names an upload (docs/api.md#the-result-envelope).
const uploadURIPrefix = "nexus://uploads/"

// resultBody maps a tool result to the commit (docs/development.md#the-plugin-host): linked
// captures are staged as the executor's own and their links rewritten to the upload.
func (s *supervisor) resultBody(c *call, r toolprovider.Result) (CommitBody, error) {
	total := 0
	for _, cp := range r.Captures {
		total += len(cp.Data)
	}
	if len(r.Captures) > MaxCaptures || total > MaxCaptureBytes {
		return failedBody(CaptureBoundDetail), nil
	}
	body := CommitBody{Outcome: OutcomeCompleted, IsError: r.IsError, StructuredContent: r.Structured, Metadata: r.Metadata}
	if r.Title != "" {
		t := r.Title
		body.Title = &t
	}
	switch {
	case r.Blocks != nil:
		captures := map[string]toolprovider.Capture{}
		for _, cp := range r.Captures {
			captures[toolprovider.CaptureURI(cp.Ref)] = cp
		}
		staged := map[string]string{}
		body.Blocks = make([]toolprovider.Block, 0, len(r.Blocks))
		for _, b := range r.Blocks {
			if b.Text == nil && b.Link != nil {
				if cp, ok := captures[b.Link.URI]; ok {
					upload, done := staged[b.Link.URI]
					if !done {
						id, err := s.h.plane.StageCapture(c.ctx, s.executorID, cp.Filename, cp.Data)
						if err != nil {
							if c.ctx.Err() != nil {
								return CommitBody{}, c.ctx.Err()
							}
							return failedBody("staging capture " + cp.Ref + ": " + err.Error()), nil
						}
						upload, staged[b.Link.URI] = id, id
					}
					l := *b.Link
					l.URI = uploadURIPrefix + upload
					b = toolprovider.LinkBlock(l)
				}
			}
			// A block that is neither text nor a link goes as it is: the commit's grammar
			// refuses it invalid_content.
			body.Blocks = append(body.Blocks, b)
		}
	case r.Text != "":
		body.Text = r.Text
	}
	return body, nil
}

// commit commits the body once. A grammar refusal is committed as a failed outcome with the
// word, so the row settles tool_failed; result_unstorable has closed the park itself. It answers
// whether the claim was no longer held (ErrClaimLost): then nothing was committed.
func (s *supervisor) commit(c *call, body CommitBody) (lost bool) {
	ctx := c.ctx
	err := s.h.plane.Commit(ctx, s.executorID, c.claim, body)
	if r, ok := refusal.As(err); ok && r.Kind == refusal.Unprocessable && r.Code != CodeResultUnstorable && body.Outcome != OutcomeFailed {
		body = failedBody(r.Code + ": " + r.Message)
		err = s.h.plane.Commit(ctx, s.executorID, c.claim, body)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case err == nil && body.Outcome == OutcomeFailed:
		s.counts.Failed++
	case err == nil:
		s.counts.Completed++
		if body.IsError {
			s.counts.Errors++
		}
	case errors.Is(err, ErrClaimLost):
		return true
	default:
		s.logger.Warn("commit failed", "plugin", s.entry.Name, "run", c.claim.RunID, "task", c.claim.TaskKey, "error", err)
	}
	return false
}

// expire applies the expiry rule at once to a lost call: a non-replayable one settles
// uncertain, a replayable one (a lost answer past the attempt bound) timed_out.
func (s *supervisor) expire(c *call, cause string) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(c.ctx), settleTimeout)
	defer cancel()
	if err := s.h.plane.ExpireNow(ctx, s.executorID, c.claim, cause); err != nil {
		s.logger.Warn("expire failed", "plugin", s.entry.Name, "run", c.claim.RunID, "task", c.claim.TaskKey, "error", err)
		return
	}
	s.mu.Lock()
	s.counts.Expired++
	s.mu.Unlock()
}

// drain waits for in-flight calls: every call up to grace when all is set (shutdown); else
// non-replayable calls until they end (their own deadlines bound them) and replayable ones up
// to grace, after which killing the process sends them to a replay.
func (s *supervisor) drain(grace time.Duration, all bool) {
	deadline := time.Now().Add(grace)
	for {
		s.mu.Lock()
		n, blocking := len(s.inflight), 0
		for _, c := range s.inflight {
			if !c.replayable {
				blocking++
			}
		}
		ch := s.changed
		s.mu.Unlock()
		past := !time.Now().Before(deadline)
		if n == 0 || (past && (all || blocking == 0)) {
			return
		}
		wait := time.Until(deadline)
		if past {
			wait = time.Second
		}
		select {
		case <-ch:
		case <-time.After(wait):
		case <-s.h.ctx.Done():
			return
		}
	}
}
