package runs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/nexuskernel/nexus/core/refusal"
	"github.com/nexuskernel/nexus/core/store"
	"github.com/nexuskernel/nexus/core/uploads"
	"github.com/nexuskernel/nexus/sdk/jsonwire"
)

// Receipt is what a create or append accepted (docs/api.md#runs).
type Receipt struct {
	AcceptedTaskKeys   []string `json:"accepted_task_keys"`
	DeliverableTaskKey string   `json:"deliverable_task_key"`
	Revision           int64    `json:"revision"`
}

// Created is the answer of the create door.
type Created struct {
	Run      *RunDoc
	Receipt  Receipt
	Replayed bool
}

var runObjectKeys = map[string]bool{"steps": true, "approval_mode": true, "approval_rules": true,
	"default_runner_executor_public_id": true, "prompt_mechanism": true, "start": true}
var edgeKeys = []string{"compaction_policy", "deliverable", "tasks", "tools"}

// Replay is a request's idempotency (docs/api.md#conventions): the Idempotency-Key ("" for none)
// and the request's canonical JSON, which a repeat under the same key must match. The door
// canonicalises what it was sent (sdk/jsonwire), only when a key was given: without one nothing reads
// it.
type Replay struct {
	Key         string
	Fingerprint []byte
}

// CreateRunRequest is the create door's request: the caller, the body's "run" object (the run
// grammar's, judged here) and its idempotency.
type CreateRunRequest struct {
	Actor  *Actor
	Run    json.RawMessage
	Replay Replay
}

// CreateRun is the create door (docs/api.md#runs). An Actor the door left unresolved has its
// standing read by the statement that writes the run (createInStatement), or first, through
// Actor.Reread: before a refusal of the body (the standing's word comes first) and before a keyed
// create, whose idempotency scope is the workspace's.
func (e *Engine) CreateRun(ctx context.Context, req *CreateRunRequest) (*Created, error) {
	a, run, key, canon := req.Actor, req.Run, req.Replay.Key, req.Replay.Fingerprint
	if key != "" {
		var err error
		if a, err = a.resolve(ctx, e.store.Reader()); err != nil {
			return nil, err
		}
	}
	scope := fmt.Sprintf("runs:%d:%s:%s", a.WorkspaceID, a.Kind, a.PublicID)
	if key != "" {
		if c, found, err := e.replayCreate(ctx, a, scope, key, canon); found || err != nil {
			return c, err
		}
	}
	in, err := parseRunRequest(run)
	if err != nil {
		if _, rerr := a.resolve(ctx, e.store.Reader()); rerr != nil {
			return nil, rerr
		}
		return nil, err
	}
	start := in.start
	if key == "" {
		// Without a key, a new run is a candidate for one statement (createInStatement); with
		// one, the idempotency record is a second write, and the run is a transaction.
		created, err := e.createInStatement(ctx, a, in)
		if !errors.Is(err, errNeedsTransaction) {
			return created, err
		}
	}
	var created *Created
	err = e.write(ctx, func(tx *store.Tx, fx *effects) error {
		a, err := a.reread(ctx, tx)
		if err != nil {
			return err
		}
		r, steps, err := e.acceptRun(ctx, tx, tx, fx, a, in)
		if err != nil {
			return err
		}
		keys, rows, err := e.insertRunWithSteps(ctx, tx, r, steps, r.CreatedAt)
		if err != nil {
			return err
		}
		// The rows just written are the run's every row: readiness and the answer's run
		// document work on them as written rather than reading them back.
		if start {
			if rows, err = e.advanceTrace(ctx, tx, fx, r, rows); err != nil {
				return err
			}
		}
		created = &Created{Receipt: Receipt{AcceptedTaskKeys: keys, DeliverableTaskKey: r.DeliverableTaskKey, Revision: 1}}
		doc, err := e.runDocOf(ctx, tx, r, rows, false)
		if err != nil {
			return err
		}
		created.Run = doc
		if key != "" {
			res, _ := json.Marshal(struct {
				Run     string  `json:"run_public_id"`
				Receipt Receipt `json:"receipt"`
			}{r.PublicID, created.Receipt})
			if err := store.InsertIdempotency(ctx, tx, scope, key, string(canon), string(res), r.CreatedAt, r.CreatedAt-IdempotencyTTL.Milliseconds()); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil && key != "" && store.IsUniqueViolation(err) {
		// A concurrent request with the same key committed first: replay or refuse against it.
		if c, found, err := e.replayCreate(ctx, a, scope, key, canon); found || err != nil {
			return c, err
		}
	}
	return created, err
}

// runRequest is a create's run object, judged as far as it can be without the store.
type runRequest struct {
	obj   map[string]json.RawMessage
	mode  string
	rules []byte
	start bool
}

// parseRunRequest judges a create's run object as far as it can be without the store, in the
// order docs/api.md#runs states.
func parseRunRequest(run json.RawMessage) (*runRequest, error) {
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(run, &obj); err != nil || obj == nil {
		return nil, refusal.New(refusal.Unprocessable, refusal.CodeValidationFailed, "run must be an object.").With("path", "run")
	}
	for _, k := range edgeKeys {
		if _, ok := obj[k]; ok {
			return nil, refusal.Newf(refusal.Unprocessable, CodeEdgeAuthoringRefused, "run.%s is the kernel's: nobody outside the kernel authors edges.", k).With("path", "run."+k)
		}
	}
	for _, k := range sortedKeys(obj) {
		if !runObjectKeys[k] {
			return nil, refusal.Newf(refusal.Unprocessable, refusal.CodeValidationFailed, "run.%s is not a run field.", k).With("path", "run."+k)
		}
	}
	if _, ok := obj["steps"]; !ok || isNull(obj["steps"]) {
		return nil, refusal.New(refusal.BadRequest, refusal.CodeParameterMissing, "The run must carry steps.").With("path", "run.steps")
	}
	mode, _ := str(obj["approval_mode"])
	if mode != ModeBypass && mode != ModeAsk && mode != ModeRules {
		return nil, refusal.New(refusal.Unprocessable, CodeInvalidApprovalMode, "approval_mode must be bypass, ask or rules.").With("path", "run.approval_mode")
	}
	_, rules, err := ParseRules(obj["approval_rules"], "run.approval_rules")
	if err != nil {
		return nil, err
	}
	if v, ok := obj["prompt_mechanism"]; ok && !isNull(v) {
		if s, ok := str(v); !ok || s != "raw" {
			return nil, refusal.New(refusal.Unprocessable, CodeInvalidPromptMechanism, "prompt_mechanism must be raw.").With("path", "run.prompt_mechanism")
		}
	}
	start := true
	if v, ok := obj["start"]; ok {
		if json.Unmarshal(v, &start) != nil {
			return nil, refusal.New(refusal.Unprocessable, refusal.CodeValidationFailed, "start must be true or false.").With("path", "run.start")
		}
	}
	return &runRequest{obj: obj, mode: mode, rules: rules, start: start}, nil
}

// acceptRun accepts a run object for the actor: its default Runner, its memory configuration,
// its steps, read through q. tx is the write transaction it is accepted in, nil when it is
// accepted for a statement: a step that needs the transaction (one that binds uploads) then
// answers errNeedsTransaction, one that needs the workspace of an unresolved actor
// errNeedsWorkspace, and the default Runner and routed steps' Runners are left to the statement
// (the run's DefaultRunnerExecutorPublicID, the steps' served), which checks them as guards; a
// refusal found without them, or without the actor's standing, answers errNeedsTransaction. It
// answers the unwritten run (born running when it starts) and its steps.
func (e *Engine) acceptRun(ctx context.Context, q store.Querier, tx *store.Tx, fx *effects, a *Actor, in *runRequest) (*store.Run, []*step, error) {
	runner, deferred := "", false
	if v, ok := in.obj["default_runner_executor_public_id"]; ok && !isNull(v) {
		id, ok := str(v)
		if !ok || !store.IsPublicID(id) || (tx != nil && !e.eligibleRunner(ctx, q, a.WorkspaceID, id)) {
			return nil, nil, refusal.New(refusal.Unprocessable, CodeRunnerNotEligible, "default_runner_executor_public_id is not an active Runner of this workspace.").
				With("path", "run.default_runner_executor_public_id")
		}
		runner, deferred = id, tx == nil
	}
	// The memory configuration is frozen first: the steps' skill catalogs are read against it.
	principal := a.member()
	mc, err := e.freezeMemory(ctx, q, a.WorkspacePublicID, "", principal)
	if err != nil {
		return nil, nil, err
	}
	p := &stepParser{e: e, ctx: ctx, q: q, tx: tx, actor: a, runner: runner, existing: map[string]bool{}, fx: fx,
		skills: &SkillFacts{MemoryContext: mc, WorkspacePublicID: a.WorkspacePublicID, Principal: principal}}
	steps := p.parse(in.obj["steps"], 1, "")
	if p.needsTx {
		return nil, nil, errNeedsTransaction
	}
	if p.needsWorkspace {
		return nil, nil, errNeedsWorkspace
	}
	err = p.refusal("")
	if err == nil {
		err = duplicateKeys(steps, nil, "")
	}
	if err != nil {
		if tx == nil && (deferred || p.deferred || !a.resolved()) {
			return nil, nil, errNeedsTransaction
		}
		return nil, nil, err
	}
	now := e.nowMS()
	r := &store.Run{
		PublicID: store.NewPublicID(), WorkspaceID: a.WorkspaceID, WorkspacePublicID: a.WorkspacePublicID,
		CreatedByKind: a.Kind, CreatedByPublicID: a.PublicID, Status: RunPending, ApprovalMode: in.mode,
		ApprovalRules: string(in.rules), DeliverableTaskKey: steps[len(steps)-1].key, Revision: 1,
		MainlineRoundCounter: 1, MemoryContext: mc, CreatedAt: now, UpdatedAt: now,
	}
	if runner != "" {
		r.DefaultRunnerExecutorPublicID = &runner
	}
	if a.Kind == "agent" {
		r.AnsweringAgentPublicID = &a.PublicID
	}
	if in.start {
		// A run that starts at once is born running (docs/development.md#how-the-kernel-runs-work): the
		// row startRun would write a statement later, status running and started_at now, is inserted as
		// such, and readiness runs once its steps are written.
		r.Status, r.StartedAt = RunRunning, &now
	}
	return r, steps, nil
}

func (e *Engine) replayCreate(ctx context.Context, a *Actor, scope, key string, canon []byte) (*Created, bool, error) {
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
	var res struct {
		Run     string  `json:"run_public_id"`
		Receipt Receipt `json:"receipt"`
	}
	if err := json.Unmarshal([]byte(rec.Result), &res); err != nil {
		return nil, true, err
	}
	r, err := store.RunByPublicID(ctx, e.store.Reader(), a.WorkspaceID, res.Run)
	if err != nil {
		return nil, true, err
	}
	doc, err := e.runDoc(ctx, e.store.Reader(), r, false)
	if err != nil {
		return nil, true, err
	}
	return &Created{Run: doc, Receipt: res.Receipt, Replayed: true}, true, nil
}

func (e *Engine) eligibleRunner(ctx context.Context, q store.Querier, workspaceID int64, id string) bool {
	ex, err := store.ExecutorByPublicID(ctx, q, id)
	return err == nil && ex.WorkspaceID == workspaceID && ex.Kind == store.ExecutorRunner && ex.Status == store.ExecutorActive
}

// insertSteps writes the rows of accepted steps of run r in written order: each waits on the one
// before it; the first waits on firstAfter, or is a root. It answers their keys and the rows as
// written, every column, in id order.
func (e *Engine) insertSteps(ctx context.Context, tx *store.Tx, r *store.Run, steps []*step, firstAfter string, now int64) ([]string, []store.Task, error) {
	return e.writeSteps(ctx, tx, r, steps, firstAfter, now, func(rows []store.Task) error {
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
func (e *Engine) insertRunWithSteps(ctx context.Context, tx *store.Tx, r *store.Run, steps []*step, now int64) ([]string, []store.Task, error) {
	return e.writeSteps(ctx, tx, r, steps, "", now, func(rows []store.Task) error {
		return store.InsertRunWithTasks(ctx, tx, r, rows)
	})
}

// writeSteps builds the steps' rows, writes them with insert (which sets their ids), then binds
// the uploads the steps attach to the written rows.
func (e *Engine) writeSteps(ctx context.Context, tx *store.Tx, r *store.Run, steps []*step, firstAfter string, now int64, insert func([]store.Task) error) ([]string, []store.Task, error) {
	keys, rows := stepRows(r.ID, steps, firstAfter, now)
	if err := insert(rows); err != nil {
		return nil, nil, err
	}
	if err := e.bindStepInputs(ctx, tx, r, steps, rows, now); err != nil {
		return nil, nil, err
	}
	return keys, rows, nil
}

// bindStepInputs binds the uploads the steps attach to their written rows.
func (e *Engine) bindStepInputs(ctx context.Context, tx *store.Tx, r *store.Run, steps []*step, rows []store.Task, now int64) error {
	for i, s := range steps {
		if err := e.bindInputs(ctx, tx, uploads.TargetTaskInput, rows[i].ID, r.WorkspaceID, s.attachments, now); err != nil {
			return err
		}
	}
	return nil
}

// stepRows builds the unwritten rows of accepted steps of run runID (see insertSteps) and
// answers their keys.
func stepRows(runID int64, steps []*step, firstAfter string, now int64) ([]string, []store.Task) {
	keys := make([]string, len(steps))
	rows := make([]store.Task, 0, len(steps))
	prev := firstAfter
	for i, s := range steps {
		t := &store.Task{RunID: runID, Key: s.key, Status: StatusWaiting, Origin: OriginAuthor, OnFailure: s.onFailure,
			Lifetime: LifetimeTurn, Wake: WakeAuto, Visibility: s.visible, LineageRoot: s.key, CreatedAt: now}
		if prev != "" {
			t.AfterKeys = jsonText([]string{prev})
		}
		if s.verb == "model" {
			t.Kind, t.Mainline, t.RoundNumber = KindModel, true, 1
			t.Model, t.Prompt = &s.model, &s.prompt
			if s.hasInstructions {
				t.Instructions = &s.instructions
			}
			if len(s.results) > 0 {
				t.Results = jsonText(s.results)
			}
			if len(s.attachments) > 0 {
				t.Attachments = jsonText(s.attachments)
			}
			if s.frozen != nil {
				t.ToolDefinitions = ptr(string(s.frozen.ToolDefinitions))
				t.Environment = ptr(string(s.frozen.Environment))
				t.SkillCatalog = ptr(string(s.frozen.SkillCatalog))
			}
		} else {
			t.Kind = KindTool
			t.ToolName = &s.name
			t.ToolInput = ptr(string(s.input))
			if s.route != nil {
				t.Route = jsonText(s.route)
			}
			if s.timeoutMS > 0 {
				t.TimeoutMS = &s.timeoutMS
			}
			if s.defaults != nil {
				t.ModelDefaults = ptr(string(s.defaults))
			}
			if s.served {
				// The statement writes the rest of the address (store.Served).
				t.AddressedRole, t.AddressedExecutorPublicID = &s.address.Role, &s.address.Executor
			} else {
				applyAddress(t, s.address)
			}
		}
		keys[i] = s.key
		rows = append(rows, *t)
		prev = s.key
	}
	return keys, rows
}

// startRun moves a pending run to running and makes its roots ready
// (docs/development.md#how-the-kernel-runs-work).
func (e *Engine) startRun(ctx context.Context, tx *store.Tx, fx *effects, r *store.Run, now int64) error {
	if err := store.SetRun(ctx, tx, r.ID, store.Assign{Col: "status", Val: RunRunning},
		store.Assign{Col: "started_at", Val: now}, store.Assign{Col: "updated_at", Val: now}); err != nil {
		return err
	}
	r.Status = RunRunning
	r.StartedAt = &now
	return e.advance(ctx, tx, fx, r)
}
