package steps

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"unicode/utf8"

	"github.com/nexuskernel/nexus/core/approval"
	"github.com/nexuskernel/nexus/core/declare"
	"github.com/nexuskernel/nexus/core/refusal"
	"github.com/nexuskernel/nexus/core/store"
	"github.com/nexuskernel/nexus/sdk/jsonwire"
)

// Check judges the run object as far as it can be judged without the store, in the order
// docs/api.md#runs states: its shape, the kernel's edges, its fields, the steps' presence, the
// approval mode and rules, the prompt mechanism, start. The first failure is the refusal. The
// default Runner (DefaultRunner) and the steps (Judge) are judged by the engine when it accepts
// the run.
func (r *Run) Check() error {
	w := &r.w
	switch {
	case w.notObject:
		return refusal.New(refusal.Unprocessable, refusal.CodeValidationFailed, "run must be an object.").With("path", "run")
	case w.edge != "":
		return refusal.Newf(refusal.Unprocessable, CodeEdgeAuthoringRefused, "run.%s is the kernel's: nobody outside the kernel authors edges.", w.edge).
			With("path", "run."+w.edge)
	case len(w.unknown) > 0:
		return refusal.Newf(refusal.Unprocessable, refusal.CodeValidationFailed, "run.%s is not a run field.", w.unknown[0]).With("path", "run."+w.unknown[0])
	case r.Steps == nil && w.bad&fSteps == 0:
		return refusal.New(refusal.BadRequest, refusal.CodeParameterMissing, "The run must carry steps.").With("path", "run.steps")
	}
	switch r.ApprovalMode {
	case approval.ModeBypass, approval.ModeAsk, approval.ModeRules:
	default:
		return refusal.New(refusal.Unprocessable, CodeInvalidApprovalMode, "approval_mode must be bypass, ask or rules.").With("path", "run.approval_mode")
	}
	p := w.rules
	if p == nil {
		p = approval.Check(r.ApprovalRules)
	}
	if p != nil {
		path := "run.approval_rules" + p.Suffix
		return refusal.Newf(refusal.Unprocessable, CodeInvalidApprovalRules, "%s: %s.", path, p.Detail).With("path", path)
	}
	if w.bad&fPromptMechanism != 0 || ((w.given&fPromptMechanism != 0 || r.PromptMechanism != "") && r.PromptMechanism != PromptRaw) {
		return refusal.New(refusal.Unprocessable, CodeInvalidPromptMechanism, "prompt_mechanism must be raw.").With("path", "run.prompt_mechanism")
	}
	if w.bad&fStart != 0 {
		return refusal.New(refusal.Unprocessable, refusal.CodeValidationFailed, "start must be true or false.").With("path", "run.start")
	}
	return nil
}

// Starts reports whether the run starts at once.
func (r *Run) Starts() bool { return r.Start == nil || *r.Start }

// RulesText is the run's approval rules as a run row stores them: [] for none.
func (r *Run) RulesText() (string, error) {
	if r.ApprovalRules == nil {
		return "[]", nil
	}
	b, err := json.Marshal(r.ApprovalRules)
	return string(b), err
}

// DefaultRunner answers the run's default Runner, "" for none, or the refusal of an id no Runner
// can have. Whether it names an active Runner of the workspace is the engine's to read, which
// refuses it with the same words (RunnerNotEligible).
func (r *Run) DefaultRunner() (string, error) {
	id := r.DefaultRunnerExecutorPublicID
	if !r.w.has(fDefaultRunner) && id == "" {
		return "", nil
	}
	if r.w.bad&fDefaultRunner != 0 || !store.IsPublicID(id) {
		return "", RunnerNotEligible("run.default_runner_executor_public_id")
	}
	return id, nil
}

// RunnerNotEligible is the refusal of a default Runner (of a run or a conversation, at path) that
// is not an active Runner of the workspace.
func RunnerNotEligible(path string) error {
	return refusal.New(refusal.Unprocessable, CodeRunnerNotEligible, "default_runner_executor_public_id is not an active Runner of this workspace.").
		With("path", path)
}

var (
	reservedKeyA = regexp.MustCompile(`^r[0-9]`)
	reservedKeyB = regexp.MustCompile(`^s[0-9]+-[a-z]+-[0-9]+$`)
)

// ReservedKey reports whether a key has a kernel shape: r followed by a digit, or
// s<digits>-<verb>-<digits>.
func ReservedKey(k string) bool { return reservedKeyA.MatchString(k) || reservedKeyB.MatchString(k) }

// Problem is one failure of the step grammar: its word, its path in the envelope and a message.
type Problem struct {
	Code    string
	Path    string
	Message string
}

// Refusal is the envelope's refusal for its problems (docs/api.md#runs): 422 with the first
// failure's word and path, and every failure in errors; nil for none. prefix roots the paths.
func Refusal(ps []Problem, prefix string) error {
	if len(ps) == 0 {
		return nil
	}
	return problemsRefusal(ps, prefix)
}

func problemsRefusal(ps []Problem, prefix string) error {
	first := ps[0]
	items := make([]map[string]string, len(ps))
	for i, p := range ps {
		items[i] = map[string]string{"code": p.Code, "path": prefix + p.Path}
	}
	return refusal.New(refusal.Unprocessable, first.Code, first.Message).With("path", prefix+first.Path).With("errors", items)
}

// Envelope is the steps of one create or append, judged together, and the run facts they are
// judged against.
type Envelope struct {
	Steps []Step
	// Revision is the run revision the steps are accepted at (1 for a create): a step the body
	// did not name is s<Revision>-<verb>-<n>.
	Revision int64
	// After is the key of the step before the first (an append's run deliverable), which a model
	// step reads by default; "" for none.
	After string
	// Existing are the keys the run's rows already have, which results may name.
	Existing map[string]bool
	// DefaultRunner is the run's default Runner, which a route without an id names; "" for none.
	DefaultRunner string

	notArray bool
}

// Envelope is the run's steps as a create judges them, at revision 1.
func (r *Run) Envelope() Envelope {
	return Envelope{Steps: r.Steps, Revision: 1, notArray: r.w.bad&fSteps != 0}
}

// Checked is a step the grammar judged, its defaults applied: the kernel's key where the body
// named none, the verb's failure policy and visibility, the step before as a model step's
// results, the canonical input, a route's Runner.
type Checked struct {
	// Verb is VerbModel or VerbTool; Path is the step's, e.g. steps[1].model.
	Verb, Path string
	Key        string
	OnFailure  string
	Visibility string

	// A model step's. Model is the reference the catalog accepted.
	Model        string
	Prompt       string
	Instructions *string
	Attachments  []string
	Results      []string

	// A tool step's. Input is the canonical JSON object; Runner the Runner a route names, "" for
	// no route.
	Name          string
	Input         []byte
	Runner        string
	TimeoutMS     int64
	ModelDefaults *ModelDefaults
}

// Lookups are the checks of a step the grammar cannot make alone: the engine answers them from
// the store, the models catalog and the declaration compiler, as Judge reaches them. An error
// that is a refusal becomes the step's problem, at the refusal's own path when it has one; any
// other error becomes an internal_error problem.
type Lookups interface {
	// KernelTool reports whether name spells a kernel tool, and its wire name.
	KernelTool(name string) (wire string, ok bool)
	// DefaultModel is the deployment's default model.
	DefaultModel() string
	// CheckModel checks a model reference for work whose declaration has tools or not.
	CheckModel(ref string, hasTools bool) error
	// Attachments checks a model step's well-formed upload ids, at path.
	Attachments(c *Checked, path string, ids []string) error
	// Declare freezes a declaration at path (a model step's, or with defaults a tool step's
	// model_defaults') and reports whether the frozen set has tools.
	Declare(c *Checked, path string, src declare.StepSources, defaults bool) (hasTools bool, err error)
	// Address addresses a tool step; Judge asks only while the envelope has no problem.
	Address(c *Checked) error
}

// judge is one envelope's judgement: every problem, in order.
type judge struct {
	look     Lookups
	existing map[string]bool
	problems []Problem
}

func (j *judge) fail(code, path, format string, args ...any) {
	j.problems = append(j.problems, Problem{Code: code, Path: path, Message: fmt.Sprintf(format, args...)})
}

// lookup turns a Lookups error into the problem at path (the refusal's own, when it names one).
func (j *judge) lookup(err error, path string) {
	if err == nil {
		return
	}
	r, ok := refusal.As(err)
	if !ok {
		j.fail(refusal.CodeInternal, path, "%s", err.Error())
		return
	}
	if v, ok := r.Get("path"); ok {
		if s, _ := v.(string); s != "" {
			path = s
		}
	}
	j.fail(r.Code, path, "%s", r.Message)
}

// Judge judges an envelope's steps by the grammar (docs/api.md#runs), asking look where a check
// needs more than the grammar, and answers the steps it judged and every problem, in order: the
// envelope's shape and count, then each step in written order, each field in the order the
// grammar lists it. A step that is not one step is skipped after its problem.
func Judge(env Envelope, look Lookups) ([]*Checked, []Problem) {
	j := &judge{look: look, existing: make(map[string]bool, len(env.Existing)+len(env.Steps))}
	for k := range env.Existing {
		j.existing[k] = true
	}
	if env.notArray {
		j.fail(refusal.CodeValidationFailed, "steps", "steps must be an array of steps.")
		return nil, j.problems
	}
	if len(env.Steps) < 1 || len(env.Steps) > MaxSteps {
		j.fail(refusal.CodeValidationFailed, "steps", "steps must hold 1 to %d steps.", MaxSteps)
		return nil, j.problems
	}
	var out []*Checked
	prev := env.After
	for i := range env.Steps {
		c := j.step(&env, i, prev)
		if c == nil {
			continue
		}
		prev = c.Key
		out = append(out, c)
	}
	return out, j.problems
}

// options are the options both verbs take.
type options struct {
	key, onFailure, visibility string
	w                          *written
}

func (j *judge) step(env *Envelope, i int, prev string) *Checked {
	s := &env.Steps[i]
	path := fmt.Sprintf("steps[%d]", i)
	switch s.w.shape {
	case shapeNotObject:
		j.fail(refusal.CodeValidationFailed, path, "%s must be an object with one verb key.", path)
		return nil
	case shapeVerbCount:
		j.fail(refusal.CodeValidationFailed, path, "%s must have exactly one verb key.", path)
		return nil
	case shapeVerbUnavailable:
		j.fail(CodeStepVerbUnavailable, path+"."+s.w.verb, "The %s step verb is not available in this version.", s.w.verb)
		return nil
	case shapeVerbUnknown:
		j.fail(CodeUnknownStepVerb, path+"."+s.w.verb, "%s is not a step verb.", s.w.verb)
		return nil
	case shapeBodyNotObject:
		at := path + "." + s.w.verb
		j.fail(refusal.CodeValidationFailed, at, "%s must be an object.", at)
		return nil
	}
	if (s.Model == nil) == (s.Tool == nil) {
		j.fail(refusal.CodeValidationFailed, path, "%s must have exactly one verb key.", path)
		return nil
	}
	c := &Checked{Verb: VerbModel}
	var o options
	if s.Model != nil {
		m := s.Model
		o = options{m.Key, m.OnFailure, m.Visibility, &m.w}
		c.OnFailure, c.Visibility = OnFailureHalt, VisibilityVisible
	} else {
		t := s.Tool
		c.Verb = VerbTool
		o = options{t.Key, t.OnFailure, t.Visibility, &t.w}
		c.OnFailure, c.Visibility = OnFailurePropagate, VisibilityCollapsed
	}
	c.Path = path + "." + c.Verb
	for _, k := range o.w.unknown {
		j.fail(CodeUnknownStepOption, c.Path+"."+k, "%s is not an option of a %s step.", k, c.Verb)
	}
	c.Key = fmt.Sprintf("s%d-%s-%d", env.Revision, c.Verb, i+1)
	if o.w.has(fKey) || o.key != "" {
		switch {
		case o.w.bad&fKey != 0 || !store.IsTaskKey(o.key):
			j.fail(refusal.CodeValidationFailed, c.Path+".key", "key must match [A-Za-z0-9][A-Za-z0-9_-]{0,63}.")
		case ReservedKey(o.key):
			j.fail(CodeReservedTaskKey, c.Path+".key", "The key %s has a shape the kernel reserves.", o.key)
		default:
			c.Key = o.key
		}
	}
	if o.w.has(fOnFailure) || o.onFailure != "" {
		switch f := o.onFailure; {
		case o.w.bad&fOnFailure != 0 || (f != OnFailureHalt && f != OnFailurePropagate && f != OnFailureAbsorb):
			j.fail(CodeInvalidOnFailure, c.Path+".on_failure", "on_failure must be halt, propagate or absorb.")
		default:
			c.OnFailure = f
		}
	}
	if o.w.has(fVisibility) || o.visibility != "" {
		switch v := o.visibility; {
		case o.w.bad&fVisibility != 0 || (v != VisibilityVisible && v != VisibilityCollapsed && v != VisibilityHidden):
			j.fail(CodeInvalidVisibility, c.Path+".visibility", "visibility must be visible, collapsed or hidden.")
		default:
			c.Visibility = v
		}
	}
	if s.Model != nil {
		j.model(c, s.Model, prev)
	} else {
		j.tool(c, s.Tool, env.DefaultRunner)
	}
	j.existing[c.Key] = true
	return c
}

func (j *judge) model(c *Checked, m *Model, prev string) {
	w := &m.w
	hasAttachments := false
	if w.has(fAttachments) || m.Attachments != nil {
		ids := m.Attachments
		if w.bad&fAttachments != 0 || len(ids) > MaxAttachments {
			j.fail(CodeInvalidAttachments, c.Path+".attachments", "attachments must be an array of at most %d upload ids.", MaxAttachments)
		} else {
			wellFormed := true
			for k, id := range ids {
				at := fmt.Sprintf("%s.attachments[%d]", c.Path, k)
				if !store.IsPublicID(id) {
					j.fail(CodeInvalidAttachments, at, "%s is not an upload id.", at)
					wellFormed = false
				}
			}
			if wellFormed && len(ids) > 0 {
				c.Attachments = ids
				j.lookup(j.look.Attachments(c, c.Path+".attachments", ids), c.Path+".attachments")
			}
			hasAttachments = len(ids) > 0
		}
	}
	switch {
	case w.missing&fPrompt != 0:
		j.fail(CodePromptRequired, c.Path+".prompt", "A model step needs a prompt.")
	case w.bad&fPrompt != 0 || (m.Prompt == "" && !hasAttachments):
		j.fail(CodePromptRequired, c.Path+".prompt", "prompt must be a string, empty only with attachments.")
	default:
		c.Prompt = m.Prompt
	}
	if w.bad&fInstructions != 0 {
		j.fail(refusal.CodeValidationFailed, c.Path+".instructions", "instructions must be a string.")
	} else {
		c.Instructions = m.Instructions
	}
	switch {
	case w.bad&fResults != 0:
		j.fail(CodeUnknownResultKey, c.Path+".results", "results must be an array of task keys.")
	case m.Results != nil:
		for k, key := range m.Results {
			if !j.existing[key] {
				j.fail(CodeUnknownResultKey, fmt.Sprintf("%s.results[%d]", c.Path, k), "No earlier task %s in this run.", key)
			}
		}
		c.Results = m.Results
	case prev != "":
		c.Results = []string{prev}
	}
	hasTools := j.declare(c, c.Path, &m.Declaration, false)
	j.checkModel(c, c.Path+".model", m.Model, w, hasTools, true)
}

// checkModel checks a model reference at path: the body's bad value, else the catalog's answer;
// when orDefault, an absent reference names the deployment's default. It sets c.Model for a
// model step's own reference.
func (j *judge) checkModel(c *Checked, path, ref string, w *written, hasTools, orDefault bool) {
	if w.bad&fModel != 0 {
		j.fail(CodeUnknownModel, path, "model must be a provider/model string.")
		return
	}
	if !w.has(fModel) && ref == "" {
		if !orDefault {
			return
		}
		// A step that names no model runs on the deployment's default_model, as a message
		// without one does (docs/api.md, "Runs").
		ref = j.look.DefaultModel()
	}
	if err := j.look.CheckModel(ref, hasTools); err != nil {
		r, ok := refusal.As(err)
		if !ok {
			j.fail(refusal.CodeInternal, path, "%s", err.Error())
			return
		}
		j.fail(r.Code, path, "%s", r.Message)
		return
	}
	if orDefault {
		c.Model = ref
	}
}

// declare judges a declaration's shape and hands it to the engine to freeze; it reports whether
// the frozen set has tools. A declaration of none freezes nothing.
func (j *judge) declare(c *Checked, path string, d *Declaration, defaults bool) bool {
	src, declared := d.sources()
	if !declared {
		return false
	}
	if d.Tools != nil && len(d.Tools) == 0 {
		// docs/api.md#runs: a step that writes tools writes at least one; "no tools" is the
		// absence of the field.
		j.fail(CodeInvalidTools, path+".tools", "tools must not be empty; omit it to declare no tools.")
		return false
	}
	hasTools, err := j.look.Declare(c, path, src, defaults)
	j.lookup(err, path)
	return err == nil && hasTools
}

// sources is the declaration as core/declare reads a step's fields (each as written, nil when
// absent), and whether it declares anything.
func (d *Declaration) sources() (declare.StepSources, bool) {
	src := declare.StepSources{
		Tools:                   d.field(fTools, d.Tools != nil, func() []byte { return jsonwire.Array(d.Tools...).Encode() }),
		KernelTools:             d.field(fKernelTools, d.KernelTools != nil, func() []byte { return stringsJSON(d.KernelTools) }),
		RunnerExecutorPublicIDs: d.field(fRunnerIDs, d.RunnerExecutorPublicIDs != nil, func() []byte { return stringsJSON(d.RunnerExecutorPublicIDs) }),
		RunnerToolNames:         d.field(fRunnerToolNames, d.RunnerToolNames != nil, func() []byte { return stringsJSON(d.RunnerToolNames) }),
		ToolProviderTools:       d.field(fToolProviderTools, d.ToolProviderTools != nil, func() []byte { return stringsJSON(d.ToolProviderTools) }),
		EagerToolNames:          d.field(fEagerToolNames, d.EagerToolNames != nil, func() []byte { return stringsJSON(d.EagerToolNames) }),
	}
	declared := src.Tools != nil || src.KernelTools != nil || src.RunnerExecutorPublicIDs != nil || src.RunnerToolNames != nil ||
		src.ToolProviderTools != nil || src.EagerToolNames != nil
	return src, declared
}

func (d *Declaration) field(f field, set bool, enc func() []byte) []byte {
	if v, ok := d.w.bad[f]; ok {
		return v.Encode()
	}
	if set {
		return enc()
	}
	if d.w.null&f != 0 {
		return []byte("null")
	}
	return nil
}

func stringsJSON(list []string) []byte {
	b := []byte{'['}
	for i, s := range list {
		if i > 0 {
			b = append(b, ',')
		}
		b = jsonwire.AppendString(b, s)
	}
	return append(b, ']')
}

func (j *judge) tool(c *Checked, t *Tool, defaultRunner string) {
	w := &t.w
	if w.given&fToolCallID != 0 {
		j.fail(CodeInvalidToolCallID, c.Path+".tool_call_id", "Pairing keys are the kernel's; a step cannot carry tool_call_id.")
	}
	switch name := t.Name; {
	case name == "":
		j.fail(refusal.CodeValidationFailed, c.Path+".name", "A tool step needs a name.")
	case utf8.RuneCountInString(name) > MaxToolNameLen:
		j.fail(refusal.CodeValidationFailed, c.Path+".name", "name is longer than %d characters.", MaxToolNameLen)
	default:
		if wire, kernel := j.look.KernelTool(name); kernel {
			j.fail(CodeReservedToolName, c.Path+".name", "%s names the kernel tool %s; the model reaches kernel tools through its own calls.", c.Path+".name", wire)
		}
		c.Name = name
	}
	c.Input = []byte("{}")
	if w.bad&fInput != 0 {
		j.fail(CodeInvalidToolInput, c.Path+".input", "input must be a JSON object.")
	} else if t.Input != nil {
		b, err := json.Marshal(t.Input)
		var canon []byte
		if err == nil {
			canon, err = jsonwire.CanonicalValue(b)
		}
		switch {
		case err != nil:
			j.fail(CodeInvalidToolInput, c.Path+".input", "input holds a value the store cannot keep.")
		case len(canon) > MaxToolInputBytes:
			j.fail(CodeToolInputTooLarge, c.Path+".input", "input is %d bytes; the bound is %d.", len(canon), MaxToolInputBytes)
		default:
			c.Input = canon
		}
	}
	if w.has(fTimeout) || t.TimeoutMS != 0 {
		if ms := t.TimeoutMS; w.bad&fTimeout != 0 || ms < 1 || ms > MaxTimeout.Milliseconds() {
			j.fail(CodeInvalidTimeoutMS, c.Path+".timeout_ms", "timeout_ms must be an integer from 1 to %d.", MaxTimeout.Milliseconds())
		} else {
			c.TimeoutMS = ms
		}
	}
	if w.bad&fDefaults != 0 {
		j.fail(refusal.CodeValidationFailed, c.Path+".model_defaults", "model_defaults must be an object.")
	} else if md := t.ModelDefaults; md != nil {
		at := c.Path + ".model_defaults"
		for _, k := range md.w.unknown {
			j.fail(CodeUnknownStepOption, at+"."+k, "%s is not a model_defaults key.", k)
		}
		if md.w.bad&fInstructions != 0 {
			j.fail(refusal.CodeValidationFailed, at+".instructions", "instructions must be a string.")
		}
		hasTools := j.declare(c, at, &md.Declaration, true)
		j.checkModel(c, at+".model", md.Model, &md.w, hasTools, false)
		c.ModelDefaults = md
	}
	if w.bad&fRoute != 0 || t.Route != nil {
		j.route(c, t, defaultRunner)
	}
	if c.Name == "" || len(j.problems) > 0 {
		return
	}
	j.lookup(j.look.Address(c), c.Path)
}

func (j *judge) route(c *Checked, t *Tool, defaultRunner string) {
	at := c.Path + ".route"
	rt := t.Route
	if t.w.bad&fRoute != 0 {
		j.fail(CodeInvalidToolRoute, at, "route must be {\"kind\": \"runner\", \"runner_executor_public_id\": uuid, \"tool_name\": name}, tool_name optional.")
		return
	}
	w := &rt.w
	if len(w.unknown) > 0 {
		k := w.unknown[0]
		j.fail(CodeInvalidToolRoute, at+"."+k, "%s is not a route key; a tool step's route takes kind, runner_executor_public_id and tool_name.", k)
		return
	}
	if rt.Kind != RouteRunner {
		j.fail(CodeInvalidToolRoute, at+".kind", "route.kind must be runner.")
		return
	}
	// A declaration's route names the served tool in tool_name, apart from the callable's own
	// name; a tool step has one name, the served one, so tool_name may repeat it and nothing else.
	if w.has(fToolName) || rt.ToolName != "" {
		if w.bad&fToolName != 0 || rt.ToolName != c.Name {
			j.fail(CodeInvalidToolRoute, at+".tool_name", "route.tool_name must be the step's name, %q (a tool step calls the Runner's tool by its name); leave tool_name out or write the same name.", c.Name)
			return
		}
	}
	id := defaultRunner
	if w.has(fRunnerID) || rt.RunnerExecutorPublicID != "" {
		v := strings.ToLower(rt.RunnerExecutorPublicID)
		if w.bad&fRunnerID != 0 || !store.IsPublicID(v) {
			j.fail(CodeInvalidToolRoute, at+".runner_executor_public_id", "runner_executor_public_id must be a UUID.")
			return
		}
		id = v
	} else if id == "" {
		j.fail(CodeRunnerTargetRequired, at, "The run has no default Runner; name one in the route.")
		return
	}
	c.Runner = id
}

// DuplicateKey answers 409 duplicate_task_key for a key written twice in an envelope the grammar
// accepted, or already one of the run's (inRun); prefix roots the path.
func DuplicateKey(list []*Checked, inRun map[string]bool, prefix string) error {
	seen := make(map[string]bool, len(list))
	for i, c := range list {
		if seen[c.Key] || inRun[c.Key] {
			return refusal.Newf(refusal.Conflict, CodeDuplicateTaskKey, "The key %s is already used.", c.Key).
				With("path", fmt.Sprintf("%ssteps[%d].%s.key", prefix, i, c.Verb))
		}
		seen[c.Key] = true
	}
	return nil
}
