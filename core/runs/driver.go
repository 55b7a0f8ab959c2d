package runs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/nexuskernel/nexus/core/events"
	"github.com/nexuskernel/nexus/core/model"
	"github.com/nexuskernel/nexus/core/projection"
	"github.com/nexuskernel/nexus/core/store"
)

// errLostClaim means a settle found its row no longer under its claim (a stop, a cancel, the
// sweeper): the worker discards its work.
var errLostClaim = errors.New("runs: the claim was lost")

// fenceOf is the claim c fences its writes with: a claimed kernel row changes only while it is
// running under it.
func fenceOf(c *store.Claimed) *store.Fence {
	return &store.Fence{Generation: c.Generation, TokenHash: c.TokenHash}
}

// toolset opens a round's frozen declaration.
func (e *Engine) toolset(t *store.Task) (*projection.Round, error) {
	return projection.Open(e.compiler, []byte(deref(t.ToolDefinitions)), []byte(deref(t.SkillCatalog)))
}

// evaluateModel runs one claimed model round (docs/development.md#how-the-kernel-runs-work): seal
// (or replay the seal), call the provider, settle and expand under the claim.
func (e *Engine) evaluateModel(ctx context.Context, c *store.Claimed) error {
	run, t := c.Run, c.Task // the claim's (store.ClaimSpec.WithRow)
	m, merr := e.models.Resolve(deref(t.Model))
	ts, terr := e.toolset(t)
	if merr != nil || terr != nil {
		te := TaskError{Key: KeyProviderError, Detail: fmt.Sprint(errors.Join(merr, terr))}
		if merr != nil {
			te.Key = CodeUnknownModel
		}
		return e.failModel(ctx, c, te)
	}
	// The provider reports what its wire needs of the seal and of the stored answer.
	provider, ok := e.models.Provider(m.Provider)
	var caps model.ProviderCapabilities
	if ok {
		caps = provider.Capabilities()
	}
	req, err := e.sealRound(ctx, c, run, t, ts, m, caps)
	var te *TaskError
	if errors.As(err, &te) {
		return e.failModel(ctx, c, *te)
	}
	if err != nil {
		return err
	}
	if !ok {
		return e.failModel(ctx, c, TaskError{Key: model.KeyProviderModelUnavailable, Detail: "no provider " + m.Provider})
	}
	streamed := e.streamDeltas(run, t, req)
	callCtx, cancel := context.WithDeadline(ctx, timeOf(c.DeadlineAt))
	e.mu.Lock()
	e.cancels[c.ID] = cancel
	e.mu.Unlock()
	resp, perr := provider.Complete(callCtx, req)
	if perr == nil && !streamed.Load() {
		e.deltasOf(run, t, resp)
	}
	e.mu.Lock()
	delete(e.cancels, c.ID)
	e.mu.Unlock()
	ended := callCtx.Err() // read before cancel, which ends it in every case
	cancel()
	if perr != nil {
		if ctx.Err() != nil || ended != nil {
			// The instance is stopping, the row was canceled, or its claim expired: the row is
			// released by the sweeper or already settled; nothing is written here.
			return nil
		}
		var me *model.Error
		te := TaskError{Key: KeyProviderError, Detail: perr.Error()}
		if errors.As(perr, &me) {
			te = TaskError{Key: me.Key, Detail: me.Detail}
			if me.Key == model.KeyProviderMediaRefused && me.RefusedUpload != "" {
				// The refusal is remembered in the settling transaction: every later seal for
				// this model renders the upload as an index line.
				return e.failModel(ctx, c, te, func(tx *store.Tx) error {
					return store.InsertMediaRefusal(ctx, tx, strings.ToLower(me.RefusedUpload), m.Ref, e.nowMS())
				})
			}
		}
		return e.failModel(ctx, c, te)
	}
	return e.settleModel(ctx, c, t, m, caps, ts, resp)
}

// sealRound seals the round once; a later attempt replays the stored request unchanged, its
// request_options included.
func (e *Engine) sealRound(ctx context.Context, c *store.Claimed, run *store.Run, t *store.Task, ts *projection.Round, m model.Model, caps model.ProviderCapabilities) (*model.Request, error) {
	req := &model.Request{Ref: m.Ref, Model: m.WireID(), Run: run.PublicID, TaskKey: t.Key}
	if e.uploads != nil {
		req.Media = e.uploads.Media(e.store.Reader())
	}
	if t.SealedRequestID != nil {
		parts, err := store.SealedRequest(ctx, e.store.Reader(), *t.SealedRequestID)
		if err != nil {
			return nil, err
		}
		for _, b := range parts.Entries {
			var en model.Entry
			if err := json.Unmarshal(b, &en); err != nil {
				return nil, err
			}
			req.Entries = append(req.Entries, en)
		}
		opts, err := parseOptions(parts.Suffix)
		if err != nil {
			return nil, err
		}
		return req, opts.Apply(req)
	}
	var s *sealed
	var opts model.RequestOptions
	// Relaxed: the settle that follows is synchronous (store.Store.WriteRelaxed).
	err := e.writeWith(ctx, e.store.WriteRelaxed, func(tx *store.Tx, fx *effects) error {
		var err error
		s, err = e.assemble(ctx, tx, run, t, ts, m, c.Detached)
		if err != nil {
			return err
		}
		now := e.nowMS()
		opts = optionsFor(ts.Offered(target(m)), s.entries, m, caps)
		if err := s.seal(m.Ref, now, opts); err != nil {
			return err
		}
		seal := store.Seal{ID: t.ID, Generation: c.Generation, Parts: s.parts, At: now, HistoryEntries: s.historyCount,
			Delivered: store.Delivered{IDs: s.delivered, With: t.Key}, From: StatusRunning, Claim: fenceOf(c)}
		_, ok, err := seal.Exec(ctx, tx)
		if err != nil {
			return err
		}
		if !ok {
			return errLostClaim
		}
		return store.MarkSteersCarried(ctx, tx, s.steers, t.Key, now)
	})
	if err != nil {
		return nil, err
	}
	req.Entries = s.entries
	return req, opts.Apply(req)
}

// failModel settles a claimed round failed (a provider error, an unknown model).
func (e *Engine) failModel(ctx context.Context, c *store.Claimed, te TaskError, also ...func(*store.Tx) error) error {
	return e.write(ctx, func(tx *store.Tx, fx *effects) error {
		run, err := store.LockRun(ctx, tx, c.RunID)
		if err != nil {
			return err
		}
		for _, f := range also {
			if err := f(tx); err != nil {
				return err
			}
		}
		fail := store.Fail{ID: c.ID, Status: StatusFailed, Error: store.Failure(te), At: e.nowMS(), From: StatusRunning, Claim: fenceOf(c)}
		var row store.TaskTrace
		ok, err := fail.Exec(ctx, tx, &row)
		if err != nil || !ok {
			return err
		}
		fx.settled(run, &row)
		return e.advance(ctx, tx, fx, run)
	})
}

// usageOf is a model task's stored usage: a provider that counts prompt caches always carries both
// cache counts; another's keeps its shape. estimated appears only when the provider reported
// nothing.
func usageOf(caps model.ProviderCapabilities, u model.Usage, cost *model.Cost) *store.Usage {
	w := &store.Usage{InputTokens: u.InputTokens, OutputTokens: u.OutputTokens, Estimated: u.Estimated}
	if cost != nil {
		w.Cost = &store.Cost{Amount: cost.Amount, Currency: cost.Currency}
	}
	if caps.CacheUsage {
		w.CachedInputTokens, w.CacheWriteInputTokens = &u.CachedInputTokens, &u.CacheWriteInputTokens
	}
	return w
}

// settleModel stores the answer and expands it (docs/development.md#how-the-kernel-runs-work) in
// the transaction that settles the round, under the run's lock and the claim. t is the round as
// read when it was claimed: what expansion reads of it (key, round, lineage, model, tools) never
// changes, and the settling update's claim guard is what decides that the round is still
// running on this claim (errLostClaim rolls back every row written before it).
func (e *Engine) settleModel(ctx context.Context, c *store.Claimed, t *store.Task, m model.Model, caps model.ProviderCapabilities, ts *projection.Round, resp *model.Response) error {
	return e.write(ctx, func(tx *store.Tx, fx *effects) error {
		run, err := store.LockRun(ctx, tx, c.RunID)
		if err != nil {
			return err
		}
		now := e.nowMS()
		cost, _ := m.Cost(resp.Usage)
		finish := resp.Finish
		if !finish.Valid() {
			finish = model.FinishStop
			if len(resp.ToolCalls) > 0 {
				finish = model.FinishToolCalls
			}
		}
		settle := store.SettleRound{ID: c.ID, Status: StatusCompleted, Output: resp.Text, Finish: string(finish),
			Usage: usageOf(caps, resp.Usage, cost), At: now, From: StatusRunning, Claim: *fenceOf(c)}
		if content := resp.AnswerContent(); hasProviderBlock(content) {
			b, err := json.Marshal(content)
			if err != nil {
				return err
			}
			settle.AnswerContent = new(string(b))
		}
		if resp.Text != "" && strings.TrimSpace(resp.Text) != "" {
			settle.Content = jsonText([]map[string]string{{"type": "text", "text": resp.Text}})
		}
		var expandErr *TaskError
		// A refused answer carries no calls, whatever the provider held when it stopped.
		expand := len(resp.ToolCalls) > 0 && run.Status == RunRunning && finish != model.FinishRefused
		if expand {
			switch {
			case len(resp.ToolCalls) > MaxCallsPerAnswer:
				expandErr = &TaskError{Key: KeyRoundExpansionRefused, Detail: "too_many_calls"}
			case t.RoundNumber >= MaxRoundsPerLineage:
				expandErr = &TaskError{Key: KeyRoundExpansionRefused, Detail: "round_limit"}
			}
		}
		if expandErr != nil {
			settle.Status, settle.Error = StatusFailed, (*store.Failure)(expandErr)
			expand = false
		}
		// The round's events come before those of the rows its answer births; the transaction's
		// rollback drops them all.
		calls := 0
		if expand {
			calls = len(resp.ToolCalls)
		}
		fx.note(events.RoundSealed{Scope: scopeOf(run), TaskKey: t.Key, Round: t.RoundNumber, Finish: string(finish), ToolCalls: calls})
		fx.settledAs(run, &t.TaskTrace, settle.Status, settle.Error)
		cont := ""
		if expand {
			if settle.Calls, cont, settle.Run, err = e.expand(ctx, tx, fx, run, t, ts, resp, finish, now); err != nil {
				return err
			}
		}
		// Re-pointing and readiness work on the trace the settle answers.
		ok, tasks, err := settle.Exec(ctx, tx, run.ID)
		if err != nil {
			return err
		}
		if !ok {
			return errLostClaim
		}
		if expand {
			if err = e.repoint(ctx, tx, tasks, t.Key, cont, settle.Calls); err != nil {
				return err
			}
		}
		_, err = e.advanceTrace(ctx, tx, fx, run, tasks, nil)
		return err
	})
}

// expand writes one tool row per call under the pairing law and one continuation that waits on
// them all, and answers the run's columns it moves (the round counter, the deliverable), which the
// caller writes with the round's settle; the caller re-points readers of the expanding round.
func (e *Engine) expand(ctx context.Context, tx *store.Tx, fx *effects, run *store.Run, t *store.Task, ts *projection.Round, resp *model.Response, finish model.Finish, now int64) (store.AnswerCalls, string, *store.RoundMove, error) {
	n, callPrefix, contKey := roundKeys(run, &t.TaskTrace)
	var move *store.RoundMove // written once, with the round's settle
	if t.Mainline {
		move = &store.RoundMove{Counter: &n}
		run.MainlineRoundCounter = n
	}
	ids := make([]string, len(resp.ToolCalls))
	for i, c := range resp.ToolCalls {
		ids[i] = c.ID
	}
	pairing := PairingKeys(t.Key, ids)
	calls := make([]store.AnswerCall, len(resp.ToolCalls))
	fan := make([]string, len(resp.ToolCalls))
	for i, call := range resp.ToolCalls {
		key := callPrefix + strconv.Itoa(i)
		fan[i] = key
		calls[i] = store.AnswerCall{ID: call.ID, Name: call.Name, Arguments: call.Arguments, ToolCallID: pairing[i], TaskKey: key}
		if err := e.birth(ctx, tx, fx, run, t, ts, call, pairing[i], key, finish == model.FinishLength, now); err != nil {
			return nil, "", nil, err
		}
	}
	cont := &store.Task{TaskTrace: store.TaskTrace{
		RunID: run.ID, Key: contKey, Kind: KindModel, Status: StatusWaiting, Mainline: t.Mainline,
		Origin: OriginKernel, AfterKeys: fan, OnFailure: t.OnFailure, Lifetime: t.Lifetime,
		Wake: t.Wake, Detached: t.Detached, Visibility: t.Visibility, LineageRoot: t.LineageRoot,
		RoundNumber: t.RoundNumber + 1, Model: t.Model, CreatedAt: now,
	},
		Instructions: t.Instructions, ToolDefinitions: t.ToolDefinitions, SkillCatalog: t.SkillCatalog,
		Environment: t.Environment,
	}
	if err := store.InsertTask(ctx, tx, cont); err != nil {
		return nil, "", nil, err
	}
	if run.DeliverableTaskKey == t.Key {
		if move == nil {
			move = &store.RoundMove{}
		}
		move.Deliverable = &contKey
		run.DeliverableTaskKey = contKey
	}
	return calls, contKey, move, nil
}

// repoint moves readers of a settled expanding round (from) outside its fan (the calls' rows and
// the continuation to) onto the continuation, over tasks, the run's trace as the settle left
// it, which it keeps current.
func (e *Engine) repoint(ctx context.Context, tx *store.Tx, tasks []store.TaskTrace, from, to string, calls []store.AnswerCall) error {
	inFan := map[string]bool{to: true}
	for _, c := range calls {
		inFan[c.TaskKey] = true
	}
	for i := range tasks {
		tk := &tasks[i]
		if inFan[tk.Key] || Terminal(tk.Status) {
			continue
		}
		after := AfterKeys(tk)
		changed := false
		for j, k := range after {
			if k == from {
				after[j] = to
				changed = true
			}
		}
		if changed {
			tk.AfterKeys = after
			if err := (store.Repoint{ID: tk.ID, After: tk.AfterKeys}).Exec(ctx, tx); err != nil {
				return err
			}
		}
	}
	return nil
}

// birth writes one call's tool row, paired with the round's call and waiting on the round.
func (e *Engine) birth(ctx context.Context, tx *store.Tx, fx *effects, run *store.Run, round *store.Task, ts *projection.Round, call model.ToolCall, pairingKey, key string, truncated bool, now int64) error {
	row := &store.Task{TaskTrace: store.TaskTrace{
		RunID: run.ID, Key: key, Kind: KindTool, Mainline: false, Origin: OriginModel,
		DeclaringTaskKey: &round.Key, AfterKeys: store.Strings{round.Key}, OnFailure: OnFailureAbsorb,
		Lifetime: round.Lifetime, Wake: round.Wake, Detached: round.Detached, Visibility: VisibilityCollapsed,
		LineageRoot: key, ToolCallID: &pairingKey, CreatedAt: now,
	}}
	return e.birthRow(ctx, tx, fx, run, ts, row, call.Name, call.Arguments, truncated, now)
}

// birthRow is the birth path every model-origin tool call takes, a round's own and a tool_call
// child alike: checks 2-6 of the pairing law on name and arguments, alias resolution, addressing
// (check 7), then the row waits for readiness or is born settled.
func (e *Engine) birthRow(ctx context.Context, tx *store.Tx, fx *effects, run *store.Run, ts *projection.Round, row *store.Task, name, arguments string, truncated bool, now int64) error {
	call := model.ToolCall{Name: name, Arguments: arguments}
	res, err := resolveCall(ts, call.Name, json.RawMessage("{}"))
	if err != nil {
		return err
	}
	v := CheckCall(call.Name, call.Arguments, res.Declared, truncated)
	if v.Error != nil {
		row.ToolName = &v.ToolName
		return e.bornFailed(ctx, tx, fx, run, row, *v.Error, now)
	}
	res, err = resolveCall(ts, call.Name, v.Input)
	if err != nil {
		return err
	}
	row.ToolName = &res.ToolName
	if res.Alias != "" {
		row.ToolAlias = &res.Alias
	}
	in := string(res.Input)
	row.ToolInput = &in
	if res.Route != nil {
		row.Route = &Route{Kind: "runner", RunnerExecutorPublicID: res.Route.RunnerExecutorPublicID, ToolName: res.ToolName}
	}
	addr, err := e.addressCall(ctx, tx, run, ts, res)
	if err != nil {
		return err
	}
	if addr.Failure != nil {
		return e.bornFailed(ctx, tx, fx, run, row, *addr.Failure, now)
	}
	applyAddress(row, addr)
	row.Status = StatusWaiting
	return store.InsertTask(ctx, tx, row)
}

// applyAddress freezes an addressing decision on a row.
func applyAddress(row *store.Task, a Address) {
	if a.Role != "" {
		row.AddressedRole = &a.Role
		if a.Executor != "" {
			row.AddressedExecutorPublicID = &a.Executor
		}
	}
	if a.Target != nil {
		row.Target = jsonText(a.Target)
	}
	row.EffectProfile = jsonText(storedProfile{a.Profile, a.TimeoutMS})
	if row.TimeoutMS == nil {
		t := ToolParkDefault.Milliseconds()
		if a.TimeoutMS > 0 {
			t = a.TimeoutMS
		}
		row.TimeoutMS = &t
	}
	if a.Scope != nil {
		s := string(a.Scope)
		row.Scope = &s
	}
	if a.Pin != "" {
		pin := a.Pin
		row.DefinitionPin = &pin
	}
}

// bornFailed writes a row that is settled at birth: it skips the approval stage and is never
// dispatched, but it is authored, so the continuation hears why.
func (e *Engine) bornFailed(ctx context.Context, tx *store.Tx, fx *effects, run *store.Run, row *store.Task, te TaskError, now int64) error {
	seq, err := store.NextSettleSeq(ctx, tx, row.RunID)
	if err != nil {
		return err
	}
	row.Status = StatusFailed
	row.ErrorKey = &te.Key
	row.ErrorDetail = nullable(te.Detail)
	row.Output = new("")
	row.CompletedAt = &now
	row.SettleSeq = &seq
	if err := store.InsertTask(ctx, tx, row); err != nil {
		return err
	}
	fx.settled(run, &row.TaskTrace)
	return nil
}

func hasProviderBlock(parts []model.Part) bool {
	for _, p := range parts {
		if p.Type == model.PartProviderBlock {
			return true
		}
	}
	return false
}
