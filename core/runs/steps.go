package runs

import (
	"context"
	"encoding/json"

	"github.com/nexuskernel/nexus/core/declare"
	"github.com/nexuskernel/nexus/core/refusal"
	"github.com/nexuskernel/nexus/core/steps"
	"github.com/nexuskernel/nexus/core/store"
	"github.com/nexuskernel/nexus/sdk/jsonwire"
)

// The step grammar is core/steps': the typed steps, their words and the order they are judged
// in (steps.Judge). The engine answers the checks that read the store, the models catalog and
// the declaration compiler (steps.Lookups) in the transaction that accepts the steps, and keeps
// what they read for the rows it writes.

// step is a step the grammar accepted, with what acceptance read for it.
type step struct {
	*steps.Checked
	// frozen is a model step's frozen declaration, defaults a tool step's model_defaults'; nil
	// when the step declares none.
	frozen, defaults *FrozenDeclaration
	attachments      []Attachment
	route            *Route
	address          Address
	// served says that the statement addresses the row from its Runner's announcement
	// (stepReader.Address): address holds only its role and executor.
	served bool
}

// noDeclaration is what a step that declares no tools freezes.
var noDeclaration = FrozenDeclaration{ToolDefinitions: []byte("[]"), Environment: []byte("null"), SkillCatalog: []byte("[]")}

// stepReader answers the grammar's lookups (steps.Lookups) for one envelope.
type stepReader struct {
	e   *Engine
	ctx context.Context
	// q reads; tx is the write transaction the steps are accepted in, nil when they are accepted
	// for a statement (CreateRun's), which binds no upload: a step that attaches some then sets
	// needsTx, and the create runs as a transaction.
	q       store.Querier
	tx      *store.Tx
	needsTx bool
	// needsWorkspace says that a step accepted for a statement needs a read of the actor's
	// workspace, which the door left to the statement (Actor.resolved): the create reads its
	// standing first and accepts the steps again.
	needsWorkspace bool
	// deferred says that a step accepted for a statement left a Runner's lookup to it
	// (store.Served): a refusal found without that lookup may not be the first, and the create
	// runs as its transaction, which finds the words in order.
	deferred bool
	actor    *Actor
	runner   string // the run's default Runner
	// skills are the run's facts a kernel skill catalog is read against.
	skills *skillFacts
	// fx is the transaction's effects, where a Runner found eligible is noted for dispatch;
	// nil notes nothing.
	fx     *effects
	byStep map[*steps.Checked]*step
}

// accepted are the steps of an envelope the grammar accepted.
type accepted struct {
	list    []*step
	checked []*steps.Checked
}

// judge judges env by the grammar, answering its lookups; the problems are the envelope's.
func (p *stepReader) judge(env steps.Envelope) (*accepted, []steps.Problem) {
	p.byStep = map[*steps.Checked]*step{}
	env.DefaultRunner = p.runner
	checked, problems := steps.Judge(env, p)
	out := &accepted{list: make([]*step, len(checked)), checked: checked}
	for i, c := range checked {
		out.list[i] = p.of(c)
	}
	return out, problems
}

func (p *stepReader) of(c *steps.Checked) *step {
	s := p.byStep[c]
	if s == nil {
		s = &step{Checked: c}
		p.byStep[c] = s
	}
	return s
}

// KernelTool reports a name that spells a kernel tool.
func (p *stepReader) KernelTool(name string) (string, bool) { return p.e.compiler.KernelWire(name) }

// DefaultModel is the deployment's default model.
func (p *stepReader) DefaultModel() string { return p.e.models.Default().Ref }

// CheckModel checks a reference against the models catalog.
func (p *stepReader) CheckModel(ref string, hasTools bool) error {
	_, err := p.e.models.Check(ref, hasTools)
	return err
}

// Attachments reads a model step's uploads, the actor's own and complete.
func (p *stepReader) Attachments(c *steps.Checked, path string, ids []string) error {
	if p.tx == nil {
		p.needsTx = true
		return nil
	}
	atts, err := p.e.uploads.Inputs(p.ctx, p.tx, p.actor.principal(), ids, path)
	p.of(c).attachments = atts
	return err
}

// Declare freezes a declaration through the compiler (freezeStep).
func (p *stepReader) Declare(c *steps.Checked, path string, src declare.StepSources, defaults bool) (bool, error) {
	if !p.actor.resolved() {
		p.needsWorkspace = true
		return false, nil
	}
	f, err := p.e.freezeStep(p.ctx, p.q, &stepDeclaration{WorkspaceID: p.actor.WorkspaceID, Selection: p.runner, Path: path,
		Skills: p.skills, Sources: src})
	if err != nil {
		return false, err
	}
	if defaults {
		p.of(c).defaults = f
	} else {
		p.of(c).frozen = f
	}
	return f.HasTools, nil
}

// Address resolves a tool step's addressee at acceptance (docs/api.md#runs): a step nobody
// serves is refused tool_not_served rather than created failed, and a route to anything but an
// active Runner of the workspace runner_not_eligible. A Runner that serves the name is eligible
// by that very answer (Announcements.RunnerTool), so the executor row is read only when it does
// not, to tell the two refusals apart; the eligible Runner is noted on the transaction, whose
// dispatch then need not read its row again.
//
// A step accepted for a statement (tx nil) that a route sends to a Runner leaves the lookup to
// the statement (store.Served), which addresses the row from the Runner's announcement or writes
// nothing; any other step's addressing reads the workspace's executors, which an actor the door
// left unresolved needs read first (needsWorkspace).
func (p *stepReader) Address(c *steps.Checked) error {
	s := p.of(c)
	var route *Route
	if c.Runner != "" {
		route = &Route{Kind: steps.RouteRunner, RunnerExecutorPublicID: c.Runner, ToolName: c.Name}
	}
	if p.tx == nil && route != nil {
		s.route, s.served, p.deferred = route, true, true
		s.address = Address{Role: "runner", Executor: route.RunnerExecutorPublicID}
		return nil
	}
	if !p.actor.resolved() {
		p.needsWorkspace = true
		return nil
	}
	res := CallResolution{Declared: true, ToolName: c.Name, Input: c.Input, Route: route}
	fakeRun := &store.Run{WorkspaceID: p.actor.WorkspaceID}
	a, err := p.e.address(p.ctx, p.q, fakeRun, res)
	if err != nil {
		return err
	}
	if route != nil {
		if a.Failure != nil {
			ex, err := store.ExecutorByPublicID(p.ctx, p.q, route.RunnerExecutorPublicID)
			if err != nil || ex.WorkspaceID != p.actor.WorkspaceID || ex.Kind != store.ExecutorRunner || ex.Status != store.ExecutorActive {
				return refusal.Newf(refusal.Unprocessable, steps.CodeRunnerNotEligible, "Runner %s is not an active Runner of this workspace.", route.RunnerExecutorPublicID).
					With("path", c.Path+".route")
			}
		} else {
			p.fx.noteActive(a.Executor)
		}
		s.route = route
	}
	if a.Failure != nil {
		return refusal.New(refusal.Unprocessable, CodeToolNotServed, a.Failure.Detail).With("path", c.Path+".name")
	}
	s.address = a
	return nil
}

// defaultsText is a tool step's model_defaults as its row stores them: the model and
// instructions written, and the frozen declaration.
func defaultsText(md *steps.ModelDefaults, f *FrozenDeclaration) (string, error) {
	if f == nil {
		f = &noDeclaration
	}
	out := map[string]json.RawMessage{"tool_definitions": f.ToolDefinitions, "environment": f.Environment, "skill_catalog": f.SkillCatalog}
	if md.Model != "" {
		out["model"] = jsonwire.AppendString(nil, md.Model)
	}
	if md.Instructions != nil {
		out["instructions"] = jsonwire.AppendString(nil, *md.Instructions)
	}
	b, err := json.Marshal(out)
	return string(b), err
}
