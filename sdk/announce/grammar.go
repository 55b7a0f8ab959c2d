package announce

import (
	"regexp"
	"strings"
)

const (
	// DottedNamePattern is the grammar of a namespace (two segments, "nexus.memory") or a
	// canonical tool name (three segments, "nexus.memory.read"), wherever the project
	// validates a dotted name.
	DottedNamePattern = `^[a-z0-9][a-z0-9_-]*(\.[a-z0-9][a-z0-9_-]*){1,2}$`

	// WireNamePattern is the grammar of a wire name. It has no dot, so no wire name can equal
	// a canonical name, and it is the same word a template macro carries.
	WireNamePattern = `^[a-z][a-z0-9_]*$`

	// MaxWireNameLength bounds a wire name because model providers refuse function names
	// longer than 64 characters.
	MaxWireNameLength = 64

	// KernelSource is the source segment of every kernel tool: the server runs it.
	KernelSource = "nexus"
)

var (
	dottedName = regexp.MustCompile(DottedNamePattern)
	wireName   = regexp.MustCompile(WireNamePattern)
)

// IsDottedName reports whether s matches DottedNamePattern (two or three segments).
func IsDottedName(s string) bool { return dottedName.MatchString(s) }

// IsNamespace reports whether s is a dotted name of exactly two segments.
func IsNamespace(s string) bool { return IsDottedName(s) && strings.Count(s, ".") == 1 }

// IsCanonicalName reports whether s is a dotted name of exactly three segments. It checks the
// grammar only; LookupKernelName says whether the kernel registers it.
func IsCanonicalName(s string) bool { return IsDottedName(s) && strings.Count(s, ".") == 2 }

// IsWireName reports whether s matches WireNamePattern within MaxWireNameLength.
func IsWireName(s string) bool { return len(s) <= MaxWireNameLength && wireName.MatchString(s) }
