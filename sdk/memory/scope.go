package memory

import (
	"fmt"

	"github.com/nexuskernel/nexus/sdk/jsonwire"
)

// ScopeKind is the kind of owner an anchor belongs to.
type ScopeKind string

const (
	ScopeConversation ScopeKind = "conversation"
	ScopeWorkspace    ScopeKind = "workspace"
	ScopeUser         ScopeKind = "user"
)

// Access says whether a binding may change its anchor.
type Access string

const (
	AccessRead      Access = "read"
	AccessReadWrite Access = "read_write"
)

// Scope is one resolved binding: the root name a model writes, the anchor it opens (Kind plus
// OwnerID) and the access it grants (docs/agent-tools.md#memory-and-skills).
type Scope struct {
	// Binding is the root name, e.g. "workspace"; grammar [a-z][a-z0-9_-]{0,31}.
	Binding string
	Kind    ScopeKind
	// OwnerID is the public id (a canonical lowercase UUID) of the conversation, workspace or
	// user that owns the documents.
	OwnerID string
	Access  Access
	// WorkspaceID is the public id of the workspace the call runs in, or empty. It never selects
	// data; stores may log it.
	WorkspaceID string
}

// Writable reports whether the scope grants mutations.
func (s Scope) Writable() bool { return s.Access == AccessReadWrite }

// ValidScope checks a scope's fields; a bad one is ErrInvalidArgument. Owner ids must be
// canonical lowercase UUIDs so that every store names an anchor the same way (a filesystem
// store uses the id as a directory name, a database store as a uuid value).
func ValidScope(s Scope) error {
	switch {
	case !ValidBindingName(s.Binding):
		return fmt.Errorf("%w: binding name %q", ErrInvalidArgument, s.Binding)
	case s.Kind != ScopeConversation && s.Kind != ScopeWorkspace && s.Kind != ScopeUser:
		return fmt.Errorf("%w: scope kind %q", ErrInvalidArgument, s.Kind)
	case !jsonwire.IsPublicID(s.OwnerID):
		return fmt.Errorf("%w: owner id %q is not a canonical lowercase UUID", ErrInvalidArgument, s.OwnerID)
	case s.Access != AccessRead && s.Access != AccessReadWrite:
		return fmt.Errorf("%w: access %q", ErrInvalidArgument, s.Access)
	case s.WorkspaceID != "" && !jsonwire.IsPublicID(s.WorkspaceID):
		return fmt.Errorf("%w: workspace id %q is not a canonical lowercase UUID", ErrInvalidArgument, s.WorkspaceID)
	}
	return nil
}

// ValidBindingName reports whether name matches the root grammar [a-z][a-z0-9_-]{0,31}.
func ValidBindingName(name string) bool {
	if len(name) == 0 || len(name) > MaxBindingNameLength || name[0] < 'a' || name[0] > 'z' {
		return false
	}
	for i := 1; i < len(name); i++ {
		c := name[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}
