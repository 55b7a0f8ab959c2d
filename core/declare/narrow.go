package declare

import (
	"strings"

	"github.com/nexuskernel/nexus/core/refusal"
)

// Narrow keeps the entries of a frozen set whose callables wanted names
// (docs/agent-tools.md#declaring-tools). A nil wanted keeps everything and returns s itself; an
// empty one keeps nothing; repeats are harmless. The first wanted name that is no callable of s is
// refused tool_not_declared, with the path of that name and the name as tool_name. The kept entries are rendered
// again over the subset, so a plain kernel entry whose text named a narrowed-away alias says the
// kernel's name again.
func (c *Compiler) Narrow(s *Set, wanted []string) (*Set, error) {
	return c.narrow(s, wanted, false)
}

// NarrowForDelegation is Narrow for a branch that delegate_task places: after narrowing, every
// entry denoting nexus.graph.delegate_task (the plain name and every alias) is removed, named
// or not, because delegation from a model has one level. A nil wanted keeps everything else.
func (c *Compiler) NarrowForDelegation(s *Set, wanted []string) (*Set, error) {
	return c.narrow(s, wanted, true)
}

func (c *Compiler) narrow(s *Set, wanted []string, delegation bool) (*Set, error) {
	if wanted == nil && !delegation {
		return s, nil
	}
	kept := s.entriesOrNil()
	if wanted != nil {
		var r *refusal.Error
		if kept, r = narrowEntries(kept, wanted); r != nil {
			return nil, r
		}
	}
	if delegation {
		out := kept[:0:0]
		for _, e := range kept {
			if e.tool == nil || e.tool.entry.Canonical != CanonicalDelegateTask {
				out = append(out, e)
			}
		}
		kept = out
	}
	return c.finish(kept)
}

// ToolNotDeclaredText is the error result delegate_task gives for a tools name the caller did not
// declare: the caller's callables in declaration order
// (docs/agent-tools.md#delegation-and-conversations).
func ToolNotDeclaredText(name string, s *Set) string {
	return `tool_not_declared: "` + name + `" is not one of your tools; yours are: ` + strings.Join(s.Callables(), ", ") + "."
}
