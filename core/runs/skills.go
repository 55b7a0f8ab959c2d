package runs

import (
	"context"

	"github.com/nexuskernel/nexus/core/declare"
	"github.com/nexuskernel/nexus/core/store"
)

// SkillFacts are what the kernel entries of a skill catalog are read against at acceptance
// (docs/agent-tools.md#memory-and-skills, docs/development.md#the-declaration-compiler): the
// accepted work's frozen memory configuration and the run facts its bindings resolve with.
type SkillFacts struct {
	// MemoryContext is the frozen memory configuration, as stored.
	MemoryContext        string
	WorkspacePublicID    string
	ConversationPublicID string
	// Principal is the run's memory principal.
	Principal Member
}

// KernelSkills reads the kernel skill documents that acceptance freezes for a kernel skill
// callable: workspace/skills/* and user/skills/* as the work's bindings resolve those roots,
// through q (the accepting transaction).
type KernelSkills func(ctx context.Context, q store.Querier, f SkillFacts) ([]declare.KernelSkill, error)

// runSkillFacts are a run's skill facts after acceptance: its frozen memory configuration.
func runSkillFacts(run *store.Run) *SkillFacts {
	return &SkillFacts{MemoryContext: run.MemoryContext, WorkspacePublicID: run.WorkspacePublicID,
		ConversationPublicID: deref(run.ConversationPublicID), Principal: memoryPrincipal(run)}
}
