package declare

import "sort"

// StepSources are a model step's declaration fields as authored (docs/api.md#runs): its tools
// list and the import fields, each its raw JSON, nil when the field is absent.
type StepSources struct {
	Tools                   []byte
	KernelTools             []byte
	RunnerExecutorPublicIDs []byte
	RunnerToolNames         []byte
	ToolProviderTools       []byte
	EagerToolNames          []byte
}

func (s StepSources) imports() ImportSources {
	return ImportSources{KernelTools: s.KernelTools, RunnerExecutorPublicIDs: s.RunnerExecutorPublicIDs,
		RunnerToolNames: s.RunnerToolNames, ToolProviderTools: s.ToolProviderTools, EagerToolNames: s.EagerToolNames}
}

// Step reads a model step's declaration into the acceptance that freezes it: the explicit set
// compiled, then the import fields parsed. Imports stays nil when the step carries none of the
// import fields, which keeps the plain explicit-tools meaning. The caller adds what the step's
// work selects and narrows, reads the Runners RunnerIDs names (and the kernel skill documents
// when DeclaresKernelSkill), and hands the acceptance to Accept. A refusal is rooted at the
// declaration, for the caller's Door.
func (c *Compiler) Step(s StepSources) (Acceptance, error) {
	set, err := c.Compile(s.Tools)
	if err != nil {
		return Acceptance{}, err
	}
	a := Acceptance{Explicit: set}
	if src := s.imports(); src.Given() {
		im, err := c.ParseImports(src)
		if err != nil {
			return Acceptance{}, err
		}
		a.Imports = &im
	}
	return a, nil
}

// RunnerIDs are the Runners an acceptance may read (docs/agent-tools.md#declaring-tools): the
// selection, the declared candidates and every Runner a route of the explicit set names, each
// once, lowercase, in byte order. The caller loads them into Runners before Accept.
func (a *Acceptance) RunnerIDs() []string {
	ids := map[string]bool{}
	if a.Selection != "" {
		ids[lowerID(a.Selection)] = true
	}
	if a.Imports != nil {
		for _, id := range a.Imports.RunnerExecutorPublicIDs {
			ids[lowerID(id)] = true
		}
	}
	for _, e := range a.Explicit.entriesOrNil() {
		if e.route != nil {
			ids[lowerID(e.route.RunnerID)] = true
		}
	}
	out := make([]string, 0, len(ids))
	for id := range ids {
		out = append(out, id)
	}
	sort.Strings(out)
	return out
}

// DeclaresKernelSkill reports whether a declaration about to be accepted holds a kernel skill
// callable, explicitly or through kernel_tools: only then does the caller read the kernel's
// skill documents into Acceptance.KernelSkills. A Runner import never makes one: a Runner's
// skill tool is routed.
func DeclaresKernelSkill(explicit *Set, im *Imports) bool {
	for _, e := range explicit.entriesOrNil() {
		if e.tool != nil && e.tool.entry.Canonical == CanonicalSkill && e.route == nil {
			return true
		}
	}
	if im != nil {
		for _, k := range im.KernelTools {
			if k == CanonicalSkill {
				return true
			}
		}
	}
	return false
}
