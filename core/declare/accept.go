package declare

import (
	"github.com/nexuskernel/nexus/core/refusal"
	"github.com/nexuskernel/nexus/sdk/announce"
	"github.com/nexuskernel/nexus/sdk/jsonwire"
)

// Runner is what acceptance reads of one Runner, as the caller loaded it.
type Runner struct {
	// PublicID is the Runner's public id; lookups compare it case-insensitively.
	PublicID    string
	DisplayName string
	// Eligible is the executor rules' answer for the answering agent: at least a known
	// executor of kind runner, not revoked. Connection presence is never a condition.
	Eligible bool
	// Announcement is the Runner's current announcement as stored.
	Announcement announce.Announcement
}

// Acceptance is everything one acceptance reads (docs/agent-tools.md#declaring-tools). Nothing is
// read later.
type Acceptance struct {
	// Explicit is the explicit set: a profile's stored render or a compiled step list.
	Explicit *Set
	// Imports are the import fields; nil for a model step that carries none of them, which
	// keeps the plain explicit-tools meaning (no kernel or Runner imports, no candidates).
	Imports *Imports
	// Selection is the selected Runner's public id, "" for none.
	Selection string
	// ToolNames narrows the final set; nil does not narrow, an empty non-nil list keeps
	// nothing.
	ToolNames []string
	// Runners are the Runners the acceptance may read: the selection, the candidates and
	// every Runner a route names. A Runner missing here is unknown, hence not eligible.
	Runners []Runner
	// KernelSkills are the kernel's skill documents as the execution's memory bindings
	// resolve them, for kernel skill callables.
	KernelSkills []KernelSkill
	// Providers are the workspace's active tool providers with their current announcements,
	// read when NeedsProviders says so.
	Providers []Provider
	// Pins are a pinned profile's recorded imports; nil when the work is not pinned. When set,
	// they replace tool_provider_tools' selectors.
	Pins []Pin
	// Report is how a profile write and the assembly accept: the import refusals
	// (tool_not_served, import_pattern_unmatched, reserved_tool_name, duplicate_tool_name,
	// pool_definition_conflict of tool-provider imports and bare names) are reported in
	// Frozen.Problems instead of refusing, since a provider may be restarting, and every
	// tool-provider import's definition is recorded in Frozen.Pins.
	Report bool
}

// Frozen is what acceptance stores on the accepted work (docs/agent-tools.md#declaring-tools).
type Frozen struct {
	// ToolDefinitions is the final set: rendered, sorted, alias facts and routes kept.
	ToolDefinitions *Set
	Environment     Environment
	SkillCatalog    SkillCatalog
	// Imported are the imported tools of the final set, in set order, with their source and
	// pin.
	Imported []ImportedTool
	// Problems are the import refusals a reporting acceptance reported; Pins the definitions
	// it read of each tool-provider import (Acceptance.Report).
	Problems []ImportProblem
	Pins     []Pin
}

// Accept freezes a declaration onto new work: selection, the fill of bare names, kernel imports,
// Runner imports, tool-provider imports, narrowing, route checks, render and sort, bound, then
// the environment and skill catalog, in that order; the first refusal wins. It reads only its
// input.
func (c *Compiler) Accept(in Acceptance) (*Frozen, error) {
	runners := indexRunners(in.Runners)
	var im Imports
	if in.Imports != nil {
		im = *in.Imports
	}
	requested := in.Imports != nil && im.RunnerImportRequested()

	// 1. Selection.
	var selected *Runner
	if in.Selection != "" {
		if requested && !containsRunner(im.RunnerExecutorPublicIDs, in.Selection) {
			return nil, rooted(WordRunnerNotDeclared, FieldDefaultRunner, FieldDefaultRunner, acceptanceFacts{runnerID: in.Selection},
				"the selected Runner is not one of runner_executor_public_ids")
		}
		selected = runners[lowerID(in.Selection)]
		if selected == nil || !selected.Eligible {
			return nil, rooted(WordRunnerNotEligible, FieldDefaultRunner, FieldDefaultRunner, acceptanceFacts{runnerID: in.Selection},
				"the selected Runner is unknown or not eligible")
		}
	}

	entries := append([]entry(nil), in.Explicit.entriesOrNil()...)
	taken := make(map[string]bool, len(entries))
	explicit := make(map[string]bool, len(entries))
	for _, e := range entries {
		taken[e.name] = true
		explicit[e.name] = true
	}
	ir := &importRun{c: c, in: &in, im: &im, explicit: explicit, taken: taken}
	if len(im.EagerToolNames) > 0 {
		ir.eager = make(map[string]bool, len(im.EagerToolNames))
		for _, n := range im.EagerToolNames {
			ir.eager[n] = true
		}
	}
	if in.NeedsProviders() {
		ir.pool = poolOf(in.Providers)
		// 1b. Bare names are filled from the pool.
		var r *refusal.Error
		if entries, r = ir.fill(entries); r != nil {
			return nil, r
		}
	}
	// 2. Kernel imports: an explicit entry of the same callable wins.
	for j, name := range im.KernelTools {
		t := c.byCanonical(name)
		if t == nil {
			return nil, refuse(WordInvalid, FieldKernelTools, indexPath("", j), "%s names no kernel tool", quote(name))
		}
		if taken[t.entry.Wire] {
			continue
		}
		taken[t.entry.Wire] = true
		entries = append(entries, entry{name: t.entry.Wire, tool: t})
		ir.imported = append(ir.imported, ImportedTool{Callable: t.entry.Wire, Source: SourceKernel, ToolName: t.entry.Wire})
	}
	// 3. Runner imports.
	if selected != nil && requested {
		imported, r := c.runnerImports(selected, im.RunnerToolNames, taken, ir)
		if r != nil {
			return nil, r
		}
		entries = append(entries, imported...)
	}
	// 3b. Tool-provider imports.
	if ir.pool != nil {
		imported, r := ir.providerImports()
		if r != nil {
			return nil, r
		}
		entries = append(entries, imported...)
	}
	// 4. Narrowing.
	if in.ToolNames != nil {
		var r *refusal.Error
		if entries, r = narrowEntries(entries, in.ToolNames); r != nil {
			return nil, r
		}
	}
	// 6. Render over the final set, then sort. Rendering never refuses, and the sorted set is
	// the bytewise callable order the route checks (5) walk, so it comes first.
	set, err := c.finish(entries)
	if err != nil {
		return nil, err
	}
	// 5. Route checks, on the narrowed set only.
	served := servedNames{}
	for i := range set.entries {
		if r := checkRouteTarget(&set.entries[i], runners, served); r != nil {
			return nil, r
		}
	}
	// 7. Bound.
	if n := set.EncodedSize(); n > MaxDeclarationBytes {
		return nil, assembledRefusal(WordContentTooLarge, FieldToolDefinitions, acceptanceFacts{},
			"the assembled declaration is "+itoa(n)+" bytes; the bound is "+itoa(MaxDeclarationBytes))
	}
	// 8. Freeze.
	return &Frozen{
		ToolDefinitions: set,
		Environment:     environment(in.Selection, selected, im.RunnerExecutorPublicIDs, set, runners),
		SkillCatalog:    skillCatalog(set, runners, in.KernelSkills),
		Imported:        importedIn(set, ir.imported),
		Problems:        ir.problems,
		Pins:            ir.pins,
	}, nil
}

// importedIn keeps the imported tools the final set still holds, in set order.
func importedIn(set *Set, imported []ImportedTool) []ImportedTool {
	if len(imported) == 0 {
		return nil
	}
	byName := make(map[string]ImportedTool, len(imported))
	for _, t := range imported {
		byName[t.Callable] = t
	}
	out := make([]ImportedTool, 0, len(imported))
	for i := range set.entries {
		if t, ok := byName[set.entries[i].name]; ok {
			out = append(out, t)
		}
	}
	return out
}

func (s *Set) entriesOrNil() []entry {
	if s == nil {
		return nil
	}
	return s.entries
}

func indexRunners(rs []Runner) map[string]*Runner {
	m := make(map[string]*Runner, len(rs))
	for i := range rs {
		id := lowerID(rs[i].PublicID)
		if _, dup := m[id]; !dup {
			m[id] = &rs[i]
		}
	}
	return m
}

func containsRunner(ids []string, id string) bool {
	for _, c := range ids {
		if SameRunner(c, id) {
			return true
		}
	}
	return false
}

// runnerImports turns the selected Runner's model-facing announcements into deferred, routed
// entries (docs/agent-tools.md#declaring-tools). A served name that collides with a callable
// already in the set, or with any kernel spelling, gets its qualified name; a qualified name that
// still collides is refused.
func (c *Compiler) runnerImports(r *Runner, allow []string, taken map[string]bool, ir *importRun) ([]entry, *refusal.Error) {
	var allowed map[string]bool
	var patterns []string
	if allow != nil {
		allowed = make(map[string]bool, len(allow))
		for _, n := range allow {
			if announce.IsImportPattern(n) {
				patterns = append(patterns, n)
			} else {
				allowed[n] = true
			}
		}
	}
	selected := func(name string) bool {
		if allowed == nil || allowed[name] {
			return true
		}
		for _, p := range patterns {
			if announce.MatchImport(p, name) {
				return true
			}
		}
		return false
	}
	id := lowerID(r.PublicID)
	type candidate struct {
		served, callable string
		description      string
		schema           jsonwire.Value
		qualified        bool
	}
	var cands []candidate
	for _, tool := range r.Announcement.Tools {
		if !tool.ModelFacing() || !selected(tool.Name) || !validName(tool.Name) {
			continue
		}
		if t := c.resolve(tool.Name); t != nil && !(t.entry.Canonical == CanonicalSkill && tool.Name == t.entry.Wire) {
			continue // a Runner's memory or models_list names are never made callable
		}
		schema, err := jsonwire.Decode(tool.InputSchema)
		if err != nil || !schema.IsObject() || schema.HasDuplicateKeys() {
			continue // the announcement door refuses these; nothing here can offer them
		}
		cd := candidate{served: tool.Name, callable: tool.Name, description: *tool.Description, schema: schema}
		if taken[tool.Name] || c.resolve(tool.Name) != nil {
			cd.callable, cd.qualified = QualifiedName(id, tool.Name), true
		}
		cands = append(cands, cd)
	}
	// Served names keep their callable; a qualified one may not land on anything.
	final := make(map[string]bool, len(taken)+len(cands))
	for n := range taken {
		final[n] = true
	}
	for _, cd := range cands {
		if !cd.qualified {
			if final[cd.callable] {
				return nil, collision(cd.callable)
			}
			final[cd.callable] = true
		}
	}
	out := make([]entry, 0, len(cands))
	for _, cd := range cands {
		if cd.qualified {
			if final[cd.callable] {
				return nil, collision(cd.callable)
			}
			final[cd.callable] = true
		}
		deferred := ir.deferred(cd.callable)
		out = append(out, entry{
			name:         cd.callable,
			route:        &Route{RunnerID: id, ToolName: cd.served},
			deferLoading: deferred,
			value: jsonwire.Object(
				jsonwire.M("type", jsonwire.String("function")),
				jsonwire.M("function", jsonwire.Object(
					jsonwire.M("name", jsonwire.String(cd.callable)),
					jsonwire.M("description", jsonwire.String(cd.description)),
					jsonwire.M("parameters", cd.schema),
				)),
				jsonwire.M("route", jsonwire.Object(
					jsonwire.M("kind", jsonwire.String("runner")),
					jsonwire.M("runner_executor_public_id", jsonwire.String(id)),
					jsonwire.M("tool_name", jsonwire.String(cd.served)),
				)),
				jsonwire.M("defer_loading", jsonwire.Bool(*deferred)),
			),
		})
		ir.imported = append(ir.imported, ImportedTool{Callable: cd.callable, Source: SourceRunnerImport, ToolName: cd.served,
			RunnerExecutorPublicID: id, Deferred: *deferred})
	}
	for n := range final {
		taken[n] = true
	}
	return out, nil
}

func collision(callable string) *refusal.Error {
	return assembledRefusal(WordDuplicateToolName, FieldToolDefinitions, acceptanceFacts{callable: callable},
		quote(callable)+" is already a callable of the assembled set")
}

// narrowEntries keeps the entries wanted names, refusing the first name that is none of them.
func narrowEntries(entries []entry, wanted []string) ([]entry, *refusal.Error) {
	have := make(map[string]bool, len(entries))
	for _, e := range entries {
		have[e.name] = true
	}
	keep := make(map[string]bool, len(wanted))
	for j, name := range wanted {
		if !have[name] {
			return nil, rooted(WordToolNotDeclared, FieldToolNames, FieldToolNames+indexPath("", j), acceptanceFacts{toolName: name},
				quote(name)+" is not one of the declared tools")
		}
		keep[name] = true
	}
	out := entries[:0:0]
	for _, e := range entries {
		if keep[e.name] {
			out = append(out, e)
		}
	}
	return out, nil
}

// servedNames indexes, per Runner, the names its current announcement serves, built on first
// use so that checking many routes to one Runner stays linear.
type servedNames map[*Runner]map[string]bool

func (s servedNames) serves(r *Runner, name string) bool {
	names, ok := s[r]
	if !ok {
		names = make(map[string]bool, len(r.Announcement.Tools))
		for _, t := range r.Announcement.Tools {
			names[t.Name] = true
		}
		s[r] = names
	}
	return names[name]
}

// checkRouteTarget is step 5 for one entry: its Runner is eligible and announces the tool.
func checkRouteTarget(e *entry, runners map[string]*Runner, served servedNames) *refusal.Error {
	if e.route == nil {
		return nil
	}
	r := runners[lowerID(e.route.RunnerID)]
	if r == nil || !r.Eligible {
		return assembledRefusal(WordRunnerNotEligible, "", acceptanceFacts{callable: e.name, runnerID: e.route.RunnerID},
			quote(e.name)+": its Runner is unknown or not eligible")
	}
	if served.serves(r, e.route.ToolName) {
		return nil
	}
	return assembledRefusal(WordToolNotServed, "", acceptanceFacts{callable: e.name, runnerID: e.route.RunnerID, toolName: e.route.ToolName},
		quote(e.name)+": Runner "+e.route.RunnerID+" does not serve "+quote(e.route.ToolName))
}
