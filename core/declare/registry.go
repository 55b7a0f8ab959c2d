package declare

import (
	"fmt"

	"github.com/nexuskernel/nexus/core/registry"
	"github.com/nexuskernel/nexus/sdk/jsonwire"
)

// The kernel tools whose roles the declaration rules name.
const (
	// CanonicalSkill is the one kernel tool routed by source: a Runner route may serve it, and
	// every entry denoting it is a skill callable.
	CanonicalSkill = "nexus.skill.load"
	// CanonicalToolSearch and CanonicalToolCall are the discovery pair of provider projection.
	CanonicalToolSearch = "nexus.tools.search"
	CanonicalToolCall   = "nexus.tools.call"
	// CanonicalDelegateTask is removed from a delegated branch's tools: delegation from a
	// model has one level.
	CanonicalDelegateTask = "nexus.graph.delegate_task"
)

// Registry is what the compiler reads of the kernel registry. *registry.Registry satisfies it;
// tests use a fixture with fewer tools.
type Registry interface {
	Entries() []registry.Entry
	Resolve(name string) (registry.Entry, bool)
}

// Compiler compiles, freezes and narrows declarations against one registry. It is immutable
// and safe for concurrent use.
type Compiler struct {
	tools []*kernelTool
	// byName holds every kernel spelling: canonical and wire names.
	byName map[string]*kernelTool
}

// kernelTool is one registry entry with its schema decoded once.
type kernelTool struct {
	entry registry.Entry
	// schema is the parameter schema template.
	schema jsonwire.Value
	// params are the kernel parameter names, the keys of schema.properties in order.
	params []string
	// props maps each parameter to its property schema.
	props map[string]jsonwire.Value
	// catalog is the plain definition the catalog serves.
	catalog jsonwire.Value
}

// New indexes reg. It fails only when the registry is inconsistent: an entry that does not
// resolve to itself by both spellings, or a schema that is not a JSON object.
func New(reg Registry) (*Compiler, error) {
	entries := reg.Entries()
	c := &Compiler{byName: make(map[string]*kernelTool, 2*len(entries))}
	for _, e := range entries {
		for _, name := range []string{e.Canonical, e.Wire} {
			got, ok := reg.Resolve(name)
			if !ok || got.Canonical != e.Canonical || got.Wire != e.Wire {
				return nil, fmt.Errorf("declare: registry entry %s does not resolve by %q", e.Canonical, name)
			}
			if _, dup := c.byName[name]; dup {
				return nil, fmt.Errorf("declare: kernel spelling %q registered twice", name)
			}
		}
		t, err := newKernelTool(e)
		if err != nil {
			return nil, err
		}
		c.tools = append(c.tools, t)
		c.byName[e.Canonical] = t
		c.byName[e.Wire] = t
	}
	return c, nil
}

func newKernelTool(e registry.Entry) (*kernelTool, error) {
	schema, err := jsonwire.Decode(e.Schema)
	if err != nil || !schema.IsObject() {
		return nil, fmt.Errorf("declare: schema of %s is not a JSON object", e.Canonical)
	}
	t := &kernelTool{entry: e, schema: schema, props: map[string]jsonwire.Value{}}
	if props, ok := schema.Get("properties"); ok && props.IsObject() {
		for _, m := range props.Members() {
			t.params = append(t.params, m.Key)
			t.props[m.Key] = m.Value
		}
	}
	def, err := registry.Definition(e, registry.PlainSpelling)
	if err != nil {
		return nil, fmt.Errorf("declare: definition of %s: %w", e.Canonical, err)
	}
	if t.catalog, err = jsonwire.Decode(def); err != nil {
		return nil, fmt.Errorf("declare: definition of %s: %w", e.Canonical, err)
	}
	return t, nil
}

// resolve finds the kernel tool a name spells, in either spelling.
func (c *Compiler) resolve(name string) *kernelTool { return c.byName[name] }

// byCanonical finds a tool by its exact canonical name only.
func (c *Compiler) byCanonical(name string) *kernelTool {
	if t := c.byName[name]; t != nil && t.entry.Canonical == name {
		return t
	}
	return nil
}

func (t *kernelTool) hasParam(name string) bool {
	_, ok := t.props[name]
	return ok
}

func (t *kernelTool) position(param string) int {
	for i, p := range t.params {
		if p == param {
			return i
		}
	}
	return len(t.params)
}

// IsKernelSpelling reports whether name is a canonical or wire name of a live kernel tool.
func (c *Compiler) IsKernelSpelling(name string) bool { return c.resolve(name) != nil }

// KernelWire reports whether name is a canonical or wire name of a live kernel tool, and the
// tool's wire name.
func (c *Compiler) KernelWire(name string) (wire string, ok bool) {
	t := c.resolve(name)
	if t == nil {
		return "", false
	}
	return t.entry.Wire, true
}
