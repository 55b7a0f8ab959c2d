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
// then kernel_tools, runner_executor_public_ids and runner_tool_names parsed, in that order. A
// field given twice is refused at its turn: the import fields before it are parsed first.
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
	im, err := s.compiler.ParseImports(raw[1], raw[2], raw[3])
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
		Revision:        row.Revision,
	}
	if row.ApprovalRules.Valid {
		c.ApprovalRules = json.RawMessage(row.ApprovalRules.String)
	}
	return c, nil
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
	return im.ReadBack(), nil
}
