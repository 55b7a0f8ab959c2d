package projection

import (
	"encoding/json"
	"strings"
	"sync"

	"github.com/nexuskernel/nexus/core/declare"
)

// Round is a model round's frozen declaration read back for the round driver: the set and the
// skill catalog as acceptance stored them, what the set offers each provider, and the skills
// block. Nothing in it is read again from a profile or an announcement. It is safe for
// concurrent use.
type Round struct {
	set     *declare.Set
	catalog declare.SkillCatalog
	skills  string
	mu      sync.Mutex
	// offers holds each target's offer once projected; the zero target is kernel deferral.
	offers map[Target]Offer
}

// Offer is what a round offers one provider: request_options.tools, each projected entry
// encoded, in order, and the variant of the provider's own tool search when native deferral
// applies to the offer, else "".
type Offer struct {
	Tools      []json.RawMessage
	ToolSearch string
}

// Open reads a round's stored tool_definitions (a stored render compiles to itself, so a
// refusal here is a fault, never a client's word) and skill catalog (empty, null or a JSON
// array). Empty stored definitions are the empty set.
func Open(c *declare.Compiler, toolDefinitions, skillCatalog []byte) (*Round, error) {
	set, err := c.Compile(toolDefinitions)
	if err != nil {
		return nil, declare.Fault(err)
	}
	var cat declare.SkillCatalog
	if s := strings.TrimSpace(string(skillCatalog)); s != "" && s != "null" {
		if err := json.Unmarshal(skillCatalog, &cat); err != nil {
			return nil, err
		}
	}
	p := Project(set, cat)
	r := &Round{set: set, catalog: cat, offers: map[Target]Offer{{}: offerOf(p)}}
	if block, ok := SkillsBlock(set, p, cat); ok {
		r.skills = block
	}
	return r, nil
}

func offerOf(p Projection) Offer {
	o := Offer{ToolSearch: p.ToolSearch}
	for _, v := range p.Tools {
		o.Tools = append(o.Tools, json.RawMessage(v.Encode()))
	}
	return o
}

// Set is the round's frozen set, which resolves the round's calls.
func (r *Round) Set() *declare.Set { return r.set }

// Offered is the round's offer to a provider. Only native deferral changes what is offered, so
// every kernel-mode target shares the zero target's projection.
func (r *Round) Offered(t Target) Offer {
	if t.NativeSearch == "" {
		t = Target{}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if o, ok := r.offers[t]; ok {
		return o
	}
	o := offerOf(ProjectFor(r.set, r.catalog, t))
	r.offers[t] = o
	return o
}

// SkillsBlock is the round's skills block, "" when none is rendered.
func (r *Round) SkillsBlock() string { return r.skills }

// FrozenSkill finds a skill of the frozen catalog under a callable.
func (r *Round) FrozenSkill(callable, name string) (declare.SkillEntry, bool) {
	for _, e := range r.catalog {
		if e.Callable == callable && e.Name == name {
			return e, true
		}
	}
	return declare.SkillEntry{}, false
}
