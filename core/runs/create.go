package runs

import (
	"context"

	"github.com/nexuskernel/nexus/core/events"
	"github.com/nexuskernel/nexus/core/steps"
	"github.com/nexuskernel/nexus/core/store"
	"github.com/nexuskernel/nexus/core/uploads"
)

// CreatedRun is a run a create wrote: the run, its steps' keys in order, and the trace of its
// every row as written (readiness applied when it started), in id order.
type CreatedRun struct {
	Run   *store.Run
	Keys  []string
	Trace []store.TaskTrace
}

// CreateRun accepts in for a (its default Runner, its memory configuration, its steps) and writes
// the run and its steps' rows; a run that starts at once is born running and readiness runs on
// the rows as written. The door has judged in by steps.Run.Check.
func (x *Tx) CreateRun(ctx context.Context, a *Actor, in *steps.Run) (*CreatedRun, error) {
	r, list, err := x.e.acceptRun(ctx, x.Tx, x.Tx, x.fx, a, in)
	if err != nil {
		return nil, err
	}
	keys, rows, err := x.e.insertRunWithSteps(ctx, x.Tx, r, list, r.CreatedAt)
	if err != nil {
		return nil, err
	}
	x.fx.note(events.RunStatus{Scope: scopeOf(r), Status: r.Status})
	// The rows just written are the run's every row: readiness and the door's run document work
	// on them as written rather than reading them back.
	trace := store.TracesOf(rows)
	if in.Starts() {
		if trace, err = x.e.advanceTrace(ctx, x.Tx, x.fx, r, trace, rows); err != nil {
			return nil, err
		}
	}
	return &CreatedRun{Run: r, Keys: keys, Trace: trace}, nil
}

// acceptRun accepts a run object for the actor: its default Runner, its memory configuration,
// its steps, read through q. tx is the write transaction it is accepted in, nil when it is
// accepted for a statement: a step that needs the transaction (one that binds uploads) then
// answers ErrNeedsTransaction, one that needs the workspace of an unresolved actor
// errNeedsWorkspace, and the default Runner and routed steps' Runners are left to the statement
// (the run's DefaultRunnerExecutorPublicID, the steps' served), which checks them as guards; a
// refusal found without them, or without the actor's standing, answers ErrNeedsTransaction. It
// answers the unwritten run (born running when it starts) and its steps.
func (e *Engine) acceptRun(ctx context.Context, q store.Querier, tx *store.Tx, fx *effects, a *Actor, in *steps.Run) (*store.Run, []*step, error) {
	runner, err := in.DefaultRunner()
	if err == nil && runner != "" && tx != nil && !e.eligibleRunner(ctx, q, a.WorkspaceID, runner) {
		err = steps.RunnerNotEligible("run.default_runner_executor_public_id")
	}
	if err != nil {
		return nil, nil, err
	}
	deferred := runner != "" && tx == nil
	// The memory configuration is frozen first: the steps' skill catalogs are read against it.
	principal := a.member()
	mc, err := e.freezeMemory(ctx, q, a.WorkspacePublicID, "", principal)
	if err != nil {
		return nil, nil, err
	}
	p := &stepReader{e: e, ctx: ctx, q: q, tx: tx, actor: a, runner: runner, fx: fx,
		skills: &skillFacts{MemoryContext: mc, WorkspacePublicID: a.WorkspacePublicID, Principal: principal}}
	acc, problems := p.judge(in.Envelope())
	if p.needsTx {
		return nil, nil, ErrNeedsTransaction
	}
	if p.needsWorkspace {
		return nil, nil, errNeedsWorkspace
	}
	err = steps.Refusal(problems, "")
	if err == nil {
		err = steps.DuplicateKey(acc.checked, nil, "")
	}
	if err != nil {
		if tx == nil && (deferred || p.deferred || !a.resolved()) {
			return nil, nil, ErrNeedsTransaction
		}
		return nil, nil, err
	}
	rules, err := in.RulesText()
	if err != nil {
		return nil, nil, err
	}
	list := acc.list
	now := e.nowMS()
	r := &store.Run{
		PublicID: store.NewPublicID(), WorkspaceID: a.WorkspaceID, WorkspacePublicID: a.WorkspacePublicID,
		CreatedByKind: a.Kind, CreatedByPublicID: a.PublicID, Status: RunPending, ApprovalMode: in.ApprovalMode,
		ApprovalRules: rules, DeliverableTaskKey: list[len(list)-1].Key, Revision: 1,
		MainlineRoundCounter: 1, MemoryContext: mc, CreatedAt: now, UpdatedAt: now,
	}
	if runner != "" {
		r.DefaultRunnerExecutorPublicID = &runner
	}
	if a.Kind == "agent" {
		r.AnsweringAgentPublicID = &a.PublicID
	}
	if in.Starts() {
		// A run that starts at once is born running (docs/development.md#how-the-kernel-runs-work): the
		// row startRun would write a statement later, status running and started_at now, is inserted as
		// such, and readiness runs once its steps are written.
		r.Status, r.StartedAt = RunRunning, &now
	}
	return r, list, nil
}

func (e *Engine) eligibleRunner(ctx context.Context, q store.Querier, workspaceID int64, id string) bool {
	ex, err := store.ExecutorByPublicID(ctx, q, id)
	return err == nil && ex.WorkspaceID == workspaceID && ex.Kind == store.ExecutorRunner && ex.Status == store.ExecutorActive
}

// insertSteps writes the rows of accepted steps of run r in written order: each waits on the one
// before it; the first waits on firstAfter, or is a root. It answers their keys and the rows as
// written, every column, in id order.
func (e *Engine) insertSteps(ctx context.Context, tx *store.Tx, r *store.Run, list []*step, firstAfter string, now int64) ([]string, []store.Task, error) {
	return e.writeSteps(ctx, tx, r, list, firstAfter, now, func(rows []store.Task) error {
		for i := range rows {
			if err := store.InsertTask(ctx, tx, &rows[i]); err != nil {
				return err
			}
		}
		return nil
	})
}

// insertRunWithSteps writes a new run and the rows of its steps (as insertSteps, roots first)
// together: on PostgreSQL the run and its first rows are one statement.
func (e *Engine) insertRunWithSteps(ctx context.Context, tx *store.Tx, r *store.Run, list []*step, now int64) ([]string, []store.Task, error) {
	return e.writeSteps(ctx, tx, r, list, "", now, func(rows []store.Task) error {
		return store.InsertRunWithTasks(ctx, tx, r, rows)
	})
}

// writeSteps builds the steps' rows, writes them with insert (which sets their ids), then binds
// the uploads the steps attach to the written rows.
func (e *Engine) writeSteps(ctx context.Context, tx *store.Tx, r *store.Run, list []*step, firstAfter string, now int64, insert func([]store.Task) error) ([]string, []store.Task, error) {
	keys, rows, err := stepRows(r.ID, list, firstAfter, now)
	if err != nil {
		return nil, nil, err
	}
	if err := insert(rows); err != nil {
		return nil, nil, err
	}
	if err := e.bindStepInputs(ctx, tx, r, list, rows, now); err != nil {
		return nil, nil, err
	}
	return keys, rows, nil
}

// bindStepInputs binds the uploads the steps attach to their written rows.
func (e *Engine) bindStepInputs(ctx context.Context, tx *store.Tx, r *store.Run, list []*step, rows []store.Task, now int64) error {
	for i, s := range list {
		if err := uploads.BindAttachments(ctx, tx, uploads.Target{Kind: uploads.TargetTaskInput, ID: rows[i].ID, WorkspaceID: r.WorkspaceID}, s.attachments, timeOf(now)); err != nil {
			return err
		}
	}
	return nil
}

// stepRows builds the unwritten rows of accepted steps of run runID (see insertSteps) and
// answers their keys.
func stepRows(runID int64, list []*step, firstAfter string, now int64) ([]string, []store.Task, error) {
	keys := make([]string, len(list))
	rows := make([]store.Task, 0, len(list))
	prev := firstAfter
	for i, s := range list {
		t := &store.Task{TaskTrace: store.TaskTrace{
			RunID: runID, Key: s.Key, Status: StatusWaiting, Origin: OriginAuthor, OnFailure: s.OnFailure,
			Lifetime: LifetimeTurn, Wake: WakeAuto, Visibility: s.Visibility, LineageRoot: s.Key, CreatedAt: now,
		}}
		if prev != "" {
			t.AfterKeys = store.Strings{prev}
		}
		if s.Verb == steps.VerbModel {
			t.Kind, t.Mainline, t.RoundNumber = KindModel, true, 1
			t.Model, t.Prompt = &s.Model, &s.Prompt
			t.Instructions = s.Instructions
			if len(s.Results) > 0 {
				t.Results = s.Results
			}
			if len(s.attachments) > 0 {
				t.Attachments = s.attachments
			}
			f := s.frozen
			if f == nil {
				f = &noDeclaration
			}
			t.ToolDefinitions = new(string(f.ToolDefinitions))
			t.Environment = new(string(f.Environment))
			t.SkillCatalog = new(string(f.SkillCatalog))
		} else {
			t.Kind = KindTool
			t.ToolName = &s.Name
			t.ToolInput = new(string(s.Input))
			if s.route != nil {
				t.Route = s.route
			}
			if s.TimeoutMS > 0 {
				t.TimeoutMS = &s.TimeoutMS
			}
			if s.ModelDefaults != nil {
				d, err := defaultsText(s.ModelDefaults, s.defaults)
				if err != nil {
					return nil, nil, err
				}
				t.ModelDefaults = &d
			}
			if s.served {
				// The statement writes the rest of the address (store.Served).
				t.AddressedRole, t.AddressedExecutorPublicID = &s.address.Role, &s.address.Executor
			} else {
				applyAddress(t, s.address)
			}
		}
		keys[i] = s.Key
		rows = append(rows, *t)
		prev = s.Key
	}
	return keys, rows, nil
}

// startRun moves a pending run to running and makes its roots ready
// (docs/development.md#how-the-kernel-runs-work).
func (e *Engine) startRun(ctx context.Context, tx *store.Tx, fx *effects, r *store.Run, now int64) error {
	if err := (store.StartRun{ID: r.ID, Status: RunRunning, At: now}).Exec(ctx, tx); err != nil {
		return err
	}
	r.Status = RunRunning
	r.StartedAt = &now
	fx.note(events.RunStatus{Scope: scopeOf(r), Status: r.Status})
	return e.advance(ctx, tx, fx, r)
}
