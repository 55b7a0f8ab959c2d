package profiles

import (
	"database/sql"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/nexuskernel/nexus/core/declare"
	"github.com/nexuskernel/nexus/core/model"
	"github.com/nexuskernel/nexus/core/refusal"
	"github.com/nexuskernel/nexus/core/store"
	"github.com/nexuskernel/nexus/sdk/jsonwire"
)

// Configuration is a profile in its read-back form (docs/api.md#agent-profiles): what GET answers
// and a successful PUT returns. Its JSON encoding is the door's configuration object, keys in
// the order docs/api.md#agent-profiles lists them.
type Configuration struct {
	// ToolDefinitions is the stored render of the explicit declaration: rendered, sorted,
	// compact; "[]" when none. Imports are never in it.
	ToolDefinitions json.RawMessage
	// Imports reads back with kernel_tools and the candidate ids as arrays ([] when none, ids
	// lowercase) and runner_tool_names exactly as stored (nil is null: all tools).
	Imports declare.Imports
	// ApprovalMode is bypass, ask or rules; nil when unset.
	ApprovalMode *string
	// ApprovalRules is the rule list as given (compact JSON); nil when unset.
	ApprovalRules json.RawMessage
	// DefaultModel is a provider/model ref of the catalog; nil when unset.
	DefaultModel *string
	// Instructions are the standing system instructions; nil when unset.
	Instructions *string
	// PinImports is pin_imports: new work freezes the recorded Pins rather than what the
	// selectors match now (docs/agent-tools.md#pinned-imports).
	PinImports bool
	// Pins are the recorded pinned definitions; nil when the profile does not pin. They are
	// answered beside the configuration, never in it.
	Pins []declare.Pin
	// Problems are the import refusals the write that answers this reported
	// (declare.Acceptance.Report); nil on a read.
	Problems []declare.ImportProblem
	// Revision counts the profile's replacements (0 before the first). It is not on the wire.
	Revision int64
}

// emptyConfiguration is the read-back before the first PUT.
func emptyConfiguration() *Configuration {
	return &Configuration{ToolDefinitions: json.RawMessage("[]"), Imports: declare.Imports{}.ReadBack()}
}

// MarshalJSON writes the configuration object compactly, without HTML escaping, with the stored
// render's bytes as they are.
func (c *Configuration) MarshalJSON() ([]byte, error) {
	buf := make([]byte, 0, len(c.ToolDefinitions)+len(c.ApprovalRules)+256)
	buf = append(buf, `{"tool_definitions":`...)
	buf = append(buf, c.ToolDefinitions...)
	buf = append(buf, `,"kernel_tools":`...)
	buf = stringsValue(c.Imports.KernelTools).Append(buf)
	buf = append(buf, `,"runner_executor_public_ids":`...)
	buf = stringsValue(c.Imports.RunnerExecutorPublicIDs).Append(buf)
	buf = append(buf, `,"runner_tool_names":`...)
	buf = stringsValue(c.Imports.RunnerToolNames).Append(buf)
	buf = append(buf, `,"tool_provider_tools":`...)
	buf = stringsValue(nonNilList(c.Imports.ToolProviderTools)).Append(buf)
	buf = append(buf, `,"eager_tool_names":`...)
	buf = stringsValue(nonNilList(c.Imports.EagerToolNames)).Append(buf)
	buf = append(buf, `,"pin_imports":`...)
	buf = jsonwire.Bool(c.PinImports).Append(buf)
	buf = append(buf, `,"approval_mode":`...)
	buf = optString(c.ApprovalMode).Append(buf)
	buf = append(buf, `,"approval_rules":`...)
	if c.ApprovalRules == nil {
		buf = append(buf, "null"...)
	} else {
		buf = append(buf, c.ApprovalRules...)
	}
	buf = append(buf, `,"default_model":`...)
	buf = optString(c.DefaultModel).Append(buf)
	buf = append(buf, `,"instructions":`...)
	buf = optString(c.Instructions).Append(buf)
	return append(buf, '}'), nil
}

// ImportsValue is what the profile doors answer beside the configuration
// (docs/api.md#agent-profiles): the recorded pins, each its name and digest (null when the profile
// does not pin), and the import problems a write reported ([] on a read).
func (c *Configuration) ImportsValue() jsonwire.Value {
	pins := jsonwire.Null()
	if c.Pins != nil {
		items := make([]jsonwire.Value, len(c.Pins))
		for i, p := range c.Pins {
			items[i] = jsonwire.Object(jsonwire.M("name", jsonwire.String(p.Name)), jsonwire.M("digest", jsonwire.String(p.Digest)))
		}
		pins = jsonwire.Array(items...)
	}
	return jsonwire.Object(jsonwire.M("pins", pins), jsonwire.M("problems", ProblemsValue(c.Problems)))
}

// ProblemsValue is a list of import problems as the doors write it, each path under
// "configuration." as the profile and assembly doors root their fields.
func ProblemsValue(ps []declare.ImportProblem) jsonwire.Value {
	items := make([]jsonwire.Value, len(ps))
	for i, p := range ps {
		path := jsonwire.Null()
		if p.Path != "" {
			path = jsonwire.String("configuration." + p.Path)
		}
		ms := []jsonwire.Field{jsonwire.M("code", jsonwire.String(p.Code)), jsonwire.M("field", jsonwire.String(p.Field)),
			jsonwire.M("path", path)}
		if p.ToolName != "" {
			ms = append(ms, jsonwire.M("tool_name", jsonwire.String(p.ToolName)))
		}
		items[i] = jsonwire.Object(append(ms, jsonwire.M("message", jsonwire.String(p.Message)))...)
	}
	return jsonwire.Array(items...)
}

func nonNilList(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// stringsValue is a string list as JSON: nil is null.
func stringsValue(list []string) jsonwire.Value {
	if list == nil {
		return jsonwire.Null()
	}
	items := make([]jsonwire.Value, len(list))
	for i, s := range list {
		items[i] = jsonwire.String(s)
	}
	return jsonwire.Array(items...)
}

func optString(s *string) jsonwire.Value {
	if s == nil {
		return jsonwire.Null()
	}
	return jsonwire.String(*s)
}

// proposal is a validated configuration, ready to store.
type proposal struct {
	tools         *declare.Set
	imports       declare.Imports
	approvalMode  *string
	approvalRules []byte
	defaultModel  *string
	instructions  *string
	pinImports    bool
	repin         bool
}

// fieldRefusal is a refusal of a configuration field other than the declaration sources.
func fieldRefusal(word, field, suffix, format string, args ...any) *refusal.Error {
	return declare.FieldRefusal(word, field, suffix, fmt.Sprintf(format, args...))
}

// field reads one field of a configuration object. A field given twice is refused invalid, never
// merged; each field is read at its turn, so the first failure in validation order still wins.
func field(cfg jsonwire.Value, name string) (jsonwire.Value, bool, *refusal.Error) {
	n := 0
	for _, k := range cfg.Keys() {
		if k == name {
			n++
		}
	}
	if n > 1 {
		return jsonwire.Value{}, true, fieldRefusal(declare.WordInvalid, name, "", "%s is given more than once", name)
	}
	v, ok := cfg.Get(name)
	return v, ok, nil
}

// sources reads the declaration sources of a configuration object: tool_definitions compiled,
// then kernel_tools, runner_executor_public_ids, runner_tool_names, tool_provider_tools and
// eager_tool_names parsed, in that order. A field given twice is refused at its turn: the import
// fields before it are parsed first.
func (s *Service) sources(cfg jsonwire.Value) (*declare.Set, declare.Imports, error) {
	raw := make([][]byte, len(sourceFields))
	var repeated *refusal.Error
	var repeatedField string
	var declared *jsonwire.Value
	for i, name := range sourceFields {
		v, ok, r := field(cfg, name)
		if r != nil {
			repeated, repeatedField = r, name
			break
		}
		switch {
		case ok && i == 0:
			declared = &v
		case ok:
			raw[i] = v.Encode()
		}
	}
	tools := &declare.Set{}
	if declared != nil {
		var err error
		if tools, err = s.compiler.CompileValue(*declared); err != nil {
			return nil, declare.Imports{}, err
		}
	} else if repeated != nil && repeatedField == declare.FieldToolDefinitions {
		return nil, declare.Imports{}, repeated
	}
	im, err := s.compiler.ParseImports(declare.ImportSources{KernelTools: raw[1], RunnerExecutorPublicIDs: raw[2],
		RunnerToolNames: raw[3], ToolProviderTools: raw[4], EagerToolNames: raw[5]})
	if err != nil {
		return nil, declare.Imports{}, err
	}
	if repeated != nil {
		return nil, declare.Imports{}, repeated
	}
	return tools, im, nil
}

// validate checks a whole configuration object in the door's field order
// (docs/api.md#agent-profiles) and returns the first refusal. Unknown fields are ignored here: the
// door refuses them before.
func (s *Service) validate(cfg jsonwire.Value) (*proposal, error) {
	tools, im, err := s.sources(cfg)
	if err != nil {
		return nil, err
	}
	p := &proposal{tools: tools, imports: im}
	checks := []struct {
		name  string
		check func(v jsonwire.Value, present bool) *refusal.Error
	}{
		{FieldApprovalMode, p.approvalModeOf},
		{FieldApprovalRules, p.approvalRulesOf},
		{FieldDefaultModel, func(v jsonwire.Value, present bool) *refusal.Error { return p.defaultModelOf(v, present, s.models) }},
		{FieldInstructions, p.instructionsOf},
		{FieldPinImports, func(v jsonwire.Value, present bool) *refusal.Error {
			return boolField(FieldPinImports, v, present, &p.pinImports)
		}},
		{FieldRepin, func(v jsonwire.Value, present bool) *refusal.Error {
			return boolField(FieldRepin, v, present, &p.repin)
		}},
	}
	for _, c := range checks {
		v, present, r := field(cfg, c.name)
		if r == nil {
			r = c.check(v, present)
		}
		if r != nil {
			return nil, r
		}
	}
	return p, nil
}

// boolField reads an optional boolean: absent and null are false.
func boolField(name string, v jsonwire.Value, present bool, out *bool) *refusal.Error {
	if !present || v.IsNull() {
		return nil
	}
	b, ok := v.AsBool()
	if !ok {
		return fieldRefusal(declare.WordInvalid, name, "", "%s must be true, false or null", name)
	}
	*out = b
	return nil
}

// approvalModeOf: bypass, ask or rules; required when the profile declares tools.
func (p *proposal) approvalModeOf(v jsonwire.Value, present bool) *refusal.Error {
	if !present || v.IsNull() {
		if declare.DeclaresTools(p.tools, p.imports) {
			return fieldRefusal(WordRequired, FieldApprovalMode, "", "approval_mode is required when the profile declares tools")
		}
		return nil
	}
	mode, isString := v.AsString()
	if !isString || (mode != ModeBypass && mode != ModeAsk && mode != ModeRules) {
		return fieldRefusal(declare.WordInvalid, FieldApprovalMode, "", "approval_mode must be bypass, ask or rules")
	}
	p.approvalMode = &mode
	return nil
}

// approvalRulesOf: the grammar (docs/agent-tools.md#the-approval-gate).
func (p *proposal) approvalRulesOf(v jsonwire.Value, present bool) *refusal.Error {
	if !present {
		return nil
	}
	var r *refusal.Error
	p.approvalRules, r = checkApprovalRules(v)
	return r
}

// defaultModelOf: a provider/model ref the catalog holds.
func (p *proposal) defaultModelOf(v jsonwire.Value, present bool, models Models) *refusal.Error {
	if !present || v.IsNull() {
		return nil
	}
	ref, isString := v.AsString()
	if !isString || !model.ValidRef(ref) {
		return fieldRefusal(declare.WordInvalid, FieldDefaultModel, "", "default_model must be a provider/model ref")
	}
	if _, known := models.Lookup(ref); !known {
		return fieldRefusal(WordUnknownModel, FieldDefaultModel, "", "the models catalog has no model %q", ref)
	}
	p.defaultModel = &ref
	return nil
}

// instructionsOf: a string of at most MaxInstructionsBytes bytes.
func (p *proposal) instructionsOf(v jsonwire.Value, present bool) *refusal.Error {
	if !present || v.IsNull() {
		return nil
	}
	text, isString := v.AsString()
	// A NUL cannot be stored as text in PostgreSQL, and has no place in instructions.
	if !isString || strings.ContainsRune(text, 0) {
		return fieldRefusal(declare.WordInvalid, FieldInstructions, "", "instructions must be a string without NUL characters")
	}
	if len(text) > MaxInstructionsBytes {
		return fieldRefusal(declare.WordContentTooLarge, FieldInstructions, "",
			"instructions are %d bytes; the bound is %d", len(text), MaxInstructionsBytes)
	}
	p.instructions = &text
	return nil
}

// row is the proposal's stored form.
func (p *proposal) row(agentID, at int64) *store.AgentProfile {
	rb := p.imports.ReadBack()
	row := &store.AgentProfile{
		AgentID:                 agentID,
		ToolDefinitions:         string(p.tools.Bytes()),
		KernelTools:             string(stringsValue(rb.KernelTools).Encode()),
		RunnerExecutorPublicIDs: string(stringsValue(rb.RunnerExecutorPublicIDs).Encode()),
		ApprovalMode:            nullString(p.approvalMode),
		DefaultModel:            nullString(p.defaultModel),
		Instructions:            nullString(p.instructions),
		UpdatedAt:               at,
		ToolProviderTools:       string(stringsValue(rb.ToolProviderTools).Encode()),
		EagerToolNames:          string(stringsValue(rb.EagerToolNames).Encode()),
		PinImports:              p.pinImports,
	}
	if rb.RunnerToolNames != nil {
		row.RunnerToolNames = sql.NullString{String: string(stringsValue(rb.RunnerToolNames).Encode()), Valid: true}
	}
	if p.approvalRules != nil {
		row.ApprovalRules = sql.NullString{String: string(p.approvalRules), Valid: true}
	}
	return row
}

func nullString(s *string) sql.NullString {
	if s == nil {
		return sql.NullString{}
	}
	return sql.NullString{String: *s, Valid: true}
}

func stringPtr(n sql.NullString) *string {
	if !n.Valid {
		return nil
	}
	s := n.String
	return &s
}

// configurationOf reads a stored row back in the door's form.
func configurationOf(row *store.AgentProfile) (*Configuration, error) {
	im, err := importsOf(row)
	if err != nil {
		return nil, err
	}
	c := &Configuration{
		ToolDefinitions: json.RawMessage(row.ToolDefinitions),
		Imports:         im,
		ApprovalMode:    stringPtr(row.ApprovalMode),
		DefaultModel:    stringPtr(row.DefaultModel),
		Instructions:    stringPtr(row.Instructions),
		PinImports:      row.PinImports,
		Revision:        row.Revision,
	}
	if row.ApprovalRules.Valid {
		c.ApprovalRules = json.RawMessage(row.ApprovalRules.String)
	}
	if c.Pins, err = pinsOf(row); err != nil {
		return nil, err
	}
	return c, nil
}

// pinsOf decodes a row's recorded pins: nil when the profile does not pin, else the list ([]
// when its selectors matched nothing).
func pinsOf(row *store.AgentProfile) ([]declare.Pin, error) {
	if !row.PinImports {
		return nil, nil
	}
	pins := []declare.Pin{}
	if row.ImportPins.Valid {
		if err := json.Unmarshal([]byte(row.ImportPins.String), &pins); err != nil {
			return nil, fmt.Errorf("profiles: stored import_pins of agent %d: %w", row.AgentID, err)
		}
	}
	return pins, nil
}

// importsOf decodes a row's import fields in their read-back form.
func importsOf(row *store.AgentProfile) (declare.Imports, error) {
	var im declare.Imports
	if err := json.Unmarshal([]byte(row.KernelTools), &im.KernelTools); err != nil {
		return im, fmt.Errorf("profiles: stored kernel_tools of agent %d: %w", row.AgentID, err)
	}
	if err := json.Unmarshal([]byte(row.RunnerExecutorPublicIDs), &im.RunnerExecutorPublicIDs); err != nil {
		return im, fmt.Errorf("profiles: stored runner_executor_public_ids of agent %d: %w", row.AgentID, err)
	}
	if row.RunnerToolNames.Valid {
		if err := json.Unmarshal([]byte(row.RunnerToolNames.String), &im.RunnerToolNames); err != nil {
			return im, fmt.Errorf("profiles: stored runner_tool_names of agent %d: %w", row.AgentID, err)
		}
	}
	// "" is a row written without the import columns: it imports nothing, as their default says.
	if row.ToolProviderTools != "" {
		if err := json.Unmarshal([]byte(row.ToolProviderTools), &im.ToolProviderTools); err != nil {
			return im, fmt.Errorf("profiles: stored tool_provider_tools of agent %d: %w", row.AgentID, err)
		}
	}
	if row.EagerToolNames != "" {
		if err := json.Unmarshal([]byte(row.EagerToolNames), &im.EagerToolNames); err != nil {
			return im, fmt.Errorf("profiles: stored eager_tool_names of agent %d: %w", row.AgentID, err)
		}
	}
	return im.ReadBack(), nil
}
