package memory

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/nexuskernel/nexus/sdk/jsonwire"

	memsdk "github.com/nexuskernel/nexus/sdk/memory"
)

// Principal kinds: a person or an agent application.
const (
	PrincipalUser  = "user"
	PrincipalAgent = "agent"
)

// Principal is a member as memory sees it: a run's memory principal, or a member door's caller.
type Principal struct {
	// Kind is PrincipalUser or PrincipalAgent.
	Kind     string
	PublicID string
}

// MemoryPrincipal answers a run's memory principal (docs/agent-tools.md#memory-and-skills) from the
// run's creation facts: its answering agent when it has one (a conversation-hosted run, or a
// standalone run an agent created), else the member who created it (a person's standalone run).
func MemoryPrincipal(answeringAgentPublicID string, createdBy Principal) Principal {
	if answeringAgentPublicID != "" {
		return Principal{Kind: PrincipalAgent, PublicID: answeringAgentPublicID}
	}
	return createdBy
}

// Binding is one binding of a frozen memory configuration (docs/agent-tools.md#memory-and-skills):
// the root a model writes, the kind of anchor it opens and the access it grants. Which anchor is
// decided on every call, from live rows (Resolver.Resolve).
type Binding struct {
	// Name is the root, grammar [a-z][a-z0-9_-]{0,31}.
	Name   string           `json:"name"`
	Scope  memsdk.ScopeKind `json:"scope"`
	Access memsdk.Access    `json:"access"`
	// ConversationPublicID names a conversation other than the run's own, for a conversation
	// binding only (wave 2); empty means the run's conversation.
	ConversationPublicID string `json:"conversation_public_id,omitempty"`
}

// Context is the memory configuration a run freezes at acceptance, stored on the run as
// {"memory_context": Context}. An empty Bindings is a run without memory.
type Context struct {
	Bindings []Binding `json:"bindings"`
}

// The wave-1 default roots (docs/agent-tools.md#memory-and-skills).
const (
	RootConversation = "conversation"
	RootWorkspace    = "workspace"
	RootUser         = "user"
)

// DefaultContext is the wave-1 configuration (docs/agent-tools.md#memory-and-skills): a
// conversation binding for a conversation-hosted run only, the workspace binding always, and a user
// binding when the memory principal has a controlling person; every one read_write.
func DefaultContext(hasConversation, hasControllingPerson bool) Context {
	c := Context{Bindings: []Binding{}}
	if hasConversation {
		c.Bindings = append(c.Bindings, Binding{Name: RootConversation, Scope: memsdk.ScopeConversation, Access: memsdk.AccessReadWrite})
	}
	c.Bindings = append(c.Bindings, Binding{Name: RootWorkspace, Scope: memsdk.ScopeWorkspace, Access: memsdk.AccessReadWrite})
	if hasControllingPerson {
		c.Bindings = append(c.Bindings, Binding{Name: RootUser, Scope: memsdk.ScopeUser, Access: memsdk.AccessReadWrite})
	}
	return c
}

// ErrContextInvalid is a stored memory configuration that breaks the binding grammar.
var ErrContextInvalid = errors.New("memory: invalid memory context")

// Validate checks the binding grammar: root names valid and distinct, a known scope and access,
// and a conversation id only on a conversation binding, in canonical form.
func (c Context) Validate() error {
	seen := map[string]bool{}
	for i, b := range c.Bindings {
		switch {
		case !memsdk.ValidBindingName(b.Name):
			return fmt.Errorf("%w: bindings[%d].name %q", ErrContextInvalid, i, b.Name)
		case seen[b.Name]:
			return fmt.Errorf("%w: bindings[%d].name %q repeats a root", ErrContextInvalid, i, b.Name)
		case b.Scope != memsdk.ScopeConversation && b.Scope != memsdk.ScopeWorkspace && b.Scope != memsdk.ScopeUser:
			return fmt.Errorf("%w: bindings[%d].scope %q", ErrContextInvalid, i, b.Scope)
		case b.Access != memsdk.AccessRead && b.Access != memsdk.AccessReadWrite:
			return fmt.Errorf("%w: bindings[%d].access %q", ErrContextInvalid, i, b.Access)
		case b.ConversationPublicID != "" && b.Scope != memsdk.ScopeConversation:
			return fmt.Errorf("%w: bindings[%d] names a conversation on a %s binding", ErrContextInvalid, i, b.Scope)
		case b.ConversationPublicID != "" && !jsonwire.IsPublicID(b.ConversationPublicID):
			return fmt.Errorf("%w: bindings[%d].conversation_public_id %q", ErrContextInvalid, i, b.ConversationPublicID)
		}
		seen[b.Name] = true
	}
	return nil
}

// MarshalJSON writes {"bindings":[…]}, with [] for no bindings.
func (c Context) MarshalJSON() ([]byte, error) {
	type plain Context
	if c.Bindings == nil {
		c.Bindings = []Binding{}
	}
	return json.Marshal(plain(c))
}

// ParseContext reads a stored configuration and validates it. A missing bindings list is
// refused: "no memory" is spelled bindings: [], never by omission.
func ParseContext(raw []byte) (Context, error) {
	var c struct {
		Bindings *[]Binding `json:"bindings"`
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&c); err != nil {
		return Context{}, fmt.Errorf("%w: %v", ErrContextInvalid, err)
	}
	if c.Bindings == nil {
		return Context{}, fmt.Errorf("%w: no bindings", ErrContextInvalid)
	}
	out := Context{Bindings: *c.Bindings}
	if err := out.Validate(); err != nil {
		return Context{}, err
	}
	return out, nil
}

// ProjectedBinding is one resolved binding as an executor reads it on an overridden memory row
// (docs/agent-tools.md#memory-and-skills): the anchor named by the one public id its scope uses.
type ProjectedBinding struct {
	Name                 string           `json:"name"`
	Scope                memsdk.ScopeKind `json:"scope"`
	Access               memsdk.Access    `json:"access"`
	ConversationPublicID string           `json:"conversation_public_id,omitempty"`
	WorkspacePublicID    string           `json:"workspace_public_id,omitempty"`
	UserPublicID         string           `json:"user_public_id,omitempty"`
}

// Projection is the scope field of an overridden memory row: {"bindings": […]}.
type Projection struct {
	Bindings []ProjectedBinding `json:"bindings"`
}

// Project turns resolved scopes into the executor's projection, in the order given.
func Project(scopes []memsdk.Scope) Projection {
	p := Projection{Bindings: make([]ProjectedBinding, 0, len(scopes))}
	for _, s := range scopes {
		b := ProjectedBinding{Name: s.Binding, Scope: s.Kind, Access: s.Access}
		switch s.Kind {
		case memsdk.ScopeConversation:
			b.ConversationPublicID = s.OwnerID
		case memsdk.ScopeWorkspace:
			b.WorkspacePublicID = s.OwnerID
		case memsdk.ScopeUser:
			b.UserPublicID = s.OwnerID
		}
		p.Bindings = append(p.Bindings, b)
	}
	return p
}

// Encode is the projection's bytes as a row's scope field.
func (p Projection) Encode() json.RawMessage {
	raw, _ := json.Marshal(p) // strings only: Marshal cannot fail
	return raw
}

// Scopes is the inverse of Project: the projection's bindings as scopes of the workspace.
func (p Projection) Scopes(workspacePublicID string) []memsdk.Scope {
	out := make([]memsdk.Scope, 0, len(p.Bindings))
	for _, b := range p.Bindings {
		s := memsdk.Scope{Binding: b.Name, Kind: b.Scope, Access: b.Access, WorkspaceID: workspacePublicID}
		switch s.Kind {
		case memsdk.ScopeConversation:
			s.OwnerID = b.ConversationPublicID
		case memsdk.ScopeWorkspace:
			s.OwnerID = b.WorkspacePublicID
		case memsdk.ScopeUser:
			s.OwnerID = b.UserPublicID
		}
		out = append(out, s)
	}
	return out
}

// ParseProjection reads a row's scope field back into scopes of the workspace.
func ParseProjection(raw []byte, workspacePublicID string) ([]memsdk.Scope, error) {
	var p Projection
	if err := json.Unmarshal(raw, &p); err != nil {
		return nil, fmt.Errorf("memory: a row's scope: %w", err)
	}
	return p.Scopes(workspacePublicID), nil
}
