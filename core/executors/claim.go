package executors

import (
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/nexuskernel/nexus/core/events"
	"github.com/nexuskernel/nexus/core/identity"
	"github.com/nexuskernel/nexus/core/refusal"
	"github.com/nexuskernel/nexus/core/runs"
	"github.com/nexuskernel/nexus/core/store"
)

// ClaimAnswer is the answer of claim and extend (docs/api.md#the-executor-plane): the row and the
// claim.
type ClaimAnswer struct {
	Task  *Row     `json:"task"`
	Claim ClaimDoc `json:"claim"`
}

// ClaimDoc is a held claim: its token (shown to its claimant only), generation and deadline.
type ClaimDoc struct {
	ClaimToken string `json:"claim_token"`
	Generation int64  `json:"generation"`
	DeadlineAt string `json:"deadline_at"`
}

// ClaimState is the claim read's answer (docs/api.md#the-executor-plane).
type ClaimState struct {
	Claim ClaimStateDoc `json:"claim"`
}

// ClaimStateDoc says whether a claim still stands.
type ClaimStateDoc struct {
	Active     bool    `json:"active"`
	Generation int64   `json:"generation"`
	DeadlineAt *string `json:"deadline_at"`
}

func notFoundRun(runID string) error {
	return refusal.Newf(refusal.NotFound, CodeNotFound, "No run %s in this executor's workspace.", runID)
}

func conflict(code, format string, args ...any) *refusal.Error {
	return refusal.Newf(refusal.Conflict, code, format, args...)
}

// errNoTask is row 1 of every door's checks for a task key that names nothing.
func errNoTask(key string) error {
	return refusal.Newf(refusal.NotFound, CodeNotFound, "No task %s in this run.", key)
}

// lookup finds the run in the executor's workspace and its row by key (row 1 of every door's
// checks): anything else is 404 not_found. It reads without locks.
func (s *Service) lookup(ctx context.Context, q store.Querier, ex *identity.Executor, runID, key string) (*store.Run, *store.Task, error) {
	if !store.IsPublicID(runID) {
		return nil, nil, notFoundRun(runID)
	}
	run, err := store.RunByPublicID(ctx, q, ex.WorkspaceID, runID)
	if errors.Is(err, store.ErrNotFound) {
		return nil, nil, notFoundRun(runID)
	}
	if err != nil {
		return nil, nil, err
	}
	if !validKey(key) {
		return nil, nil, errNoTask(key)
	}
	t, err := store.TaskByKey(ctx, q, run.ID, key)
	if errors.Is(err, store.ErrNotFound) {
		return nil, nil, errNoTask(key)
	}
	if err != nil {
		return nil, nil, err
	}
	return run, t, nil
}

// lockRow is lookup under the run's lock and the row's, in that order
// (docs/development.md#how-the-kernel-runs-work): the doors that settle or move a row find it and
// lock it in the one transaction that changes it.
func lockRow(ctx context.Context, tx *store.Tx, ex *identity.Executor, runID, key string) (*store.Run, *store.Task, error) {
	if !store.IsPublicID(runID) {
		return nil, nil, notFoundRun(runID)
	}
	if !validKey(key) {
		// The run's 404 comes before the key's.
		if _, err := store.RunByPublicID(ctx, tx, ex.WorkspaceID, runID); err != nil {
			return nil, nil, runMissing(err, runID)
		}
		return nil, nil, errNoTask(key)
	}
	run, t, err := store.LockRunAndTask(ctx, tx, ex.WorkspaceID, runID, key)
	switch {
	case run == nil && err != nil:
		return nil, nil, runMissing(err, runID)
	case errors.Is(err, store.ErrNotFound):
		return nil, nil, errNoTask(key)
	}
	return run, t, err
}

// runMissing is the door's answer to a failed read of the run: 404 for an unknown run.
func runMissing(err error, runID string) error {
	if errors.Is(err, store.ErrNotFound) {
		return notFoundRun(runID)
	}
	return err
}

// addressedHere is row 2 of every door's checks: the row is addressed to this executor, or to a
// pool and this executor is a tool provider. A kernel tool has no addressee, so its rows are
// never addressed here, whatever token is sent.
func addressedHere(ex *identity.Executor, t *store.Task) error {
	ok := false
	switch {
	case t.AddressedRole == nil:
	case t.AddressedExecutorPublicID != nil:
		ok = *t.AddressedExecutorPublicID == ex.PublicID
	default:
		ok = *t.AddressedRole == RoleToolProvider && ex.Kind == RoleToolProvider
	}
	if !ok {
		return conflict(CodeNotAddressedHere, "Task %s is not addressed to this executor.", t.Key)
	}
	return nil
}

// claimedElsewhere is the first check after lookup on the claim read, extend and commit: a row
// whose current (or, once settled, last) claim another executor holds answers 404 not_found,
// word for word as a key that names nothing, whatever token is sent. A claim is its claimant's
// alone: a second member of a tool-provider pool holding the claimant's token learns nothing of
// the row, not even that it exists. The kernel's own claims name no executor; their rows answer
// not_addressed_here as before.
func claimedElsewhere(ex *identity.Executor, t *store.Task) error {
	if by := t.ClaimedBy.Executor(); by != "" && by != ex.PublicID {
		return errNoTask(t.Key)
	}
	return nil
}

func isPoolRow(t *store.Task) bool {
	return t.AddressedRole != nil && *t.AddressedRole == RoleToolProvider && t.AddressedExecutorPublicID == nil
}

func pastDeadline(t *store.Task, now int64) bool { return t.DeadlineAt != nil && now >= *t.DeadlineAt }

// tokenIs reports whether token is the row's current (or, once settled, last) claim token.
func tokenIs(t *store.Task, token string) bool {
	return token != "" && len(t.ClaimTokenHash) > 0 && subtle.ConstantTimeCompare(store.HashClaimToken(token), t.ClaimTokenHash) == 1
}

// expire applies the expiry rule to a row whose deadline passed, in its own engine transaction
// under the run's lock: the doors apply it before they answer for a row whose deadline passed.
func (s *Service) expire(ctx context.Context, runID, taskID int64) error {
	return s.engine.Write(ctx, func(x *runs.Tx) error {
		run, t, err := x.LockRow(ctx, runID, taskID)
		if err != nil {
			return err
		}
		if pastDeadline(t, x.NowMS()) {
			return x.Expire(ctx, run, t)
		}
		return nil
	})
}

// definitionChange is a pinned call whose claimant announces another definition than the pin.
type definitionChange struct {
	runID, taskID         int64
	tool, pinned, current string
}

// errDefinitionChanged ends a claim's transaction when the claimant's own definition of a pinned
// call's tool is not the pinned one (docs/agent-tools.md#pinned-imports): the row then fails in an
// engine transaction under the run's lock, which a claim does not take.
var errDefinitionChanged = errors.New("executors: the claimant's definition is not the pinned one")

// failChanged fails a pinned call's row tool_definition_changed, naming the tool, the claimant
// and both digests, unless it settled meanwhile.
func (s *Service) failChanged(ctx context.Context, c *definitionChange, executor string) error {
	current := c.current
	if current == "" {
		current = "none recorded (the executor has not announced since digests were stored)"
	}
	detail := fmt.Sprintf("executor %s announces %s with definition %s; the call is pinned to %s (repin with nexus agent configure --repin once the new definition is trusted)",
		executor, c.tool, current, c.pinned)
	return s.engine.Write(ctx, func(x *runs.Tx) error {
		run, t, err := x.LockRow(ctx, c.runID, c.taskID)
		if err != nil {
			return err
		}
		if t.ClaimedAt != nil {
			return nil // another member of the pool claimed it meanwhile
		}
		return x.Fail(ctx, run, t, runs.TaskError{Key: runs.KeyToolDefinitionChanged, Detail: detail})
	})
}

// errPastDeadline ends a claim's transaction when the row's deadline passed: the expiry rule
// then settles it in an engine transaction under the run's lock, which a claim does not take.
var errPastDeadline = errors.New("executors: the row passed its deadline")

// Claim takes the row for the current generation (docs/api.md#the-executor-plane), its checks in
// order: 404 not_found, not_addressed_here, not_claimable_kind, task_not_claimable (the expiry rule
// applied first to a row past its deadline), already_claimed, not_eligible, task_not_claimable for
// a pinned call whose claimant announces another definition (the row then fails
// tool_definition_changed), not_authorized. On
// success the generation increments, a fresh nxc_ token is minted (only its SHA-256 is stored) and
// the clock restarts. The claim locks only the task row, through the shared claim primitive, and
// commits synchronously: its token leaves the process. An HTTP executor's claim belongs to no
// instance of the server: it commits through any of them, and its deadline alone ends it.
func (s *Service) Claim(ctx context.Context, ex *identity.Executor, runID, key string) (*ClaimAnswer, error) {
	return s.claim(ctx, ex, runID, key, "")
}

// claim is Claim recording instance as the claim's holder (store.ClaimSpec.Instance): the plugin
// host's claims name the instance whose host holds them, so that the survivors release them when
// it dies (docs/operations.md#instance-liveness-and-takeover); "" for an HTTP executor's.
func (s *Service) claim(ctx context.Context, ex *identity.Executor, runID, key, instance string) (*ClaimAnswer, error) {
	if err := s.claims.allow(ex.ID); err != nil {
		return nil, err
	}
	if !store.IsPublicID(runID) {
		return nil, notFoundRun(runID)
	}
	if !validKey(key) {
		return nil, errNoTask(key)
	}
	var ans *ClaimAnswer
	var claimed events.TaskClaimed
	var expiredRun, expiredTask int64
	var changed *definitionChange
	err := s.store.Write(ctx, func(tx *store.Tx) error {
		ans, changed = nil, nil
		// The run read without its lock and the row under its own, in one statement.
		run, t, creatorIn, err := store.LockTaskOfRun(ctx, tx, ex.WorkspaceID, runID, key)
		if errors.Is(err, store.ErrNotFound) {
			if run == nil {
				return notFoundRun(runID)
			}
			return errNoTask(key)
		}
		if err != nil {
			return err
		}
		if err := addressedHere(ex, t); err != nil {
			return err
		}
		if t.Kind != runs.KindTool {
			return conflict(CodeNotClaimableKind, "Task %s is not a tool call.", key)
		}
		now := s.nowMS()
		switch {
		case t.Status != runs.StatusDispatched:
			return conflict(CodeTaskNotClaimable, "Task %s is %s; only a dispatched row is claimed.", key, t.Status)
		case run.Status != runs.RunRunning:
			return conflict(CodeTaskNotClaimable, "The run is %s; only a running run's rows are claimed.", run.Status)
		case pastDeadline(t, now):
			expiredRun, expiredTask = run.ID, t.ID
			return errPastDeadline
		case t.ClaimedAt != nil:
			return conflict(CodeAlreadyClaimed, "Task %s is already claimed (generation %d).", key, t.ClaimGeneration)
		}
		if isPoolRow(t) {
			digest, ok, err := store.ServedDigest(ctx, tx, ex.ID, deref(t.ToolName))
			if err != nil {
				return err
			}
			if !ok {
				return conflict(CodeNotEligible, "This executor no longer announces %s.", deref(t.ToolName))
			}
			if t.DefinitionPin != nil && digest != *t.DefinitionPin {
				changed = &definitionChange{runID: run.ID, taskID: t.ID, tool: deref(t.ToolName), pinned: *t.DefinitionPin, current: digest}
				return errDefinitionChanged
			}
		}
		if !creatorIn {
			return conflict(CodeNotAuthorized, "The run's creator no longer belongs to this workspace.")
		}
		claimedBy := store.ExecutorClaimant(ex.PublicID)
		c, err := store.ClaimFirst(ctx, tx, store.ClaimSpec{Runnable: store.DispatchedUnclaimed(t.ID),
			Now: now, DefaultTimeoutMS: runs.ToolParkDefault.Milliseconds(), ClaimedBy: claimedBy, Instance: instance})
		if err != nil {
			return err
		}
		if c == nil {
			return conflict(CodeAlreadyClaimed, "Task %s is already claimed.", key)
		}
		t.ClaimGeneration, t.ClaimTokenHash, t.ClaimedBy, t.ClaimedAt, t.DeadlineAt = c.Generation, c.TokenHash, &claimedBy, &now, &c.DeadlineAt
		ans = &ClaimAnswer{Task: rowOf(t, run.PublicID, run.WorkspacePublicID, run.ConversationPublicID),
			Claim: ClaimDoc{ClaimToken: c.Token, Generation: c.Generation, DeadlineAt: store.FormatMillis(c.DeadlineAt)}}
		claimed = events.TaskClaimed{Scope: events.Scope{Workspace: run.WorkspacePublicID, Run: run.PublicID, Conversation: deref(run.ConversationPublicID)},
			Row: events.Row{TaskKey: t.Key, TaskKind: t.Kind, ToolName: deref(t.ToolName)}, Executor: ex.PublicID, Generation: c.Generation}
		return nil
	})
	if err == nil {
		s.engine.Announce(claimed)
	}
	if errors.Is(err, errDefinitionChanged) {
		if err := s.failChanged(ctx, changed, ex.PublicID); err != nil {
			return nil, err
		}
		return nil, conflict(CodeTaskNotClaimable, "Task %s failed %s: this executor's definition of %s is not the pinned one.",
			key, runs.KeyToolDefinitionChanged, changed.tool)
	}
	if errors.Is(err, errPastDeadline) {
		if err := s.expire(ctx, expiredRun, expiredTask); err != nil {
			return nil, err
		}
		return nil, conflict(CodeTaskNotClaimable, "Task %s passed its deadline.", key)
	}
	return ans, err
}

// ClaimRead tells a claimant whether its claim still stands (docs/api.md#the-executor-plane): 404
// not_found (also for a row another executor claimed), not_addressed_here, 400 parameter_missing
// without a token, not_claimant for a token that is not the row's current (or, once settled, last)
// one. It never renews anything.
func (s *Service) ClaimRead(ctx context.Context, ex *identity.Executor, runID, key, token string) (*ClaimState, error) {
	if err := s.claimReads.allow(ex.ID); err != nil {
		return nil, err
	}
	_, t, err := s.lookup(ctx, s.store.Reader(), ex, runID, key)
	if err != nil {
		return nil, err
	}
	if err := claimedElsewhere(ex, t); err != nil {
		return nil, err
	}
	if err := addressedHere(ex, t); err != nil {
		return nil, err
	}
	if token == "" {
		return nil, refusal.New(refusal.BadRequest, CodeParameterMissing, "The Claim-Token header is required.").With("path", "Claim-Token")
	}
	if !tokenIs(t, token) {
		return nil, conflict(CodeNotClaimant, "The token is not task %s's claim token.", key)
	}
	return &ClaimState{Claim: ClaimStateDoc{
		Active:     t.Status == runs.StatusDispatched && !pastDeadline(t, s.nowMS()),
		Generation: t.ClaimGeneration, DeadlineAt: optTime(t.DeadlineAt),
	}}, nil
}

// ExtendRequest is one extension of a held claim (docs/api.md#the-executor-plane): the
// executor, the row, the claim token and the budget asked for, decoded by the door.
type ExtendRequest struct {
	Executor   *identity.Executor
	RunID      string
	TaskKey    string
	ClaimToken string
	// TimeoutMS is the budget asked for, at least 1; math.MaxInt64 stands for an integer
	// beyond int64, which is far beyond every bound.
	TimeoutMS int64
	// Invalid is the refusal of the body's own rules (its shape and keys, then claim_token,
	// then timeout_ms, each absent or mistyped), found when the door decoded it: Extend answers
	// it after the row's lookup and addressing, where the documented order puts the body.
	Invalid error
}

// frozenTimeout reads the timeout_ms an announcement froze into the row's profile; 0 when none.
func frozenTimeout(t *store.Task) (int64, error) {
	var p struct {
		TimeoutMS int64 `json:"timeout_ms"`
	}
	if t.EffectProfile != nil {
		if err := json.Unmarshal([]byte(*t.EffectProfile), &p); err != nil {
			return 0, fmt.Errorf("executors: the effect profile of %s: %w", t.Key, err)
		}
	}
	return p.TimeoutMS, nil
}

// Extend moves a claimed row's deadline to now + timeout_ms (docs/api.md#the-executor-plane), its
// checks in order: 404 not_found (also for a row another executor claimed), not_addressed_here,
// the body's 400 parameter_missing and 422 invalid_timeout_ms (req.Invalid), not_extendable (the
// expiry rule applied first to a row past its deadline), not_claimant, extension_too_long (over an
// hour, or over the timeout_ms frozen in the row's profile). The row's timeout_ms and the token
// are unchanged.
func (s *Service) Extend(ctx context.Context, req *ExtendRequest) (*ClaimAnswer, error) {
	ex, runID, key := req.Executor, req.RunID, req.TaskKey
	var ans *ClaimAnswer
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
		now := x.NowMS()
		switch {
		case t.Status != runs.StatusDispatched:
			refused = conflict(CodeNotExtendable, "Task %s is %s; only a claimed, dispatched row is extended.", key, t.Status)
			return nil
		case t.ClaimedAt == nil:
			refused = conflict(CodeNotExtendable, "Task %s is not claimed.", key)
			return nil
		case pastDeadline(t, now):
			refused = conflict(CodeNotExtendable, "Task %s passed its deadline.", key)
			// The expiry rule settles the row, and that commits with this refusal.
			return x.Expire(ctx, run, t)
		}
		if !tokenIs(t, req.ClaimToken) {
			refused = conflict(CodeNotClaimant, "The token is not task %s's current claim token.", key)
			return nil
		}
		limit := MaxExtension.Milliseconds()
		f, err := frozenTimeout(t)
		if err != nil {
			return err
		}
		if f > 0 && f < limit {
			limit = f
		}
		if req.TimeoutMS > limit {
			refused = conflict(CodeExtensionTooLong, "An extension is at most %d ms for task %s.", limit, key).With("path", "timeout_ms")
			return nil
		}
		deadline := now + req.TimeoutMS
		gen := t.ClaimGeneration
		extend := store.Extend{ID: t.ID, Deadline: deadline, From: runs.StatusDispatched, Claim: store.Fence{Generation: gen, TokenHash: t.ClaimTokenHash}}
		ok, err := extend.Exec(ctx, x.Tx)
		if err != nil {
			return err
		}
		if !ok {
			return fmt.Errorf("executors: extend of %s lost its row under the lock", key)
		}
		t.DeadlineAt = &deadline
		ans = &ClaimAnswer{Task: rowOf(t, run.PublicID, run.WorkspacePublicID, run.ConversationPublicID),
			Claim: ClaimDoc{ClaimToken: req.ClaimToken, Generation: gen, DeadlineAt: store.FormatMillis(deadline)}}
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
