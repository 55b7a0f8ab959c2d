package declare

import (
	"github.com/nexuskernel/nexus/core/registry"
	"github.com/nexuskernel/nexus/sdk/jsonwire"
)

// spellings is a set's spelling of every kernel tool
// (docs/development.md#the-declaration-compiler): the wire name when the set declares the tool
// under it (plain, or an identity alias), else the bytewise-smallest alias name, else the wire
// name.
type spellings struct {
	c     *Compiler
	plain map[*kernelTool]bool
	alias map[*kernelTool]string
	// plainRenders caches the set's render of each plain kernel tool.
	plainRenders map[*kernelTool]jsonwire.Value
}

func (c *Compiler) newSpellings() *spellings {
	return &spellings{c: c, plain: map[*kernelTool]bool{}, alias: map[*kernelTool]string{}}
}

// add counts one entry named name that denotes t, as an alias or not.
func (sp *spellings) add(t *kernelTool, name string, isAlias bool) {
	switch {
	case name == t.entry.Wire:
		sp.plain[t] = true
	case isAlias:
		if cur, ok := sp.alias[t]; !ok || name < cur {
			sp.alias[t] = name
		}
	}
}

// authoredSpellings counts the entries of an authored list as validation sees them: an alias
// when its canonical resolves and its name is a string, a non-alias entry when its name
// resolves.
func (c *Compiler) authoredSpellings(values []jsonwire.Value) *spellings {
	sp := c.newSpellings()
	for _, v := range values {
		name, ok := callableName(v)
		if !ok {
			continue
		}
		if canon, has := v.Get("canonical"); has {
			if s, isStr := canon.AsString(); isStr {
				if t := c.resolve(s); t != nil {
					sp.add(t, name, true)
				}
			}
			continue
		}
		if t := c.resolve(name); t != nil {
			sp.add(t, name, false)
		}
	}
	return sp
}

// entrySpellings counts the entries of a lawful set.
func (c *Compiler) entrySpellings(entries []entry) *spellings {
	sp := c.newSpellings()
	for i := range entries {
		if e := &entries[i]; e.tool != nil {
			sp.add(e.tool, e.name, e.alias != nil)
		}
	}
	return sp
}

func (sp *spellings) of(t *kernelTool) string {
	if sp.plain[t] {
		return t.entry.Wire
	}
	if a, ok := sp.alias[t]; ok {
		return a
	}
	return t.entry.Wire
}

// hasAliases reports whether any spelling differs from the wire name.
func (sp *spellings) hasAliases() bool {
	for t := range sp.alias {
		if !sp.plain[t] {
			return true
		}
	}
	return false
}

// spell returns the spelling function registry.Render calls. Inside an alias's own texts, self is
// the alias's tool and selfName its name (the self macro,
// docs/development.md#the-declaration-compiler). A word that names no tool of this registry is not
// a macro here, so it is written back as it stood.
func (sp *spellings) spell(self *kernelTool, selfName string) func(string) string {
	return func(wire string) string {
		t := sp.c.byName[wire]
		if t == nil || t.entry.Wire != wire {
			return "{{" + wire + "}}"
		}
		if t == self {
			return selfName
		}
		return sp.of(t)
	}
}

// plainRender is the set's render of t as a plain kernel entry, without defer_loading
// (docs/development.md#the-declaration-compiler).
func (sp *spellings) plainRender(t *kernelTool) (jsonwire.Value, error) {
	if !sp.hasAliases() {
		return t.catalog, nil
	}
	if v, ok := sp.plainRenders[t]; ok {
		return v, nil
	}
	def, err := registry.Definition(t.entry, sp.spell(nil, ""))
	if err != nil {
		return jsonwire.Value{}, err
	}
	v, err := jsonwire.Decode(def)
	if err != nil {
		return jsonwire.Value{}, err
	}
	if sp.plainRenders == nil {
		sp.plainRenders = map[*kernelTool]jsonwire.Value{}
	}
	sp.plainRenders[t] = v
	return v, nil
}
