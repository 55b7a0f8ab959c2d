package projection

import (
	"github.com/nexuskernel/nexus/core/declare"
	"github.com/nexuskernel/nexus/sdk/jsonwire"
)

// Projection is what one request offers, in the frozen set's order.
type Projection struct {
	// Tools are the projected schemas (docs/development.md#the-declaration-compiler), what
	// request_options.tools records.
	Tools []jsonwire.Value
	// Callables are the offered entries' callables, in the same order.
	Callables []string
	// Entries are the offered entries as stored.
	Entries []declare.Entry
	// ToolSearch is the variant of the provider's own tool search when native deferral applies
	// to this projection ("bm25", "regex"), else "".
	ToolSearch string
}

// Target is what projection needs to know of the provider a request goes to: for a provider
// with native deferral, the variant of its tool search ("" in kernel mode). The round driver
// supplies it from the model's catalog entry; projection knows no provider package.
type Target struct {
	NativeSearch string
}

// Project computes the projection of a frozen set (after narrowing) with its frozen skill catalog
// (docs/development.md#the-declaration-compiler): deferred entries are hidden only when both
// tool_search and tool_call are declared eagerly; a skill callable whose catalog has no entry for
// it is left out; everything else is offered in the set's order. The set is not changed.
func Project(set *declare.Set, catalog declare.SkillCatalog) Projection {
	return ProjectFor(set, catalog, Target{})
}

// ProjectFor is Project for a provider. The declared pair always wins; without it, a provider
// with native deferral is sent every entry, the deferred ones flagged "defer_loading": true as
// their last top-level key, and ToolSearch names its search tool, when at least one offered
// entry is deferred. Otherwise it is Project.
func ProjectFor(set *declare.Set, catalog declare.SkillCatalog, target Target) Projection {
	entries := set.Entries()
	hideDeferred := eager(entries, declare.CanonicalToolSearch) && eager(entries, declare.CanonicalToolCall)
	cataloged := make(map[string]bool, len(catalog))
	for _, c := range catalog {
		cataloged[c.Callable] = true
	}
	p := Projection{Tools: []jsonwire.Value{}, Callables: []string{}, Entries: []declare.Entry{}}
	for _, e := range entries {
		if hideDeferred && e.DeferLoading {
			continue
		}
		if declare.IsSkillCallable(e) && !cataloged[e.Callable] {
			continue
		}
		p.Tools = append(p.Tools, ProjectEntry(e))
		p.Callables = append(p.Callables, e.Callable)
		p.Entries = append(p.Entries, e)
	}
	if !hideDeferred && target.NativeSearch != "" {
		for i, e := range p.Entries {
			if e.DeferLoading {
				p.Tools[i] = p.Tools[i].Set("defer_loading", jsonwire.Bool(true))
				p.ToolSearch = target.NativeSearch
			}
		}
	}
	return p
}

// eager reports whether an entry denoting canonical is declared without defer_loading: true.
func eager(entries []declare.Entry, canonical string) bool {
	for _, e := range entries {
		if e.Canonical == canonical && !e.DeferLoading {
			return true
		}
	}
	return false
}

// ProjectEntry is the one-entry projection (docs/development.md#the-declaration-compiler), also
// used for a tool_search result's definition: a nested entry keeps type and function (and a
// top-level strict its author wrote; an alias has none), a flat entry drops route and
// defer_loading, and when neither level has strict, "strict": false is added inside function for a
// nested entry or last for a flat one.
func ProjectEntry(e declare.Entry) jsonwire.Value {
	v := e.Value
	fn, nested := v.Get("function")
	if !nested {
		out := v.Without("route", "defer_loading")
		if !out.Has("strict") {
			out = out.Set("strict", jsonwire.Bool(false))
		}
		return out
	}
	keep := []string{"type", "function"}
	if !e.Alias {
		keep = append(keep, "strict")
	}
	members := make([]jsonwire.Field, 0, 3)
	for _, m := range v.Members() {
		for _, k := range keep {
			if m.Key == k {
				members = append(members, m)
			}
		}
	}
	out := jsonwire.Object(members...)
	if !out.Has("strict") && !fn.Has("strict") {
		out = out.Set("function", fn.Set("strict", jsonwire.Bool(false)))
	}
	return out
}
