package kernel

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/nexuskernel/nexus/core/declare"
	kmemory "github.com/nexuskernel/nexus/core/memory"
	"github.com/nexuskernel/nexus/core/runs"
	memsdk "github.com/nexuskernel/nexus/sdk/memory"
)

// CanonicalSkill is the skill tool's canonical name.
const CanonicalSkill = declare.CanonicalSkill

// Skill runs the skill tool in-process for its kernel sources
// (docs/agent-tools.md#memory-and-skills, docs/agent-tools.md#delegation-and-conversations
// docs/agent-tools.md#the-twenty-kernel-tools): the callable the model used and the skill catalog
// frozen on the calling round decide the source; the document is read from kernel memory's store
// under the binding that serves the frozen root, never the other root, a later catalog or the
// override provider. A Runner-routed skill is addressed to its Runner at birth and never reaches
// here, except for a name outside its frozen catalog, which answers skill_unknown here.
type Skill struct {
	// Store is kernel memory's store: skills are always read there.
	Store *kmemory.Store
	// Scopes resolves the run's frozen memory bindings.
	Scopes ScopeResolver
}

// Run loads one skill.
func (s *Skill) Run(ctx context.Context, call *runs.KernelCall) (*runs.KernelOutcome, error) {
	var in map[string]json.RawMessage
	if err := json.Unmarshal(call.Input, &in); err != nil && len(strings.TrimSpace(string(call.Input))) > 0 {
		return nil, fmt.Errorf("kernel: skill input is not a JSON object: %w", err)
	}
	var name string
	if raw, ok := in["name"]; !ok || json.Unmarshal(raw, &name) != nil {
		return skillResult(kmemory.SkillUnknownResult("")), nil
	}
	if call.Round == nil {
		return nil, errors.New("kernel: skill without a calling round")
	}
	round, err := call.Round(ctx)
	if err != nil {
		return nil, err
	}
	callable := call.ToolAlias
	if callable == "" {
		callable = call.ToolName
	}
	entry, ok, err := FrozenSkill(round.SkillCatalog, callable, name)
	if err != nil {
		return nil, err
	}
	if !ok {
		return skillResult(kmemory.SkillUnknownResult(name)), nil
	}
	if entry.Source == declare.SourceRunner {
		// Addressing sends a cataloged Runner skill to its Runner; one here was not served.
		return &runs.KernelOutcome{Failure: &runs.TaskError{Key: runs.KeyToolNotServed,
			Detail: fmt.Sprintf("runner %s does not serve skill %s here", entry.RunnerExecutorPublicID, name)}}, nil
	}
	scopes, err := s.Scopes.Scopes(ctx, call)
	if err != nil {
		return nil, fmt.Errorf("kernel: skill scopes: %w", err)
	}
	source := kmemory.SkillSource(entry.Source)
	scope, ok := kmemory.SkillSourceScope(scopes, source)
	if !ok {
		return &runs.KernelOutcome{Failure: &runs.TaskError{Key: runs.KeyToolNotServed, Detail: kmemory.SkillNotServedDetail(source, name)}}, nil
	}
	if call.Tx != nil {
		ctx = kmemory.WithTx(ctx, call.Tx)
	}
	res, err := s.Store.LoadSkill(ctx, scope, name)
	if err != nil {
		return nil, err
	}
	return skillResult(res), nil
}

func skillResult(r memsdk.Result) *runs.KernelOutcome {
	return &runs.KernelOutcome{Result: &runs.KernelResult{Content: r.Text, IsError: r.IsError, Title: r.Title}}
}

// FrozenSkill finds the frozen catalog entry of a skill under a callable.
func FrozenSkill(catalog []byte, callable, name string) (declare.SkillEntry, bool, error) {
	if s := strings.TrimSpace(string(catalog)); s == "" || s == "null" {
		return declare.SkillEntry{}, false, nil
	}
	var cat declare.SkillCatalog
	if err := json.Unmarshal(catalog, &cat); err != nil {
		return declare.SkillEntry{}, false, fmt.Errorf("kernel: the frozen skill catalog: %w", err)
	}
	for _, e := range cat {
		if e.Callable == callable && e.Name == name {
			return e, true, nil
		}
	}
	return declare.SkillEntry{}, false, nil
}
