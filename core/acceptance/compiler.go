package acceptance

import (
	"context"
	"encoding/json"
	"strings"
	"sync"

	"github.com/nexuskernel/nexus/core/declare"
	"github.com/nexuskernel/nexus/core/profiles"
	"github.com/nexuskernel/nexus/core/projection"
	"github.com/nexuskernel/nexus/core/runs"
	"github.com/nexuskernel/nexus/core/store"
	"github.com/nexuskernel/nexus/sdk/announce"
)

// Compiler is the Declarations seam filled by core/declare and core/projection: the engine
// asks, they decide. Runner facts and their current announcements are read as agent profiles
// read them (profiles.Runners); kernel skill documents through the optional reader.
type Compiler struct {
	C *declare.Compiler
	// KernelSkills reads the kernel skill documents the work's memory bindings resolve, for a
	// kernel skill callable; nil means none.
	KernelSkills runs.KernelSkills
}

var _ runs.Declarations = (*Compiler)(nil)

// AcceptStep freezes a model step's declaration (docs/agent-tools.md#declaring-tools).
func (c *Compiler) AcceptStep(ctx context.Context, q store.Querier, in *runs.StepDeclaration) (*runs.FrozenDeclaration, error) {
	door := declare.RunDoor(in.Path + ".")
	if in.NarrowPath != "" {
		door = declare.NarrowingDoor(in.NarrowPath)
	}
	set, err := c.C.Compile(in.Tools)
	if err != nil {
		return nil, door.Refuse(err)
	}
	var imports *declare.Imports
	if in.KernelTools != nil || in.RunnerExecutorPublicIDs != nil || in.RunnerToolNames != nil {
		im, err := c.C.ParseImports(in.KernelTools, in.RunnerExecutorPublicIDs, in.RunnerToolNames)
		if err != nil {
			return nil, door.Refuse(err)
		}
		imports = &im
	}
	ids := map[string]bool{}
	if in.Selection != "" {
		ids[strings.ToLower(in.Selection)] = true
	}
	if imports != nil {
		for _, id := range imports.RunnerExecutorPublicIDs {
			ids[strings.ToLower(id)] = true
		}
	}
	for _, e := range set.Entries() {
		if e.Route != nil {
			ids[strings.ToLower(e.Route.RunnerID)] = true
		}
	}
	runners, err := profiles.Runners(ctx, q, in.WorkspaceID, sortedStrings(ids))
	if err != nil {
		return nil, err
	}
	var skills []declare.KernelSkill
	var kernelTools []string
	if imports != nil {
		kernelTools = imports.KernelTools
	}
	if c.KernelSkills != nil && in.Skills != nil && declaresKernelSkill(set.Entries(), kernelTools) {
		if skills, err = c.KernelSkills(ctx, q, *in.Skills); err != nil {
			return nil, err
		}
	}
	f, err := c.C.Accept(declare.Acceptance{Explicit: set, Imports: imports, Selection: in.Selection, ToolNames: in.ToolNames,
		Runners: runners, KernelSkills: skills})
	if err != nil {
		return nil, door.Refuse(err)
	}
	env, err := f.Environment.MarshalJSON()
	if err != nil {
		return nil, err
	}
	cat, err := f.SkillCatalog.MarshalJSON()
	if err != nil {
		return nil, err
	}
	return &runs.FrozenDeclaration{ToolDefinitions: f.ToolDefinitions.Bytes(), Environment: env, SkillCatalog: cat,
		HasTools: f.ToolDefinitions.Len() > 0}, nil
}

// Open reads a round's frozen set (its stored render compiles to itself) and skill catalog.
func (c *Compiler) Open(toolDefinitions, skillCatalog []byte) (runs.Toolset, error) {
	set, err := c.C.Compile(toolDefinitions)
	if err != nil {
		return nil, declare.Fault(err)
	}
	var cat declare.SkillCatalog
	if s := strings.TrimSpace(string(skillCatalog)); s != "" && s != "null" {
		if err := json.Unmarshal(skillCatalog, &cat); err != nil {
			return nil, err
		}
	}
	p := projection.Project(set, cat)
	ts := &frozenSet{set: set, catalog: cat, offers: map[projection.Target]runs.Offer{}}
	ts.offers[projection.Target{}] = offerOf(p)
	if block, ok := projection.SkillsBlock(set, p, cat); ok {
		ts.skills = block
	}
	return ts, nil
}

func offerOf(p projection.Projection) runs.Offer {
	o := runs.Offer{ToolSearch: p.ToolSearch}
	for _, v := range p.Tools {
		o.Tools = append(o.Tools, json.RawMessage(v.Encode()))
	}
	return o
}

// KernelName reports a registered kernel name in either spelling, and its wire name.
func (c *Compiler) KernelName(name string) (string, bool) {
	if !c.C.IsKernelSpelling(name) {
		return "", false
	}
	k, _ := announce.LookupKernelName(name)
	return k.Wire, true
}

type frozenSet struct {
	set     *declare.Set
	catalog declare.SkillCatalog
	mu      sync.Mutex
	offers  map[projection.Target]runs.Offer // by target; kernel deferral is the zero target
	skills  string
}

func (f *frozenSet) FrozenSkill(callable, name string) (declare.SkillEntry, bool) {
	for _, e := range f.catalog {
		if e.Callable == callable && e.Name == name {
			return e, true
		}
	}
	return declare.SkillEntry{}, false
}

func (f *frozenSet) ResolveCall(name string, input json.RawMessage) (runs.CallResolution, error) {
	r, err := f.set.ResolveCall(name, input)
	if err != nil {
		return runs.CallResolution{}, err
	}
	out := runs.CallResolution{Declared: r.Declared, ToolName: r.ToolName, Canonical: r.Canonical, Input: r.Input, Alias: r.Alias}
	if r.Route != nil {
		out.Route = &runs.Route{Kind: "runner", RunnerExecutorPublicID: strings.ToLower(r.Route.RunnerID), ToolName: r.Route.ToolName}
	}
	return out, nil
}

// Offered projects the set for a provider; only native deferral changes what is offered, so
// every kernel-mode target shares the zero target's projection.
func (f *frozenSet) Offered(t projection.Target) runs.Offer {
	if t.NativeSearch == "" {
		t = projection.Target{}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if o, ok := f.offers[t]; ok {
		return o
	}
	o := offerOf(projection.ProjectFor(f.set, f.catalog, t))
	f.offers[t] = o
	return o
}
func (f *frozenSet) SkillsBlock() string { return f.skills }
