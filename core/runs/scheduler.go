package runs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/nexuskernel/nexus/core/envelope"
	"github.com/nexuskernel/nexus/core/events"
	"github.com/nexuskernel/nexus/core/store"
)

// ClaimKernel claims one runnable kernel row (docs/development.md#how-the-kernel-runs-work: a
// model task, or a tool task without an addressee) with the shared claim primitive, or none.
func (e *Engine) ClaimKernel(ctx context.Context) (*store.Claimed, error) {
	return e.claim(ctx, store.KernelRunnable)
}

func (e *Engine) claim(ctx context.Context, runnable func(now int64) store.Runnable) (*store.Claimed, error) {
	now := e.nowMS()
	return e.store.ClaimOne(ctx, store.ClaimSpec{
		Runnable: runnable(now), Limit: 1, Now: now,
		DefaultTimeoutMS: e.cfg.ModelTimeout.Milliseconds(), ClaimedBy: store.KernelClaimant, Instance: e.inst.ID(), CountAttemptKind: KindModel,
		// Every effect of a kernel evaluation is a later synchronous write to the same
		// database, which makes the claim durable with it (see store.ClaimSpec.Relaxed); a
		// model round reads its row and run next, which the claim answers.
		Relaxed: true, WithRow: true,
	})
}

// Start runs the kernel workers, the sweeper and the wake-up subscription until ctx ends or
// Stop is called.
func (e *Engine) Start(ctx context.Context) error {
	// The instance is registered before any worker claims, so that each claim names a live one.
	if err := e.inst.Register(ctx); err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(ctx)
	stopRelay, err := e.relay(ctx)
	if err != nil {
		cancel()
		return err
	}
	e.stop = func() {
		cancel()
		stopRelay()
	}
	for i := 0; i < e.cfg.Workers; i++ {
		e.wg.Add(1)
		go e.worker(ctx)
	}
	e.wg.Add(2)
	go e.sweeper(ctx)
	go func() {
		defer e.wg.Done()
		e.inst.Run(ctx)
	}()
	return nil
}

// Stop ends the workers and the sweeper and waits for them; in-flight evaluations are
// abandoned and their rows settle by the expiry rule or a later attempt. The instance leaves the
// store declared dead, so another instance releases its claims at once.
func (e *Engine) Stop() {
	if e.stop == nil {
		return
	}
	e.stop()
	e.wg.Wait()
	e.stop = nil
	e.inst.Leave()
}

// newRelay has the engine's feed sent to the other instances from now on, on PostgreSQL
// (events.Relay on the store's notification channel), whether or not its workers run; nil on
// SQLite, which serves one instance.
func newRelay(s *store.Store, bus *events.Bus, log hclog.Logger) *events.Relay {
	if s.Dialect() != store.Postgres {
		return nil
	}
	channel := s.Channel(events.RelayChannel)
	r := events.NewRelay(bus, func(payload string) {
		s.NotifyLater(channel, payload, func(err error) { log.Warn("relaying events to the other instances failed", "error", err) })
	})
	r.Failed = func(err error) { log.Warn("an event from another instance was not read", "error", err) }
	return r
}

// relay hears the other instances' events, on PostgreSQL, and wakes this instance's workers for
// the kernel work they announce; it answers the function that stops both. On SQLite, which
// serves one instance, it only looks for work once.
func (e *Engine) relay(ctx context.Context) (stop func(), err error) {
	if e.relayed == nil {
		e.Kick(cap(e.kick))
		return func() {}, nil
	}
	work := e.bus.SubscribeKernelWork(e.inst.ID())
	stopSub, err := e.store.Subscribe(ctx, e.store.Channel(events.RelayChannel), e.relayed)
	if err != nil {
		work.Close()
		return nil, fmt.Errorf("runs: listen for the other instances' events: %w", err)
	}
	e.wg.Add(1)
	go e.hearKernelWork(ctx, work)
	return func() {
		stopSub()
		work.Close()
	}, nil
}

// hearKernelWork wakes a worker for each kernel row another instance made runnable, and every
// worker when the feed may have missed some (the listener reconnected).
func (e *Engine) hearKernelWork(ctx context.Context, work *events.Subscription) {
	defer e.wg.Done()
	for {
		select {
		case <-ctx.Done():
			return
		case <-work.Done():
			return
		case <-work.Wake():
		}
		evs, lost := work.Take()
		if lost {
			e.Kick(cap(e.kick))
			continue
		}
		e.Kick(len(evs))
	}
}

func (e *Engine) worker(ctx context.Context) {
	defer e.wg.Done()
	poll := time.NewTimer(0)
	defer poll.Stop()
	// A woken worker looks for a model round first: its claim is one statement, where a kernel
	// tool's claim opens the transaction that settles it, so a round's wake-up pays nothing for
	// the tool path. After each piece of work the other kind goes first, so neither starves.
	modelFirst := true
	for {
		worked := e.workOnce(ctx, modelFirst)
		if worked {
			modelFirst = !modelFirst
		} else {
			worked = e.workOnce(ctx, !modelFirst)
		}
		// After a piece of work one read over both kinds decides whether to claim again at once:
		// a kick may have gone to a worker that found its row's run locked, and a claim that finds
		// nothing would be a write on PostgreSQL. A failed read leaves it to the claims.
		if worked {
			if found, err := store.AnyRunnable(ctx, e.store.Reader(), store.KernelRunnable(e.nowMS())); found || err != nil {
				continue
			}
		}
		modelFirst = true
		if !poll.Stop() {
			select {
			case <-poll.C:
			default:
			}
		}
		poll.Reset(e.cfg.Poll)
		select {
		case <-ctx.Done():
			return
		case <-e.kick:
		case <-poll.C:
		}
	}
}

// workOnce runs one model round (model) or one kernel tool row (!model), and reports whether
// it found one.
func (e *Engine) workOnce(ctx context.Context, model bool) bool {
	if !model {
		ran, err := e.RunNextKernelTool(ctx)
		if err != nil && ctx.Err() == nil && !errors.Is(err, errLostClaim) {
			e.log.Error("kernel tool", "error", err)
		}
		return ran
	}
	c, err := e.claim(ctx, store.KernelRoundRunnable)
	if err != nil && ctx.Err() == nil {
		e.log.Error("kernel claim", "error", err)
	}
	if c == nil {
		return false
	}
	if e.onClaim != nil {
		e.onClaim(c)
	}
	if err := e.Evaluate(ctx, c); err != nil && ctx.Err() == nil && !errors.Is(err, errLostClaim) {
		e.log.Error("kernel evaluation", "task_id", c.ID, "key", c.Key, "error", err)
	}
	return true
}

// Evaluate runs one kernel row ClaimKernel claimed (with its row): a model round or a kernel tool.
func (e *Engine) Evaluate(ctx context.Context, c *store.Claimed) error {
	if c.Kind == KindModel {
		return e.evaluateModel(ctx, c)
	}
	return e.evaluateTool(ctx, c)
}

// errAbandoned rolls back an evaluation whose context ended: nothing of it lands, and the row
// follows the expiry rule.
var errAbandoned = errors.New("runs: evaluation abandoned")

// evaluateTool runs a kernel tool row inside the transaction that settles it, under the run's lock
// and the claim (docs/agent-tools.md#what-a-model-reads): a row settled meanwhile (stop, cancel,
// expiry) is left alone, a row whose deadline passed settles by the expiry rule instead, and the
// handler's own writes commit with the result.
func (e *Engine) evaluateTool(ctx context.Context, c *store.Claimed) error {
	err := e.write(ctx, func(tx *store.Tx, fx *effects) error {
		return e.evaluateToolTx(ctx, tx, fx, c)
	})
	if errors.Is(err, errAbandoned) {
		return nil
	}
	return err
}

// RunNextKernelTool claims one runnable kernel tool row and evaluates it in the same
// transaction that settles it. The claim still goes through the shared primitive (new
// generation, token hash, claimant, restarted clock), but it commits with the result: a kernel
// tool's every effect is a write to this database, so one commit instead of two halves the
// flushes, and a process that dies mid-call leaves the row unclaimed and runnable at once
// instead of parked until its deadline. It reports whether a row ran.
func (e *Engine) RunNextKernelTool(ctx context.Context) (bool, error) {
	// Most looks find nothing: they read without opening a write transaction, and a row made
	// runnable after the look kicks a worker once its transaction commits.
	if found, err := store.AnyRunnable(ctx, e.store.Reader(), store.KernelToolRunnable(e.nowMS())); err != nil || !found {
		return false, err
	}
	ran := false
	err := e.write(ctx, func(tx *store.Tx, fx *effects) error {
		ran = false
		now := e.nowMS()
		runID, ok, err := store.LockRunWithRunnable(ctx, tx, store.KernelToolRunnable(now))
		if err != nil || !ok {
			return err
		}
		got, err := store.Claim(ctx, tx, store.ClaimSpec{Runnable: store.KernelToolRunnable(now).OfRun(runID),
			Limit: 1, Now: now, DefaultTimeoutMS: ToolParkDefault.Milliseconds(), ClaimedBy: store.KernelClaimant, Instance: e.inst.ID()})
		if err != nil || len(got) == 0 {
			return err
		}
		ran = true
		if e.onClaim != nil {
			e.onClaim(&got[0])
		}
		return e.evaluateToolTx(ctx, tx, fx, &got[0])
	})
	if errors.Is(err, errAbandoned) {
		return false, nil
	}
	return ran, err
}

// evaluateToolTx runs a claimed kernel tool row in tx and settles it.
func (e *Engine) evaluateToolTx(ctx context.Context, tx *store.Tx, fx *effects, c *store.Claimed) error {
	run, err := store.LockRun(ctx, tx, c.RunID)
	if err != nil {
		return err
	}
	t, err := store.TaskByID(ctx, tx, c.ID)
	if err != nil {
		return err
	}
	if t.Status != StatusRunning || t.ClaimGeneration != c.Generation || Terminal(run.Status) {
		return nil
	}
	now := e.nowMS()
	if t.DeadlineAt != nil && now >= *t.DeadlineAt {
		return e.expire(ctx, tx, fx, run, t, now, "")
	}
	out, err := e.runKernel(ctx, tx, fx, run, t, c)
	if errors.Is(err, errDeadline) {
		// The handler outlived the row's clock: the expiry rule settles it, in this transaction.
		t.ClaimedAt, t.ClaimedBy = &now, new(store.KernelClaimant)
		return e.expire(ctx, tx, fx, run, t, e.nowMS(), "")
	}
	if err != nil {
		return err
	}
	if out.Place != nil {
		return e.place(ctx, tx, fx, run, t, c, out)
	}
	return e.settleKernel(ctx, tx, fx, run, &t.TaskTrace, c, out)
}

// settleKernel settles t, a claimed kernel tool row, with its outcome, under its claim c, then
// runs readiness.
func (e *Engine) settleKernel(ctx context.Context, tx *store.Tx, fx *effects, run *store.Run, t *store.TaskTrace, c *store.Claimed, out *KernelOutcome) error {
	var ok bool
	var err error
	if out.Failure != nil {
		fail := store.Fail{ID: c.ID, Status: StatusFailed, Error: store.Failure(*out.Failure), At: e.nowMS(), From: StatusRunning, Claim: fenceOf(c)}
		ok, err = fail.Exec(ctx, tx, nil)
	} else {
		r := out.Result
		if r == nil {
			r = &KernelResult{}
		}
		res := resultOf(r.Content, r.StructuredContent, r.Title, nil)
		res.IsError = &r.IsError
		settle := store.Settle{ID: c.ID, Status: StatusCompleted, Result: res, At: e.nowMS(), From: StatusRunning, Claim: fenceOf(c)}
		ok, err = settle.Exec(ctx, tx, nil)
	}
	if err != nil {
		return err
	}
	if !ok {
		return errLostClaim
	}
	if out.Failure != nil {
		fx.settledAs(run, t, StatusFailed, (*store.Failure)(out.Failure))
	} else {
		fx.settledAs(run, t, StatusCompleted, nil)
	}
	return e.advance(ctx, tx, fx, run)
}

// errDeadline is a handler that ran past its row's deadline while the instance lives.
var errDeadline = errors.New("runs: the kernel tool outlived its deadline")

// runKernel computes a kernel row's outcome in the settling transaction.
func (e *Engine) runKernel(ctx context.Context, tx *store.Tx, fx *effects, run *store.Run, t *store.Task, c *store.Claimed) (*KernelOutcome, error) {
	name := deref(t.ToolName)
	entry, ok := e.registry.Resolve(name)
	switch {
	case !ok:
		return &KernelOutcome{Failure: &TaskError{Key: KeyToolNotServed, Detail: name + " is not a kernel tool"}}, nil
	case e.kernel == nil:
		return &KernelOutcome{Failure: &TaskError{Key: KeyToolNotServed, Detail: "the kernel has no handler for " + name + " in this server"}}, nil
	}
	call := &KernelCall{
		RunID: run.ID, RunPublicID: run.PublicID, WorkspaceID: run.WorkspaceID, WorkspacePublicID: run.WorkspacePublicID,
		ConversationPublicID: deref(run.ConversationPublicID), MemoryPrincipal: memoryPrincipal(run),
		MemoryContext: json.RawMessage(run.MemoryContext), TaskKey: t.Key, ToolName: entry.Wire,
		Canonical: entry.Canonical, ToolAlias: deref(t.ToolAlias), Input: json.RawMessage(deref(t.ToolInput)),
		Attempt: c.Generation, Tx: tx, Engine: &Tx{e: e, Tx: tx, fx: fx, run: run},
	}
	if t.DeclaringTaskKey != nil {
		call.Round = roundReader(tx, run.ID, *t.DeclaringTaskKey)
	}
	callCtx, cancel := context.WithDeadline(ctx, timeOf(c.DeadlineAt))
	defer cancel()
	e.mu.Lock()
	e.cancels[c.ID] = cancel
	e.mu.Unlock()
	out, err := e.kernel.Run(callCtx, call)
	e.mu.Lock()
	delete(e.cancels, c.ID)
	e.mu.Unlock()
	if err != nil {
		switch {
		case ctx.Err() != nil:
			return nil, errAbandoned // the instance is stopping: roll back, the row stays runnable
		case callCtx.Err() != nil:
			return nil, errDeadline
		}
		return nil, fmt.Errorf("runs: kernel tool %s: %w", name, err)
	}
	if out == nil || (out.Result == nil && out.Failure == nil && out.Place == nil) {
		return nil, fmt.Errorf("runs: kernel tool %s answered no outcome", name)
	}
	return out, nil
}

// memoryPrincipal is the run's memory principal (docs/agent-tools.md#memory-and-skills): its
// answering agent when it has one (a conversation-hosted run, or a standalone run an agent
// created), else its creator.
func memoryPrincipal(run *store.Run) Member {
	if run.AnsweringAgentPublicID != nil {
		return Member{Kind: "agent", PublicID: *run.AnsweringAgentPublicID}
	}
	return Member{Kind: run.CreatedByKind, PublicID: run.CreatedByPublicID}
}

// resultOf is a plain-string result as stored: the identity case of the envelope (one text
// block), no body at all when blank, the structured value, title and metadata as given.
func resultOf(content string, structured json.RawMessage, title string, metadata json.RawMessage) store.Result {
	var r store.Result
	if content != "" {
		blocks := []envelope.Block{envelope.TextBlock(content)}
		if out := envelope.Output(blocks, nil); out != "" {
			r.Output, r.Content = out, jsonText(blocks)
		}
	}
	if structured != nil {
		r.StructuredContent = new(string(structured))
	}
	if title != "" {
		r.Title = &title
	}
	if metadata != nil {
		r.Metadata = new(string(metadata))
	}
	return r
}

// sweeper applies the expiry rule to rows whose deadline passed and forgets old idempotency
// keys (docs/development.md#how-the-kernel-runs-work).
func (e *Engine) sweeper(ctx context.Context) {
	defer e.wg.Done()
	tick := time.NewTicker(e.cfg.SweepInterval)
	defer tick.Stop()
	for {
		if _, err := e.Sweep(ctx); err != nil && ctx.Err() == nil {
			e.log.Error("sweep", "error", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// Sweep runs one sweeper pass and reports how many rows it settled or released.
func (e *Engine) Sweep(ctx context.Context) (int, error) {
	now := e.nowMS()
	var due []store.TaskRef
	err := e.store.Write(ctx, func(tx *store.Tx) error {
		if _, err := store.ForgetIdempotency(ctx, tx, now-IdempotencyTTL.Milliseconds()); err != nil {
			return err
		}
		var err error
		due, err = store.DueTasks(ctx, tx, now, SweepBatch)
		return err
	})
	if err != nil {
		return 0, err
	}
	n := 0
	for _, d := range due {
		err := e.write(ctx, func(tx *store.Tx, fx *effects) error {
			run, err := store.LockRun(ctx, tx, d.RunID)
			if err != nil {
				return err
			}
			t, err := store.LockTask(ctx, tx, d.ID)
			if err != nil {
				return err
			}
			if t.DeadlineAt == nil || *t.DeadlineAt > now || !live(t.Status) {
				return nil
			}
			n++
			return e.expire(ctx, tx, fx, run, t, now, "")
		})
		if err != nil {
			return n, err
		}
	}
	observed, err := e.observeWaits(ctx)
	if err != nil {
		return n + observed, err
	}
	conversations, err := e.conv.Sweep(ctx, e)
	if err != nil {
		return n + observed + conversations, err
	}
	taken, err := e.takeOver(ctx)
	return n + observed + conversations + taken, err
}

// expire applies the expiry rule to one row under the run's lock, then readiness; early, when set,
// is why the claim ends before its deadline (ExpiryFacts.Early).
func (e *Engine) expire(ctx context.Context, tx *store.Tx, fx *effects, run *store.Run, t *store.Task, now int64, early string) error {
	by := "kernel"
	if id := t.ClaimedBy.Executor(); id != "" {
		by = "executor " + id
	}
	return e.expireClaim(ctx, tx, fx, run, t, now, by, false, early)
}

// releaseToExecutors ends a dispatched row's claim without settling it (store.ReleaseClaim): the
// call a dead instance's plugin held is claimable again at once, its park's clock restarted, and
// the row's executors hear work_available, so that the survivors' copies of the plugin claim it
// (docs/operations.md#instance-liveness-and-takeover). No work_canceled is sent: the call's holder
// is gone, and the survivors' hosts hold none of it yet.
func (e *Engine) releaseToExecutors(ctx context.Context, tx *store.Tx, fx *effects, run *store.Run, t *store.Task, now int64) error {
	_, timeout := parkOf(&t.TaskTrace)
	deadline := now + timeout
	ok, err := store.ReleaseClaim{ID: t.ID, Deadline: deadline, From: StatusDispatched, Generation: t.ClaimGeneration}.Exec(ctx, tx)
	if err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("runs: the claim of %s moved under the run's lock", t.Key)
	}
	t.ClaimedAt, t.ClaimedBy, t.ClaimTokenHash, t.DeadlineAt = nil, nil, nil, &deadline
	ids, err := e.addressees(ctx, tx, run, &t.TaskTrace)
	if err != nil {
		return err
	}
	fx.parked(run, &t.TaskTrace, ids)
	return nil
}

// expireClaim is expire with the claimant's name given, and lapsed set when the claim ends with its
// instance's heartbeat rather than at its deadline (docs/operations.md#several-instances).
func (e *Engine) expireClaim(ctx context.Context, tx *store.Tx, fx *effects, run *store.Run, t *store.Task, now int64, by string, lapsed bool, early string) error {
	x := ApplyExpiry(ExpiryFacts{Kind: t.Kind, Status: t.Status, Generation: t.ClaimGeneration, Attempts: t.Attempts,
		Profile: []byte(deref(t.EffectProfile)), TimeoutMS: deref(t.TimeoutMS), ClaimedAt: deref(t.ClaimedAt),
		ClaimedBy: by, Deadline: deref(t.DeadlineAt), Lapsed: lapsed, Early: early,
		// An executor's claim that names an instance is a plugin's: an HTTP executor's names none.
		Plugin: lapsed && t.ClaimedBy.Executor() != ""})
	if spec, ok := parseWaitSpec(t.WaitSpec); ok && t.Kind == KindAwait {
		// A wait's expiry ends only the observation, and says so
		// (docs/agent-tools.md#delegation-and-conversations).
		x.Error.Detail = e.texts.WaitTimedOut(spec.Task, deref(t.TimeoutMS))
	}
	if x.Release && t.Kind == KindTool {
		return e.releaseToExecutors(ctx, tx, fx, run, t, now)
	}
	if x.Release {
		if err := (store.Release{ID: t.ID}).Exec(ctx, tx); err != nil {
			return err
		}
		fx.abandon = append(fx.abandon, t.ID)
		e.wakeKernel(fx, run.PublicID, t.Key)
		return nil
	}
	if err := e.signalCanceled(ctx, tx, fx, run, &t.TaskTrace, CancelExpired); err != nil {
		return err
	}
	fx.abandon = append(fx.abandon, t.ID)
	if err := e.settleRow(ctx, tx, fx, run, &t.TaskTrace, failAs(x.Status, x.Error, now)); err != nil {
		return err
	}
	return e.advance(ctx, tx, fx, run)
}
