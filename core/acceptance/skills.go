package acceptance

import (
	"context"
	"sort"

	"github.com/nexuskernel/nexus/core/declare"
	"github.com/nexuskernel/nexus/core/memory"
	"github.com/nexuskernel/nexus/core/runs"
	"github.com/nexuskernel/nexus/core/store"
)

// KernelSkillReader is KernelSkills over kernel memory: the frozen bindings resolved against
// live rows, then the store's skill documents of the workspace and user roots (the workspace's
// winning a name in both), read in the accepting transaction.
func KernelSkillReader(st *memory.Store, r *memory.Resolver) runs.KernelSkills {
	return func(ctx context.Context, q store.Querier, f runs.SkillFacts) ([]declare.KernelSkill, error) {
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

func sortedStrings(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func deref[T any](p *T) T {
	var z T
	if p == nil {
		return z
	}
	return *p
}
