package announce

import (
	"errors"
	"fmt"
	"strings"
)

// reservedNamespaces are the families no executor may serve in the kernel's place.
var reservedNamespaces = [...]string{
	"nexus.graph",
	"nexus.human",
	"nexus.conversation",
	"nexus.tools",
	"nexus.runners",
}

// overridableNamespaces is the one family a workspace may hand to a tool provider, whole.
var overridableNamespaces = [...]string{"nexus.memory"}

// ReservedNamespaces returns the five reserved namespaces. The slice is the caller's own.
func ReservedNamespaces() []string {
	return append([]string(nil), reservedNamespaces[:]...)
}

// OverridableNamespaces returns the namespaces a workspace override map may name: exactly
// nexus.memory. The slice is the caller's own.
func OverridableNamespaces() []string {
	return append([]string(nil), overridableNamespaces[:]...)
}

// NamespaceOf returns the first two segments of a dotted name with three segments
// ("nexus.memory.read" -> "nexus.memory"). ok is false for anything that is not a canonical
// tool name under the dotted-name grammar.
func NamespaceOf(canonical string) (namespace string, ok bool) {
	if !IsCanonicalName(canonical) {
		return "", false
	}
	return canonical[:strings.LastIndexByte(canonical, '.')], true
}

// ErrNotOverridable is wrapped by ValidateOverrideKey's refusals; the override door reports it
// with its own word.
var ErrNotOverridable = errors.New("not an overridable namespace")

// ValidateOverrideKey checks one key of a workspace's tool-provider override map. Only
// nexus.memory may be a key: reserved families always run in the kernel, and skill calls are
// routed by their frozen source, so neither can be handed over. Matching is exact.
func ValidateOverrideKey(key string) error {
	for _, ns := range overridableNamespaces {
		if key == ns {
			return nil
		}
	}
	return fmt.Errorf("%q: %w; the only overridable namespace is %s", key, ErrNotOverridable, overridableNamespaces[0])
}
