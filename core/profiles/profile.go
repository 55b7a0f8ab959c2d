package profiles

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/nexuskernel/nexus/core/declare"
	"github.com/nexuskernel/nexus/core/store"
	"github.com/nexuskernel/nexus/sdk/jsonwire"
)

// Profile is an agent's profile as acceptance reads it: everything a conversation turn freezes from
// its answering agent (docs/development.md#how-the-kernel-runs-work, acceptance step 1). It is a
// snapshot: nothing in it changes when the profile is replaced later.
type Profile struct {
	AgentID     int64
	WorkspaceID int64
	// Revision is the replacement this snapshot was read at; 0 for a profile never written.
	Revision int64
	// Tools is the explicit declaration in its stored form (rendered, sorted); empty when none.
	Tools *declare.Set
	// Imports is the import intent (kernel_tools, Runner candidates, runner_tool_names). It is
	// consumed by Accept and is never a source later rounds resolve again.
	Imports declare.Imports
	// ApprovalMode is bypass, ask or rules; nil when unset (see FrozenApprovalMode).
	ApprovalMode *string
	// ApprovalRules is the approval rule list as compact JSON (the grammar
	// (docs/agent-tools.md#the-approval-gate), already checked); nil when unset.
	ApprovalRules json.RawMessage
	// DefaultModel is a provider/model ref that was in the catalog when the profile was
	// stored; nil when unset. The catalog may have changed since: the caller checks it again.
	DefaultModel *string
	// Instructions are the standing system instructions; nil when unset.
	Instructions *string
	// Pins are the pinned definitions new work freezes instead of what tool_provider_tools
	// matches now; nil when the profile does not pin (docs/agent-tools.md#pinned-imports).
	Pins []declare.Pin
}

// FrozenApprovalMode is the approval mode accepted work freezes: the profile's own, or bypass
// for a profile that set none (which the profile door allows only when it declares no tools).
func (p *Profile) FrozenApprovalMode() string {
	if p.ApprovalMode == nil {
		return ModeBypass
	}
	return *p.ApprovalMode
}

// Current reads the agent's profile as it stands now, through q: the caller's acceptance
// transaction, so that the snapshot and the work it creates are one, or the store's reader.
// An agent that never replaced its profile has the empty one. An unknown agent is
// store.ErrNotFound. A stored declaration that no longer compiles against this build's kernel
// registry (a kernel text changed since it was stored) is returned as its refusal, so
// acceptance refuses with the declaration word, as it does for any grammar refusal it finds.
func (s *Service) Current(ctx context.Context, q store.Querier, agentID int64) (*Profile, error) {
	agent, err := store.AgentOf(ctx, q, agentID)
	if err != nil {
		return nil, err
	}
	p := &Profile{AgentID: agent.ID, WorkspaceID: agent.WorkspaceID, Tools: &declare.Set{}, Imports: declare.Imports{}.ReadBack()}
	row, err := store.AgentProfileOf(ctx, q, agentID)
	if errors.Is(err, store.ErrNotFound) {
		return p, nil
	}
	if err != nil {
		return nil, err
	}
	c, err := configurationOf(row)
	if err != nil {
		return nil, err
	}
	if p.Tools, err = s.compiler.Compile(c.ToolDefinitions); err != nil {
		return nil, err
	}
	p.Revision, p.Imports, p.Pins = c.Revision, c.Imports, c.Pins
	p.ApprovalMode, p.ApprovalRules, p.DefaultModel, p.Instructions = c.ApprovalMode, c.ApprovalRules, c.DefaultModel, c.Instructions
	return p, nil
}

// Acceptance is what one acceptance adds to a profile.
type Acceptance struct {
	// Selection is the selected Runner's public id (the conversation's or run's default
	// Runner, or spawn's argument); "" for none.
	Selection string
	// ToolNames narrows the final set by callable name; nil keeps everything, an empty
	// non-nil list keeps nothing.
	ToolNames []string
	// KernelSkills are the kernel skill documents the execution's memory bindings resolve,
	// for kernel skill callables; nil when there are none.
	KernelSkills []declare.KernelSkill
	// Report reports the import refusals instead of refusing (declare.Acceptance.Report): the
	// assembly and a profile write do, since a provider may be restarting.
	Report bool
}

// Accept freezes the profile onto new work (docs/agent-tools.md#declaring-tools): kernel imports,
// the selected Runner's announcements, narrowing, route checks, render and sort, bound, then the
// environment and the skill catalog. It reads the workspace's Runners and their current
// announcements through q, and nothing later reads them again. A refusal is rooted at the
// declaration; the caller's door re-roots it into its envelope (declare.RunDoor for a run,
// declare.AssemblyDoor for the assembly); anything else is a store fault.
func (s *Service) Accept(ctx context.Context, q store.Querier, p *Profile, in Acceptance) (*declare.Frozen, error) {
	ids := make([]string, 0, 1+len(p.Imports.RunnerExecutorPublicIDs))
	if in.Selection != "" {
		ids = append(ids, in.Selection)
	}
	ids = append(ids, p.Imports.RunnerExecutorPublicIDs...)
	for _, e := range p.Tools.Entries() {
		if e.Route != nil {
			ids = append(ids, e.Route.RunnerID)
		}
	}
	runners, err := Runners(ctx, q, p.WorkspaceID, ids)
	if err != nil {
		return nil, err
	}
	im := p.Imports
	a := declare.Acceptance{
		Explicit:     p.Tools,
		Imports:      &im,
		Selection:    in.Selection,
		ToolNames:    in.ToolNames,
		Runners:      runners,
		KernelSkills: in.KernelSkills,
		Pins:         p.Pins,
		Report:       in.Report,
	}
	if a.NeedsProviders() {
		if a.Providers, err = Providers(ctx, q, p.WorkspaceID); err != nil {
			return nil, err
		}
	}
	return s.compiler.Accept(a)
}

// AssemblyRequest is a tool assembly (docs/api.md#agent-profiles).
type AssemblyRequest struct {
	// Selection is the selected Runner's public id, "" for null.
	Selection string
	// Configuration replaces the profile's declaration sources for this request (not a
	// patch); nil assembles the stored profile. Only tool_definitions, kernel_tools,
	// runner_executor_public_ids, runner_tool_names, tool_provider_tools and eager_tool_names
	// are read; it must be an object.
	Configuration *jsonwire.Value
}

// Assemble answers what new work would freeze for the agent: the proposed sources (validated as
// on the profile door) or the stored profile (its pins included), accepted with the selection and
// no narrowing, from current announcements. The import refusals are reported in the answer's
// Problems rather than refused, since a provider may be restarting. It creates and changes
// nothing. Refusals are rooted at the declaration, for declare.AssemblyDoor.
func (s *Service) Assemble(ctx context.Context, agent Agent, req AssemblyRequest) (*declare.Frozen, error) {
	q := s.store.Reader()
	var p *Profile
	if req.Configuration != nil {
		if !req.Configuration.IsObject() {
			return nil, errors.New("profiles: the assembly configuration is not a JSON object")
		}
		tools, im, err := s.sources(*req.Configuration)
		if err != nil {
			return nil, err
		}
		p = &Profile{AgentID: agent.ID, WorkspaceID: agent.WorkspaceID, Tools: tools, Imports: im}
	} else {
		var err error
		if p, err = s.Current(ctx, q, agent.ID); err != nil {
			return nil, err
		}
	}
	return s.Accept(ctx, q, p, Acceptance{Selection: req.Selection, Report: true})
}
