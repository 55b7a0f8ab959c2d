package runs

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"

	"github.com/nexuskernel/nexus/core/declare"
	"github.com/nexuskernel/nexus/core/refusal"
	"github.com/nexuskernel/nexus/core/store"
	"github.com/nexuskernel/nexus/sdk/jsonwire"
)

// stepError is one failure of the step grammar: {code, path} plus a message.
type stepError struct {
	Code    string `json:"code"`
	Path    string `json:"path"`
	message string
}

var (
	reservedKeyA = regexp.MustCompile(`^r[0-9]`)
	reservedKeyB = regexp.MustCompile(`^s[0-9]+-[a-z]+-[0-9]+$`)
)

// ReservedKey reports whether a key has a kernel shape: r followed by a digit, or
// s<digits>-<verb>-<digits>.
func ReservedKey(k string) bool { return reservedKeyA.MatchString(k) || reservedKeyB.MatchString(k) }

// step is one parsed step.
type step struct {
	verb, key, path    string
	onFailure, visible string
	// model
	model, prompt, instructions string
	hasInstructions             bool
	results                     []string
	hasResults                  bool
	frozen                      *FrozenDeclaration
	attachments                 []Attachment
	// tool
	name    string
	input   []byte
	route   *Route
	address Address
	// served says that the statement addresses the row from its Runner's announcement
	// (addressStep): address holds only its role and executor.
	served    bool
	timeoutMS int64
	defaults  []byte
}

// stepParser accumulates every failure of one envelope (docs/api.md#runs).
type stepParser struct {
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
	skills   *skillFacts
	existing map[string]bool
	errs     []stepError
	// fx is the transaction's effects, where a Runner found eligible is noted for dispatch;
	// nil notes nothing.
	fx *effects
}

func (p *stepParser) fail(code, path, format string, args ...any) {
	p.errs = append(p.errs, stepError{Code: code, Path: path, message: fmt.Sprintf(format, args...)})
}

var modelOptions = map[string]bool{"key": true, "on_failure": true, "visibility": true, "model": true, "prompt": true,
	"instructions": true, "tools": true, "kernel_tools": true, "runner_executor_public_ids": true, "runner_tool_names": true,
	"attachments": true, "results": true}
var toolOptions = map[string]bool{"key": true, "on_failure": true, "visibility": true, "name": true, "input": true,
	"route": true, "timeout_ms": true, "model_defaults": true, "tool_call_id": true}
var defaultsOptions = map[string]bool{"model": true, "instructions": true, "tools": true, "kernel_tools": true,
	"runner_executor_public_ids": true, "runner_tool_names": true}

// parse reads the steps array at path (e.g. "run.steps" for errors, positions "steps[i]").
func (p *stepParser) parse(raw json.RawMessage, revision int64, prev string) []*step {
	var items []json.RawMessage
	if err := json.Unmarshal(raw, &items); err != nil || items == nil {
		p.fail(refusal.CodeValidationFailed, "steps", "steps must be an array of steps.")
		return nil
	}
	if len(items) < 1 || len(items) > MaxSteps {
		p.fail(refusal.CodeValidationFailed, "steps", "steps must hold 1 to %d steps.", MaxSteps)
		return nil
	}
	var out []*step
	for i, it := range items {
		path := fmt.Sprintf("steps[%d]", i)
		var obj map[string]json.RawMessage
		if err := json.Unmarshal(it, &obj); err != nil || obj == nil {
			p.fail(refusal.CodeValidationFailed, path, "%s must be an object with one verb key.", path)
			continue
		}
		keys := sortedKeys(obj)
		if len(keys) != 1 {
			p.fail(refusal.CodeValidationFailed, path, "%s must have exactly one verb key.", path)
			continue
		}
		verb := keys[0]
		switch verb {
		case "model", "tool":
		case "ask", "wait", "parallel":
			p.fail(CodeStepVerbUnavailable, path+"."+verb, "The %s step verb is not available in this version.", verb)
			continue
		default:
			p.fail(CodeUnknownStepVerb, path+"."+verb, "%s is not a step verb.", verb)
			continue
		}
		s := &step{verb: verb, path: path + "." + verb}
		var body map[string]json.RawMessage
		if err := json.Unmarshal(obj[verb], &body); err != nil || body == nil {
			p.fail(refusal.CodeValidationFailed, s.path, "%s must be an object.", s.path)
			continue
		}
		opts := modelOptions
		if verb == "tool" {
			opts = toolOptions
		}
		for _, k := range sortedKeys(body) {
			if !opts[k] {
				p.fail(CodeUnknownStepOption, s.path+"."+k, "%s is not an option of a %s step.", k, verb)
			}
		}
		s.key = fmt.Sprintf("s%d-%s-%d", revision, verb, i+1)
		if v, ok := body["key"]; ok {
			var k string
			switch {
			case json.Unmarshal(v, &k) != nil || !store.IsTaskKey(k):
				p.fail(refusal.CodeValidationFailed, s.path+".key", "key must match [A-Za-z0-9][A-Za-z0-9_-]{0,63}.")
			case ReservedKey(k):
				p.fail(CodeReservedTaskKey, s.path+".key", "The key %s has a shape the kernel reserves.", k)
			default:
				s.key = k
			}
		}
		s.onFailure = OnFailureHalt
		s.visible = VisibilityVisible
		if verb == "tool" {
			s.onFailure, s.visible = OnFailurePropagate, VisibilityCollapsed
		}
		if v, ok := body["on_failure"]; ok {
			var f string
			if json.Unmarshal(v, &f) != nil || (f != OnFailureHalt && f != OnFailurePropagate && f != OnFailureAbsorb) {
				p.fail(CodeInvalidOnFailure, s.path+".on_failure", "on_failure must be halt, propagate or absorb.")
			} else {
				s.onFailure = f
			}
		}
		if v, ok := body["visibility"]; ok {
			var f string
			if json.Unmarshal(v, &f) != nil || (f != VisibilityVisible && f != VisibilityCollapsed && f != VisibilityHidden) {
				p.fail(CodeInvalidVisibility, s.path+".visibility", "visibility must be visible, collapsed or hidden.")
			} else {
				s.visible = f
			}
		}
		if verb == "model" {
			p.parseModel(s, body, prev)
		} else {
			p.parseTool(s, body)
		}
		prev = s.key
		out = append(out, s)
	}
	return out
}

func str(v json.RawMessage) (string, bool) {
	var s string
	return s, json.Unmarshal(v, &s) == nil
}

func (p *stepParser) parseModel(s *step, body map[string]json.RawMessage, prev string) {
	hasAttachments := false
	if v, ok := body["attachments"]; ok && !isNull(v) {
		var ids []string
		if json.Unmarshal(v, &ids) != nil || len(ids) > MaxAttachments {
			p.fail(CodeInvalidAttachments, s.path+".attachments", "attachments must be an array of at most %d upload ids.", MaxAttachments)
		} else {
			wellFormed := true
			for j, id := range ids {
				at := fmt.Sprintf("%s.attachments[%d]", s.path, j)
				if !store.IsPublicID(id) {
					p.fail(CodeInvalidAttachments, at, "%s is not an upload id.", at)
					wellFormed = false
				}
			}
			if wellFormed && len(ids) > 0 && p.tx == nil {
				p.needsTx = true
			} else if wellFormed && len(ids) > 0 {
				atts, err := p.e.inputAttachments(p.ctx, p.tx, p.actor, ids, s.path+".attachments")
				if r, ok := refusal.As(err); ok {
					pth, _ := r.Get("path")
					ps, _ := pth.(string)
					p.fail(r.Code, ps, "%s", r.Message)
				} else if err != nil {
					p.fail(refusal.CodeInternal, s.path+".attachments", "%s", err.Error())
				}
				s.attachments = atts
			}
			hasAttachments = len(ids) > 0
		}
	}
	if v, ok := body["prompt"]; !ok {
		p.fail(CodePromptRequired, s.path+".prompt", "A model step needs a prompt.")
	} else if ps, ok := str(v); !ok || (ps == "" && !hasAttachments) {
		p.fail(CodePromptRequired, s.path+".prompt", "prompt must be a string, empty only with attachments.")
	} else {
		s.prompt = ps
	}
	if v, ok := body["instructions"]; ok && !isNull(v) {
		if is, ok := str(v); !ok {
			p.fail(refusal.CodeValidationFailed, s.path+".instructions", "instructions must be a string.")
		} else {
			s.instructions, s.hasInstructions = is, true
		}
	}
	if v, ok := body["results"]; ok && !isNull(v) {
		var keys []string
		if json.Unmarshal(v, &keys) != nil {
			p.fail(CodeUnknownResultKey, s.path+".results", "results must be an array of task keys.")
		} else {
			for j, k := range keys {
				if !p.existing[k] {
					p.fail(CodeUnknownResultKey, fmt.Sprintf("%s.results[%d]", s.path, j), "No earlier task %s in this run.", k)
				}
			}
			s.results, s.hasResults = keys, true
		}
	} else if prev != "" {
		s.results = []string{prev}
	}
	frozen, decl := p.declare(s.path, body)
	s.frozen = frozen
	if v, ok := body["model"]; !ok || isNull(v) {
		// A step that names no model runs on the deployment's default_model, as a message
		// without one does (docs/api.md, "Runs").
		ref := p.e.models.Default().Ref
		if _, err := p.e.models.Check(ref, decl); err != nil {
			r, _ := refusal.As(err)
			p.fail(r.Code, s.path+".model", "%s", r.Message)
		} else {
			s.model = ref
		}
	} else if ref, ok := str(v); !ok {
		p.fail(CodeUnknownModel, s.path+".model", "model must be a provider/model string.")
	} else if _, err := p.e.models.Check(ref, decl); err != nil {
		r, _ := refusal.As(err)
		p.fail(r.Code, s.path+".model", "%s", r.Message)
	} else {
		s.model = ref
	}
	p.existing[s.key] = true
}

// declare freezes a step's declaration through the compiler; it reports whether the frozen set
// has tools.
func (p *stepParser) declare(path string, body map[string]json.RawMessage) (*FrozenDeclaration, bool) {
	in := &stepDeclaration{WorkspaceID: p.actor.WorkspaceID, Selection: p.runner, Path: path, Skills: p.skills,
		Sources: declare.StepSources{Tools: body["tools"], KernelTools: body["kernel_tools"],
			RunnerExecutorPublicIDs: body["runner_executor_public_ids"], RunnerToolNames: body["runner_tool_names"]}}
	if src := in.Sources; src.Tools == nil && src.KernelTools == nil && src.RunnerExecutorPublicIDs == nil && src.RunnerToolNames == nil {
		return &FrozenDeclaration{ToolDefinitions: []byte("[]"), Environment: []byte("null"), SkillCatalog: []byte("[]")}, false
	}
	if in.Sources.Tools != nil {
		// docs/api.md#runs: a step that writes tools writes at least one; "no tools" is the
		// absence of the field.
		var items []json.RawMessage
		if json.Unmarshal(in.Sources.Tools, &items) == nil && items != nil && len(items) == 0 {
			p.fail(CodeInvalidTools, path+".tools", "tools must not be empty; omit it to declare no tools.")
			return nil, false
		}
	}
	if !p.actor.resolved() {
		p.needsWorkspace = true
		return nil, false
	}
	f, err := p.e.freezeStep(p.ctx, p.q, in)
	if err != nil {
		if r, ok := refusal.As(err); ok {
			pth, _ := r.Get("path")
			ps, _ := pth.(string)
			if ps == "" {
				ps = path
			}
			p.fail(r.Code, ps, "%s", r.Message)
			return nil, false
		}
		p.fail(refusal.CodeInternal, path, "%s", err.Error())
		return nil, false
	}
	return f, f.HasTools
}

func isNull(v json.RawMessage) bool { return bytes.Equal(bytes.TrimSpace(v), []byte("null")) }

func (p *stepParser) parseTool(s *step, body map[string]json.RawMessage) {
	if _, ok := body["tool_call_id"]; ok {
		p.fail(CodeInvalidToolCallID, s.path+".tool_call_id", "Pairing keys are the kernel's; a step cannot carry tool_call_id.")
	}
	name, ok := str(body["name"])
	switch {
	case !ok || name == "":
		p.fail(refusal.CodeValidationFailed, s.path+".name", "A tool step needs a name.")
	case len([]rune(name)) > MaxToolNameLen:
		p.fail(refusal.CodeValidationFailed, s.path+".name", "name is longer than %d characters.", MaxToolNameLen)
	default:
		if wire, kernel := p.e.compiler.KernelWire(name); kernel {
			p.fail(CodeReservedToolName, s.path+".name", "%s names the kernel tool %s; the model reaches kernel tools through its own calls.", s.path+".name", wire)
		}
		s.name = name
	}
	s.input = []byte("{}")
	if v, ok := body["input"]; ok {
		var obj map[string]json.RawMessage
		if json.Unmarshal(v, &obj) != nil || obj == nil {
			p.fail(CodeInvalidToolInput, s.path+".input", "input must be a JSON object.")
		} else if c, err := jsonwire.CanonicalValue(v); err != nil {
			p.fail(CodeInvalidToolInput, s.path+".input", "input holds a value the store cannot keep.")
		} else if len(c) > MaxToolInputBytes {
			p.fail(CodeToolInputTooLarge, s.path+".input", "input is %d bytes; the bound is %d.", len(c), MaxToolInputBytes)
		} else {
			s.input = c
		}
	}
	if v, ok := body["timeout_ms"]; ok {
		var f float64
		if json.Unmarshal(v, &f) != nil || f != float64(int64(f)) || f < 1 || f > float64(ToolParkMax.Milliseconds()) {
			p.fail(CodeInvalidTimeoutMS, s.path+".timeout_ms", "timeout_ms must be an integer from 1 to %d.", ToolParkMax.Milliseconds())
		} else {
			s.timeoutMS = int64(f)
		}
	}
	if v, ok := body["model_defaults"]; ok && !isNull(v) {
		var md map[string]json.RawMessage
		if json.Unmarshal(v, &md) != nil || md == nil {
			p.fail(refusal.CodeValidationFailed, s.path+".model_defaults", "model_defaults must be an object.")
		} else {
			for _, k := range sortedKeys(md) {
				if !defaultsOptions[k] {
					p.fail(CodeUnknownStepOption, s.path+".model_defaults."+k, "%s is not a model_defaults key.", k)
				}
			}
			frozen, decl := p.declare(s.path+".model_defaults", md)
			out := map[string]json.RawMessage{}
			if ref, ok := str(md["model"]); ok {
				if _, err := p.e.models.Check(ref, decl); err != nil {
					r, _ := refusal.As(err)
					p.fail(r.Code, s.path+".model_defaults.model", "%s", r.Message)
				}
				out["model"] = md["model"]
			}
			if ins, ok := md["instructions"]; ok {
				out["instructions"] = ins
			}
			if frozen != nil {
				out["tool_definitions"] = frozen.ToolDefinitions
				out["environment"] = frozen.Environment
				out["skill_catalog"] = frozen.SkillCatalog
			}
			s.defaults, _ = json.Marshal(out)
		}
	}
	if v, ok := body["route"]; ok {
		p.parseRoute(s, v)
	}
	if s.name == "" || len(p.errs) > 0 {
		p.existing[s.key] = true
		return
	}
	p.addressStep(s)
	p.existing[s.key] = true
}

func (p *stepParser) parseRoute(s *step, v json.RawMessage) {
	at := s.path + ".route"
	var obj map[string]json.RawMessage
	if json.Unmarshal(v, &obj) != nil || obj == nil {
		p.fail(CodeInvalidToolRoute, at, "route must be {\"kind\": \"runner\", \"runner_executor_public_id\": uuid, \"tool_name\": name}, tool_name optional.")
		return
	}
	for _, k := range sortedKeys(obj) {
		if k != "kind" && k != "runner_executor_public_id" && k != "tool_name" {
			p.fail(CodeInvalidToolRoute, at+"."+k, "%s is not a route key; a tool step's route takes kind, runner_executor_public_id and tool_name.", k)
			return
		}
	}
	if kind, ok := str(obj["kind"]); !ok || kind != "runner" {
		p.fail(CodeInvalidToolRoute, at+".kind", "route.kind must be runner.")
		return
	}
	// A declaration's route names the served tool in tool_name, apart from the callable's own
	// name; a tool step has one name, the served one, so tool_name may repeat it and nothing else.
	if raw, ok := obj["tool_name"]; ok {
		if tn, ok := str(raw); !ok || tn != s.name {
			p.fail(CodeInvalidToolRoute, at+".tool_name", "route.tool_name must be the step's name, %q (a tool step calls the Runner's tool by its name); leave tool_name out or write the same name.", s.name)
			return
		}
	}
	id := p.runner
	if raw, ok := obj["runner_executor_public_id"]; ok {
		v, ok := str(raw)
		if !ok || !store.IsPublicID(strings.ToLower(v)) {
			p.fail(CodeInvalidToolRoute, at+".runner_executor_public_id", "runner_executor_public_id must be a UUID.")
			return
		}
		id = strings.ToLower(v)
	} else if id == "" {
		p.fail(CodeRunnerTargetRequired, at, "The run has no default Runner; name one in the route.")
		return
	}
	s.route = &Route{Kind: "runner", RunnerExecutorPublicID: id}
}

// addressStep resolves a tool step's addressee at acceptance (docs/api.md#runs): a step nobody
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
func (p *stepParser) addressStep(s *step) {
	if p.tx == nil && s.route != nil {
		r := *s.route
		r.ToolName = s.name
		s.route, s.served, p.deferred = &r, true, true
		s.address = Address{Role: "runner", Executor: r.RunnerExecutorPublicID}
		return
	}
	if !p.actor.resolved() {
		p.needsWorkspace = true
		return
	}
	res := CallResolution{Declared: true, ToolName: s.name, Input: s.input}
	if s.route != nil {
		r := *s.route
		r.ToolName = s.name
		res.Route = &r
	}
	fakeRun := &store.Run{WorkspaceID: p.actor.WorkspaceID}
	a, err := p.e.address(p.ctx, p.q, fakeRun, res)
	if err != nil {
		p.fail(refusal.CodeInternal, s.path, "%s", err.Error())
		return
	}
	if s.route != nil {
		if a.Failure != nil {
			ex, err := store.ExecutorByPublicID(p.ctx, p.q, s.route.RunnerExecutorPublicID)
			if err != nil || ex.WorkspaceID != p.actor.WorkspaceID || ex.Kind != store.ExecutorRunner || ex.Status != store.ExecutorActive {
				p.fail(CodeRunnerNotEligible, s.path+".route", "Runner %s is not an active Runner of this workspace.", s.route.RunnerExecutorPublicID)
				return
			}
		} else {
			p.fx.noteActive(a.Executor)
		}
		s.route = res.Route
	}
	if a.Failure != nil {
		p.fail(CodeToolNotServed, s.path+".name", "%s", a.Failure.Detail)
		return
	}
	s.address = a
}

// refusal turns the collected failures into the envelope refusal: the first failure's code and
// path, every failure in errors. duplicate_task_key is a 409 answered alone.
func (p *stepParser) refusal(prefix string) error {
	if len(p.errs) == 0 {
		return nil
	}
	first := p.errs[0]
	items := make([]map[string]string, len(p.errs))
	for i, e := range p.errs {
		items[i] = map[string]string{"code": e.Code, "path": prefix + e.Path}
	}
	return refusal.New(refusal.Unprocessable, first.Code, first.message).
		With("path", prefix+first.Path).With("errors", items)
}

// duplicateKeys answers 409 duplicate_task_key for a key twice in the envelope or already in
// the run, once the grammar passed.
func duplicateKeys(steps []*step, inRun map[string]bool, prefix string) error {
	seen := map[string]bool{}
	for i, s := range steps {
		if seen[s.key] || inRun[s.key] {
			return conflict(CodeDuplicateTaskKey, "The key %s is already used.", s.key).With("path", fmt.Sprintf("%ssteps[%d].%s.key", prefix, i, s.verb))
		}
		seen[s.key] = true
	}
	return nil
}
