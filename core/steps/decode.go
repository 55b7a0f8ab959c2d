package steps

import (
	"bytes"
	"encoding/json"
	"math"
	"sort"

	"github.com/nexuskernel/nexus/core/approval"
	"github.com/nexuskernel/nexus/core/refusal"
	"github.com/nexuskernel/nexus/sdk/jsonwire"
)

// Decoding a body (docs/api.md#runs). A body can write what a Go value cannot hold: a number
// where a string belongs, a null where the field takes none, a key the grammar does not know, an
// empty string the grammar refuses where "" is the Go value's absence. The decoder never fails:
// it fills the fields it can and keeps, unexported beside them, what the body wrote that they
// cannot say, so that Check and Judge answer it at its place in the documented order, with the
// word and path the field's own rule gives. A value built in Go has nothing kept: its fields
// say everything.

// field names a field of the grammar, for what a decoded body wrote.
type field uint32

const (
	fKey field = 1 << iota
	fOnFailure
	fVisibility
	fModel
	fPrompt
	fInstructions
	fAttachments
	fResults
	fInput
	fRoute
	fTimeout
	fDefaults
	fToolCallID
	fTools
	fKernelTools
	fRunnerIDs
	fRunnerToolNames
	fSteps
	fDefaultRunner
	fPromptMechanism
	fStart
	fToolName
	fRunnerID
	fToolProviderTools
	fEagerToolNames
)

// written is what a decoded body wrote that a value's fields cannot say by themselves.
type written struct {
	// given are the fields the body wrote, also where what it wrote is the field's zero value
	// (a key of "", or a null where null is no absence).
	given field
	// bad are the fields the body wrote with a value the field cannot hold.
	bad field
	// missing are the required fields the body left out.
	missing field
	// unknown are the keys the object may not carry, in byte order.
	unknown []string
}

func (w *written) has(f field) bool { return w.given&f != 0 || w.bad&f != 0 }

// declWritten is what a body wrote for a declaration: the fields it wrote as null (which declare
// as much as a list does), and each field it wrote with a shape the typed field cannot hold, as
// written, for core/declare to judge.
type declWritten struct {
	null field
	bad  map[field]jsonwire.Value
}

// Step shapes a body can write that no Step value can: why the step is not one.
const (
	shapeNone uint8 = iota
	shapeNotObject
	shapeVerbCount
	shapeVerbUnavailable
	shapeVerbUnknown
	shapeBodyNotObject
)

// stepWritten is a decoded step that is not one step: its shape, and the verb it named.
type stepWritten struct {
	shape uint8
	verb  string
}

// runWritten is what a body wrote for a run that Run's fields cannot say.
type runWritten struct {
	written
	notObject bool
	// edge is the first key of the kernel's edges the run carries, in edgeKeys' order; unknown
	// (the embedded list) holds the first other key that is no run field.
	edge string
	// rules is the approval rule list's problem, as written.
	rules *approval.Problem
}

// object is a JSON object's members by key; a repeated key keeps its last value, as
// encoding/json decodes it.
type object map[string]json.RawMessage

// objectOf reads raw as an object; a null or any other value is none.
func objectOf(raw []byte) (object, bool) {
	members, err := jsonwire.SplitObject(raw)
	if err != nil {
		return nil, false
	}
	o := make(object, len(members))
	for _, m := range members {
		o[m.Key] = m.Raw
	}
	return o, true
}

// keys answers the object's keys in byte order, so that the first refused is the same every time.
func (o object) keys() []string {
	out := make([]string, 0, len(o))
	for k := range o {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// unknownKeys lists the object's keys that allowed lacks, in byte order.
func (o object) unknownKeys(allowed map[string]bool) []string {
	var out []string
	for _, k := range o.keys() {
		if !allowed[k] {
			out = append(out, k)
		}
	}
	return out
}

func isNull(raw []byte) bool { return bytes.Equal(bytes.TrimSpace(raw), []byte("null")) }

// str reads the string at key: absent is "", as is null, which is given unless nullAbsent; any
// other value is bad.
func (w *written) str(o object, key string, f field, nullAbsent bool) string {
	raw, ok := o[key]
	switch {
	case !ok:
		return ""
	case isNull(raw):
		if !nullAbsent {
			w.given |= f
		}
		return ""
	}
	s, ok := jsonwire.DecodeString(raw)
	if !ok {
		w.bad |= f
		return ""
	}
	w.given |= f
	return s
}

// optStr reads an optional string at key: absent and null are nil, another value bad.
func (w *written) optStr(o object, key string, f field) *string {
	raw, ok := o[key]
	if !ok || isNull(raw) {
		return nil
	}
	s, ok := jsonwire.DecodeString(raw)
	if !ok {
		w.bad |= f
		return nil
	}
	return &s
}

// strList reads an optional list of strings at key, as encoding/json reads one (a null item is
// ""): absent and null are nil, [] an empty list, another value bad.
func (w *written) strList(o object, key string, f field) []string {
	raw, ok := o[key]
	if !ok || isNull(raw) {
		return nil
	}
	out, ok := stringList(raw)
	if !ok {
		w.bad |= f
	}
	return out
}

// stringList reads raw as a list of strings, a null item as "".
func stringList(raw []byte) ([]string, bool) {
	items, err := jsonwire.SplitArray(raw)
	if err != nil {
		return nil, false
	}
	out := make([]string, len(items))
	for i, it := range items {
		if isNull(it) {
			continue
		}
		s, ok := jsonwire.DecodeString(it)
		if !ok {
			return nil, false
		}
		out[i] = s
	}
	return out, true
}

// decode reads a step's four declaration fields.
func (d *Declaration) decode(o object) {
	if raw, ok := o["tools"]; ok {
		switch v, err := jsonwire.Decode(raw); {
		case err == nil && v.IsNull():
			d.w.null |= fTools
		case err == nil && v.IsArray():
			d.Tools = append([]jsonwire.Value{}, v.Items()...)
		default:
			d.keep(fTools, v)
		}
	}
	d.KernelTools = d.importList(o, "kernel_tools", fKernelTools)
	d.RunnerExecutorPublicIDs = d.importList(o, "runner_executor_public_ids", fRunnerIDs)
	d.RunnerToolNames = d.importList(o, "runner_tool_names", fRunnerToolNames)
	d.ToolProviderTools = d.importList(o, "tool_provider_tools", fToolProviderTools)
	d.EagerToolNames = d.importList(o, "eager_tool_names", fEagerToolNames)
}

// importList reads an import field: null is written as null, a list of strings is the list, and
// anything else (a null item included) is kept as written for core/declare's words.
func (d *Declaration) importList(o object, key string, f field) []string {
	raw, ok := o[key]
	if !ok {
		return nil
	}
	v, err := jsonwire.Decode(raw)
	if err == nil && v.IsNull() {
		d.w.null |= f
		return nil
	}
	if err == nil && v.IsArray() {
		out := make([]string, 0, v.Len())
		for _, it := range v.Items() {
			s, ok := it.AsString()
			if !ok {
				d.keep(f, v)
				return nil
			}
			out = append(out, s)
		}
		return out
	}
	d.keep(f, v)
	return nil
}

func (d *Declaration) keep(f field, v jsonwire.Value) {
	if d.w.bad == nil {
		d.w.bad = map[field]jsonwire.Value{}
	}
	d.w.bad[f] = v
}

var (
	runKeys = map[string]bool{"steps": true, "approval_mode": true, "approval_rules": true,
		"default_runner_executor_public_id": true, "prompt_mechanism": true, "start": true}
	// edgeKeys are the run fields only the kernel writes, refused in this order.
	edgeKeys     = []string{"compaction_policy", "deliverable", "tasks", "tools"}
	modelOptions = map[string]bool{"key": true, "on_failure": true, "visibility": true, "model": true, "prompt": true,
		"instructions": true, "tools": true, "kernel_tools": true, "runner_executor_public_ids": true, "runner_tool_names": true,
		"tool_provider_tools": true, "eager_tool_names": true, "attachments": true, "results": true}
	toolOptions = map[string]bool{"key": true, "on_failure": true, "visibility": true, "name": true, "input": true,
		"route": true, "timeout_ms": true, "model_defaults": true, "tool_call_id": true}
	defaultsOptions = map[string]bool{"model": true, "instructions": true, "tools": true, "kernel_tools": true,
		"runner_executor_public_ids": true, "runner_tool_names": true, "tool_provider_tools": true, "eager_tool_names": true}
	routeKeys = map[string]bool{"kind": true, "runner_executor_public_id": true, "tool_name": true}
)

// UnmarshalJSON decodes a body's run object; it never fails (see above).
func (r *Run) UnmarshalJSON(raw []byte) error {
	*r = Run{}
	o, ok := objectOf(raw)
	if !ok {
		r.w.notObject = true
		return nil
	}
	for _, k := range edgeKeys {
		if _, ok := o[k]; ok {
			r.w.edge = k
			break
		}
	}
	if u := o.unknownKeys(runKeys); len(u) > 0 {
		r.w.unknown = u[:1]
	}
	if v, ok := o["steps"]; ok && !isNull(v) {
		var notArray bool
		if r.Steps, notArray = decodeList(v); notArray {
			r.w.bad |= fSteps
		}
	}
	if v, ok := o["approval_mode"]; ok {
		r.ApprovalMode, _ = jsonwire.DecodeString(v)
	}
	if v, ok := o["approval_rules"]; ok && !isNull(v) {
		if r.ApprovalRules, r.w.rules = approval.Parse(v); r.w.rules != nil {
			r.ApprovalRules = nil
		}
	}
	r.DefaultRunnerExecutorPublicID = r.w.str(o, "default_runner_executor_public_id", fDefaultRunner, true)
	r.PromptMechanism = r.w.str(o, "prompt_mechanism", fPromptMechanism, true)
	if v, ok := o["start"]; ok && !isNull(v) {
		var b bool
		if json.Unmarshal(v, &b) != nil {
			r.w.bad |= fStart
		} else {
			r.Start = &b
		}
	}
	return nil
}

// decodeList reads an envelope's steps; notArray reports a value that is no array.
func decodeList(raw []byte) (list []Step, notArray bool) {
	items, err := jsonwire.SplitArray(raw)
	if err != nil {
		return nil, true
	}
	list = make([]Step, len(items))
	for i, it := range items {
		list[i].decode(it)
	}
	return list, false
}

// DecodeList decodes an append body's steps (docs/api.md#runs). A value that is no array is
// refused as Judge refuses it, and the append door answers that refusal at the body's place.
func DecodeList(raw []byte) ([]Step, error) {
	list, notArray := decodeList(raw)
	if notArray {
		return nil, notAList()
	}
	return list, nil
}

// UnmarshalJSON decodes one step of a body; it never fails (see above).
func (s *Step) UnmarshalJSON(raw []byte) error {
	s.decode(raw)
	return nil
}

func (s *Step) decode(raw []byte) {
	*s = Step{}
	o, ok := objectOf(raw)
	if !ok {
		s.w.shape = shapeNotObject
		return
	}
	if len(o) != 1 {
		s.w.shape = shapeVerbCount
		return
	}
	verb := o.keys()[0]
	s.w.verb = verb
	switch verb {
	case VerbModel, VerbTool:
	case verbAsk, verbWait, verbParallel:
		s.w.shape = shapeVerbUnavailable
		return
	default:
		s.w.shape = shapeVerbUnknown
		return
	}
	body, ok := objectOf(o[verb])
	if !ok {
		s.w.shape = shapeBodyNotObject
		return
	}
	if verb == VerbModel {
		s.Model = &Model{}
		s.Model.decode(body)
	} else {
		s.Tool = &Tool{}
		s.Tool.decode(body)
	}
}

func (m *Model) decode(o object) {
	w := &m.w
	w.unknown = o.unknownKeys(modelOptions)
	m.Key = w.str(o, "key", fKey, false)
	m.OnFailure = w.str(o, "on_failure", fOnFailure, false)
	m.Visibility = w.str(o, "visibility", fVisibility, false)
	m.Attachments = w.strList(o, "attachments", fAttachments)
	if _, ok := o["prompt"]; !ok {
		w.missing |= fPrompt
	}
	m.Prompt = w.str(o, "prompt", fPrompt, false)
	m.Instructions = w.optStr(o, "instructions", fInstructions)
	m.Results = w.strList(o, "results", fResults)
	m.Declaration.decode(o)
	m.Model = w.str(o, "model", fModel, true)
}

func (t *Tool) decode(o object) {
	w := &t.w
	w.unknown = o.unknownKeys(toolOptions)
	t.Key = w.str(o, "key", fKey, false)
	t.OnFailure = w.str(o, "on_failure", fOnFailure, false)
	t.Visibility = w.str(o, "visibility", fVisibility, false)
	if _, ok := o["tool_call_id"]; ok {
		w.given |= fToolCallID
	}
	t.Name, _ = jsonwire.DecodeString(o["name"])
	if v, ok := o["input"]; ok {
		if _, err := jsonwire.SplitObject(v); err != nil {
			w.bad |= fInput
		} else {
			dec := json.NewDecoder(bytes.NewReader(v))
			dec.UseNumber()
			if dec.Decode(&t.Input) != nil || t.Input == nil {
				w.bad |= fInput
				t.Input = nil
			}
		}
	}
	if v, ok := o["timeout_ms"]; ok {
		var f float64
		if isNull(v) || json.Unmarshal(v, &f) != nil || f != math.Trunc(f) || math.Abs(f) > 1<<53 {
			w.bad |= fTimeout
		} else {
			w.given |= fTimeout
			t.TimeoutMS = int64(f)
		}
	}
	if v, ok := o["model_defaults"]; ok && !isNull(v) {
		if md, ok := objectOf(v); ok {
			t.ModelDefaults = &ModelDefaults{}
			t.ModelDefaults.decode(md)
		} else {
			w.bad |= fDefaults
		}
	}
	if v, ok := o["route"]; ok {
		if ro, ok := objectOf(v); ok {
			t.Route = &Route{}
			t.Route.decode(ro)
		} else {
			w.bad |= fRoute
		}
	}
}

func (d *ModelDefaults) decode(o object) {
	w := &d.w
	w.unknown = o.unknownKeys(defaultsOptions)
	d.Instructions = w.optStr(o, "instructions", fInstructions)
	d.Declaration.decode(o)
	d.Model = w.str(o, "model", fModel, true)
}

func (r *Route) decode(o object) {
	w := &r.w
	if u := o.unknownKeys(routeKeys); len(u) > 0 {
		w.unknown = u[:1]
	}
	r.Kind, _ = jsonwire.DecodeString(o["kind"])
	r.ToolName = w.str(o, "tool_name", fToolName, false)
	r.RunnerExecutorPublicID = w.str(o, "runner_executor_public_id", fRunnerID, false)
}

// notAList is the refusal of an envelope whose steps are no array.
func notAList() error {
	return problemsRefusal([]Problem{{Code: refusal.CodeValidationFailed, Path: "steps", Message: "steps must be an array of steps."}}, "")
}
