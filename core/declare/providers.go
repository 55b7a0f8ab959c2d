package declare

import (
	"encoding/json"
	"sort"

	"github.com/nexuskernel/nexus/core/refusal"
	"github.com/nexuskernel/nexus/sdk/announce"
	"github.com/nexuskernel/nexus/sdk/jsonwire"
)

// Provider is what acceptance reads of one tool provider of the workspace (a plugin, the MCP
// bridge, an HTTP tool provider): an active executor of kind tool_provider, as the caller loaded
// it, with its current announcement. Together they are the pool that serves an unrouted
// function tool by name.
type Provider struct {
	PublicID     string
	DisplayName  string
	Announcement announce.Announcement
}

// Pin is one pinned import (docs/agent-tools.md#pinned-imports): the definition a profile with
// pin_imports recorded for a tool its selectors matched, and its digest
// (announce.DefinitionDigest). New work freezes the pinned definition, not the current one, and
// a call is served only by a provider whose own current definition has the same digest.
type Pin struct {
	Name          string                     `json:"name"`
	Description   string                     `json:"description"`
	InputSchema   json.RawMessage            `json:"input_schema"`
	EffectProfile *announce.AnnouncedProfile `json:"effect_profile"`
	Digest        string                     `json:"digest"`
}

func (p *Pin) tool() announce.Tool {
	d := p.Description
	return announce.Tool{Name: p.Name, Description: &d, InputSchema: p.InputSchema, EffectProfile: p.EffectProfile}
}

// pinOf records t's definition.
func pinOf(t announce.Tool) Pin {
	return Pin{Name: t.Name, Description: *t.Description, InputSchema: t.InputSchema, EffectProfile: t.EffectProfile,
		Digest: announce.DefinitionDigest(t)}
}

// The sources of an imported tool, as the assembly route reports them.
const (
	SourceKernel       = "kernel"
	SourceRunnerImport = "runner"
	SourceToolProvider = announce.PluginKindToolProvider
)

// ImportedTool is one tool of a frozen set that an import (or the fill of a bare name) put
// there, as the assembly route shows it (docs/api.md#agent-profiles): where it comes from, the
// name its source serves it under, whether it is deferred, and its pin.
type ImportedTool struct {
	Callable string `json:"callable"`
	Source   string `json:"source"`
	ToolName string `json:"tool_name"`
	// RunnerExecutorPublicID is the serving Runner of a Runner import, else "".
	RunnerExecutorPublicID string `json:"runner_executor_public_id,omitempty"`
	Deferred               bool   `json:"deferred"`
	// Pin is the definition digest the work freezes for a pinned tool-provider import; nil
	// when the tool is not pinned.
	Pin *string `json:"pin"`
}

// ImportProblem is an import refusal that a profile write or the assembly reports instead of
// refusing (Acceptance.Report), since a provider may be restarting: the word, the field and the
// unprefixed path it is about ("" for the assembled set), the tool name where there is one, and
// the detail sentence.
type ImportProblem struct {
	Code     string `json:"code"`
	Field    string `json:"field"`
	Path     string `json:"path"`
	ToolName string `json:"tool_name,omitempty"`
	Message  string `json:"message"`
}

func problemOf(r *refusal.Error) ImportProblem {
	return ImportProblem{Code: r.Code, Field: fact(r, extraField), Path: unprefixed(r), ToolName: fact(r, extraToolName), Message: r.Message}
}

// notServedHint is how a refusal of a tool no provider serves ends: what makes it served.
const notServedHint = "; a plugin serves a workspace created after it loaded from the plugin's next start (nexus plugins restart NAME)"

// providerPool is the tool providers' tools by served name: which names any provider announces,
// and the model-facing definitions of each (at most one per provider).
type providerPool struct {
	tools map[string]*poolTool
	names []string // the names with a definition, sorted; built on first use
}

// poolTool is one served name of the pool: its first model-facing definition and any further
// member's, which must agree with it.
type poolTool struct {
	// def points into the caller's announcement, which acceptance never changes.
	def    *announce.Tool
	others []*announce.Tool
}

func poolOf(providers []Provider) *providerPool {
	n := 0
	for i := range providers {
		n += len(providers[i].Announcement.Tools)
	}
	p := &providerPool{tools: make(map[string]*poolTool, n)}
	slab := make([]poolTool, 0, n) // one allocation for every name, not one per name
	for i := range providers {
		tools := providers[i].Announcement.Tools
		for j := range tools {
			t := &tools[j]
			pt := p.tools[t.Name]
			if pt == nil {
				slab = append(slab, poolTool{})
				pt = &slab[len(slab)-1]
				p.tools[t.Name] = pt
			}
			if !t.ModelFacing() || !validName(t.Name) {
				continue
			}
			if pt.def == nil {
				pt.def = t
			} else {
				pt.others = append(pt.others, t)
			}
		}
	}
	return p
}

// served reports whether any provider announces name.
func (p *providerPool) served(name string) bool { return p.tools[name] != nil }

// described reports whether a provider announces name with a description and an input schema.
func (p *providerPool) described(name string) bool {
	pt := p.tools[name]
	return pt != nil && pt.def != nil
}

func (p *providerPool) sortedNames() []string {
	if p.names == nil {
		p.names = make([]string, 0, len(p.tools))
		for n, pt := range p.tools {
			if pt.def != nil {
				p.names = append(p.names, n)
			}
		}
		sort.Strings(p.names)
	}
	return p.names
}

// definition is the one definition the pool's members announce for name; members that announce
// different ones are pool_definition_conflict, counted against field. ok is false when no member
// announces name with a description and an input schema.
func (p *providerPool) definition(name, field string) (announce.Tool, bool, *refusal.Error) {
	pt := p.tools[name]
	if pt == nil || pt.def == nil {
		return announce.Tool{}, false, nil
	}
	if len(pt.others) > 0 {
		first := announce.DefinitionDigest(*pt.def)
		for _, d := range pt.others {
			if announce.DefinitionDigest(*d) != first {
				return announce.Tool{}, true, assembledRefusal(WordPoolDefinitionConflict, field,
					acceptanceFacts{callable: name, toolName: name},
					"the tool providers of this workspace announce "+quote(name)+" with different definitions; make them agree, or retire one")
			}
		}
	}
	return *pt.def, true, nil
}

// providerEntry is the frozen entry of a tool-provider tool: nested, its announced description
// and schema, its effect profile and pin under "import", deferred unless eager.
func providerEntry(t announce.Tool, pin string, deferLoading *bool) (entry, bool) {
	schema, err := jsonwire.Decode(t.InputSchema)
	if err != nil || !schema.IsObject() || schema.HasDuplicateKeys() {
		return entry{}, false // the announcement door refuses these; nothing here can offer them
	}
	facts, importValue := sourceOnlyFacts, sourceOnlyValue
	var profile *announce.EffectProfile
	if t.EffectProfile != nil {
		if p, err := t.EffectProfile.Profile(); err == nil {
			profile = &p
		}
	}
	if profile != nil || pin != "" {
		facts = &ImportFacts{EffectProfile: profile, Pin: pin}
		imp := []jsonwire.Field{jsonwire.M("source", jsonwire.String(importSourceToolProvider))}
		if profile != nil {
			imp = append(imp, jsonwire.M("effect_profile", profileValue(*profile)))
		}
		if pin != "" {
			imp = append(imp, jsonwire.M("pin", jsonwire.String(pin)))
		}
		importValue = jsonwire.Object(imp...)
	}
	fields := []jsonwire.Field{
		jsonwire.M("type", jsonwire.String("function")),
		jsonwire.M("function", jsonwire.Object(
			jsonwire.M("name", jsonwire.String(t.Name)),
			jsonwire.M("description", jsonwire.String(*t.Description)),
			jsonwire.M("parameters", schema),
		)),
		jsonwire.M("import", importValue),
	}
	if deferLoading != nil {
		fields = append(fields, jsonwire.M("defer_loading", jsonwire.Bool(*deferLoading)))
	}
	return entry{name: t.Name, value: jsonwire.Object(fields...), deferLoading: deferLoading, imp: facts}, true
}

// sourceOnlyFacts and sourceOnlyValue are the import facts of a tool announced without an effect
// profile and not pinned, shared: entries never change them.
var (
	sourceOnlyFacts = &ImportFacts{}
	sourceOnlyValue = jsonwire.Object(jsonwire.M("source", jsonwire.String(importSourceToolProvider)))
)

func profileValue(p announce.EffectProfile) jsonwire.Value {
	return jsonwire.Object(
		jsonwire.M(announce.KeyKind, jsonwire.String(string(p.Kind))),
		jsonwire.M(announce.KeyDestructive, jsonwire.Bool(p.Destructive)),
		jsonwire.M(announce.KeyEffectScope, jsonwire.String(string(p.EffectScope))),
		jsonwire.M(announce.KeyIdempotency, jsonwire.String(string(p.Idempotency))),
		jsonwire.M(announce.KeyReconciliation, jsonwire.String(string(p.Reconciliation))),
	)
}

// importRun is one acceptance's import state: what the set holds so far and what the
// acceptance reports.
type importRun struct {
	c        *Compiler
	in       *Acceptance
	im       *Imports
	pool     *providerPool
	explicit map[string]bool
	taken    map[string]bool
	eager    map[string]bool
	imported []ImportedTool
	problems []ImportProblem
	pins     []Pin
}

// fail is an import refusal: refused, or reported when the acceptance reports (stop is then
// false and the caller skips what failed).
func (ir *importRun) fail(r *refusal.Error) (stop *refusal.Error) {
	if ir.in.Report {
		ir.problems = append(ir.problems, problemOf(r))
		return nil
	}
	return r
}

func (ir *importRun) deferred(callable string) *bool {
	d := !ir.eager[callable]
	return &d
}

// fill is the bare-name rule (docs/agent-tools.md#imports): an explicit function tool declared
// by name alone (no description, no parameters, no route) whose name a provider serves is filled
// from the providers' announcement, or refused; it is never offered empty. entries are the
// explicit entries, copied.
func (ir *importRun) fill(entries []entry) ([]entry, *refusal.Error) {
	out := entries[:0:0]
	for i := range entries {
		e := entries[i]
		if !isBare(&e) || !ir.pool.served(e.name) {
			// A name no provider serves is left as declared: its call fails tool_not_served.
			out = append(out, e)
			continue
		}
		t, ok, r := ir.pool.definition(e.name, FieldToolDefinitions)
		if r == nil && !ok {
			r = assembledRefusal(WordToolNotServed, FieldToolDefinitions, acceptanceFacts{callable: e.name, toolName: e.name},
				quote(e.name)+" is declared by name alone and the tool providers of this workspace announce it without a description and an input schema to fill it from; write its description and parameters, or import a tool they describe with tool_provider_tools")
		}
		if r != nil {
			if stop := ir.fail(r); stop != nil {
				return nil, stop
			}
			out = append(out, e) // reported: the assembly shows it as declared
			continue
		}
		filled, ok := providerEntry(t, "", e.deferLoading)
		if !ok {
			out = append(out, e)
			continue
		}
		out = append(out, filled)
		ir.imported = append(ir.imported, ImportedTool{Callable: e.name, Source: SourceToolProvider, ToolName: e.name,
			Deferred: e.deferLoading != nil && *e.deferLoading})
	}
	return out, nil
}

// isBare reports whether an entry is a function tool declared by name alone.
func isBare(e *entry) bool {
	if e.tool != nil || e.alias != nil || e.route != nil || e.imp != nil {
		return false
	}
	body := e.value
	if fn, ok := e.value.Get("function"); ok && fn.IsObject() {
		body = fn
	}
	return !body.Has("description") && !body.Has("parameters")
}

// providerImports is the tool-provider import (docs/agent-tools.md#imports): every selector of
// tool_provider_tools, or, for a pinned profile, every pinned name, frozen from the pool.
func (ir *importRun) providerImports() ([]entry, *refusal.Error) {
	if ir.in.Pins != nil {
		return ir.pinnedImports()
	}
	var out []entry
	var seen map[string]int // which selector took a name; one selector cannot take one twice
	if len(ir.im.ToolProviderTools) > 1 {
		seen = make(map[string]int)
	}
	for j, sel := range ir.im.ToolProviderTools {
		path := FieldToolProviderTools + indexPath("", j)
		var names []string
		if !announce.IsImportPattern(sel) {
			var r *refusal.Error
			switch {
			case ir.c.resolve(sel) != nil:
				r = rooted(WordReservedToolName, FieldToolProviderTools, path, acceptanceFacts{toolName: sel},
					quote(sel)+" is a kernel tool's name; declare kernel tools through kernel_tools")
			case !ir.pool.served(sel):
				r = rooted(WordToolNotServed, FieldToolProviderTools, path, acceptanceFacts{toolName: sel},
					"no tool provider of this workspace announces "+quote(sel)+notServedHint)
			case !ir.pool.described(sel):
				r = rooted(WordToolNotServed, FieldToolProviderTools, path, acceptanceFacts{toolName: sel},
					"the tool providers of this workspace announce "+quote(sel)+" without a description and an input schema, so it cannot be offered to a model")
			}
			if r != nil {
				if stop := ir.fail(r); stop != nil {
					return nil, stop
				}
				continue
			}
			names = []string{sel}
		} else {
			for _, n := range ir.pool.sortedNames() {
				if announce.MatchImport(sel, n) && ir.c.resolve(n) == nil {
					names = append(names, n)
				}
			}
			if len(names) == 0 {
				if stop := ir.fail(rooted(WordImportPatternUnmatched, FieldToolProviderTools, path, acceptanceFacts{toolName: sel},
					quote(sel)+" matches no tool the tool providers of this workspace announce"+notServedHint)); stop != nil {
					return nil, stop
				}
				continue
			}
		}
		for _, n := range names {
			if ir.explicit[n] {
				continue // an explicit entry of the same name wins
			}
			var r *refusal.Error
			if k, dup := seen[n]; dup {
				r = rooted(WordDuplicateToolName, FieldToolProviderTools, path, acceptanceFacts{callable: n, toolName: n},
					quote(n)+" is already imported by "+FieldToolProviderTools+indexPath("", k))
			} else if ir.taken[n] {
				r = rooted(WordDuplicateToolName, FieldToolProviderTools, path, acceptanceFacts{callable: n, toolName: n},
					quote(n)+" is already a callable of the assembled set (a kernel or Runner import)")
			}
			var t announce.Tool
			if r == nil {
				t, _, r = ir.pool.definition(n, FieldToolProviderTools)
			}
			if r != nil {
				if stop := ir.fail(r); stop != nil {
					return nil, stop
				}
				continue
			}
			if seen != nil {
				seen[n] = j
			}
			if ir.in.Report {
				ir.pins = append(ir.pins, pinOf(t))
			}
			e, ok := providerEntry(t, "", ir.deferred(n))
			if !ok {
				continue
			}
			ir.taken[n] = true
			out = append(out, e)
			ir.imported = append(ir.imported, ImportedTool{Callable: n, Source: SourceToolProvider, ToolName: n, Deferred: *e.deferLoading})
		}
	}
	return out, nil
}

// pinnedImports freezes a pinned profile's recorded definitions: the names its selectors matched
// when it was written, each as pinned. A pinned name no provider serves any more is
// tool_not_served; a name a selector would match now but did not then waits for a repin.
func (ir *importRun) pinnedImports() ([]entry, *refusal.Error) {
	var out []entry
	for j := range ir.in.Pins {
		p := &ir.in.Pins[j]
		if ir.explicit[p.Name] {
			continue
		}
		var r *refusal.Error
		switch {
		case !ir.pool.served(p.Name):
			r = assembledRefusal(WordToolNotServed, FieldToolProviderTools, acceptanceFacts{callable: p.Name, toolName: p.Name},
				"the pinned tool "+quote(p.Name)+" is announced by no tool provider of this workspace any more"+notServedHint)
		case ir.taken[p.Name]:
			r = assembledRefusal(WordDuplicateToolName, FieldToolProviderTools, acceptanceFacts{callable: p.Name, toolName: p.Name},
				quote(p.Name)+" is already a callable of the assembled set (a kernel or Runner import)")
		}
		if r != nil {
			if stop := ir.fail(r); stop != nil {
				return nil, stop
			}
			continue
		}
		if ir.in.Report {
			ir.pins = append(ir.pins, *p)
		}
		e, ok := providerEntry(p.tool(), p.Digest, ir.deferred(p.Name))
		if !ok {
			continue
		}
		ir.taken[p.Name] = true
		out = append(out, e)
		pin := p.Digest
		ir.imported = append(ir.imported, ImportedTool{Callable: p.Name, Source: SourceToolProvider, ToolName: p.Name,
			Deferred: *e.deferLoading, Pin: &pin})
	}
	return out, nil
}

// NeedsProviders reports whether acceptance reads the workspace's tool providers: the work
// imports from them, or declares a function tool by name alone, which is filled from them.
func (a *Acceptance) NeedsProviders() bool {
	if a.Imports != nil && (len(a.Imports.ToolProviderTools) > 0 || a.Pins != nil) {
		return true
	}
	for i := range a.Explicit.entriesOrNil() {
		if isBare(&a.Explicit.entries[i]) {
			return true
		}
	}
	return false
}

// ProblemOf is a refusal rooted at the declaration, reported as an import problem; ok is false
// for any other error.
func ProblemOf(err error) (ImportProblem, bool) {
	r, ok := declaration(err)
	if !ok {
		return ImportProblem{}, false
	}
	return problemOf(r), true
}
