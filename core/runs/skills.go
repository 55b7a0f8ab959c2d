package runs

import (
	"context"

	"github.com/nexuskernel/nexus/core/declare"
	"github.com/nexuskernel/nexus/core/memory"
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

// KernelSkillReader is KernelSkills over kernel memory: the frozen bindings resolved against
// live rows, then the store's skill documents of the workspace and user roots (the workspace's
// winning a name in both), read in the accepting transaction.
func KernelSkillReader(st *memory.Store, r *memory.Resolver) KernelSkills {
	return func(ctx context.Context, q store.Querier, f SkillFacts) ([]declare.KernelSkill, error) {
		frozen, err := memory.ParseContext([]byte(f.MemoryContext))
		if err != nil {
			return nil, err
		}
		scopes, err := r.Resolve(ctx, q, frozen, memory.RunFacts{WorkspacePublicID: f.WorkspacePublicID,
			ConversationPublicID: f.ConversationPublicID, Principal: memory.Principal{Kind: f.Principal.Kind, PublicID: f.Principal.PublicID}})
		if err != nil {
			return nil, err
		}
		if tx, ok := q.(*store.Tx); ok {
			ctx = memory.WithTx(ctx, tx)
		}
		entries, err := st.KernelSkillCatalog(ctx, scopes)
		if err != nil {
			return nil, err
		}
		out := make([]declare.KernelSkill, len(entries))
		for i, e := range entries {
			out[i] = declare.KernelSkill{Source: declare.SkillSource(e.Source), Name: e.Name, Description: e.Description}
		}
		return out, nil
	}
}

// declaresKernelSkill reports whether a declaration about to be accepted holds a kernel skill
// callable, explicitly or through kernel_tools; only then are skill documents read. A Runner
// import never makes one: a Runner's skill tool is routed.
func declaresKernelSkill(entries []declare.Entry, kernelTools []string) bool {
	for _, e := range entries {
		if e.Canonical == declare.CanonicalSkill && e.Route == nil {
			return true
		}
	}
	for _, k := range kernelTools {
		if k == declare.CanonicalSkill {
			return true
		}
	}
	return false
}

// runSkillFacts are a run's skill facts after acceptance: its frozen memory configuration.
func runSkillFacts(run *store.Run) *SkillFacts {
	return &SkillFacts{MemoryContext: run.MemoryContext, WorkspacePublicID: run.WorkspacePublicID,
		ConversationPublicID: deref(run.ConversationPublicID), Principal: memoryPrincipal(run)}
}
