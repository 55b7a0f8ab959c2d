package declare

import (
	"strings"
	"unicode/utf8"

	"github.com/nexuskernel/nexus/sdk/announce"
	"github.com/nexuskernel/nexus/sdk/jsonwire"
)

// Route is a routed entry's target: the Runner and the name it serves the tool under.
type Route struct {
	// RunnerID is the Runner's public id as the route was authored (compare it with
	// SameRunner).
	RunnerID string
	ToolName string
}

// Entry is one entry of a compiled set with the facts the kernel reads from it.
type Entry struct {
	// Callable is the name the model calls it by.
	Callable string
	// Canonical is the kernel tool a plain kernel entry or an alias denotes; "" for a
	// function tool.
	Canonical string
	// Alias is true for an alias entry (identity aliases included).
	Alias bool
	// Route is set for a routed function tool.
	Route *Route
	// DeferLoading is the entry's defer_loading annotation.
	DeferLoading bool
	// Import is set for a function tool a tool-provider import froze (or a bare name filled
	// from the providers' announcements): its frozen effect profile and pin.
	Import *ImportFacts
	// Value is the stored entry.
	Value jsonwire.Value
}

// entry is one entry of a set as the compiler carries it: the value and what it denotes.
type entry struct {
	value jsonwire.Value
	name  string
	// tool is the kernel tool denoted by a plain kernel entry or an alias.
	tool  *kernelTool
	alias *aliasSpec
	// deferLoading is the authored annotation; nil when absent.
	deferLoading *bool
	route        *Route
	imp          *ImportFacts
}

// ImportFacts are what an entry frozen from the workspace's tool providers carries beside its
// definition, under its "import" key (docs/agent-tools.md#imports). The key never reaches a
// model: projection keeps a nested entry's type and function only.
type ImportFacts struct {
	// EffectProfile is the announced effect profile frozen with the tool; nil when none was
	// frozen. Addressing takes the stricter of it and the pool's current profiles, so a
	// hand-written one never weakens the approval gate.
	EffectProfile *announce.EffectProfile
	// Pin is the pinned definition digest (announce.DefinitionDigest); "" when not pinned. A
	// call is served only by a provider whose own current definition still has it.
	Pin string
}

func (e *entry) public() Entry {
	out := Entry{Callable: e.name, Alias: e.alias != nil, Route: e.route, Value: e.value}
	if e.tool != nil {
		out.Canonical = e.tool.entry.Canonical
	}
	if e.deferLoading != nil {
		out.DeferLoading = *e.deferLoading
	}
	if e.route != nil {
		r := *e.route
		out.Route = &r
	}
	if e.imp != nil {
		f := *e.imp
		out.Import = &f
	}
	return out
}

// callableName is stage D's reading of an entry's name: function.name when function is an
// object holding name, else the top-level name. ok is false when that is not a string.
func callableName(v jsonwire.Value) (string, bool) {
	if fn, ok := v.Get("function"); ok && fn.IsObject() {
		if n, ok := fn.Get("name"); ok {
			return n.AsString()
		}
	}
	return v.GetString("name")
}

// validName is the name rule: 1 to MaxNameLength code points, no NUL.
func validName(s string) bool {
	return s != "" && utf8.RuneCountInString(s) <= MaxNameLength && !strings.ContainsRune(s, 0)
}

// validUUID matches 8-4-4-4-12 hex digits in either case.
func validUUID(s string) bool {
	if len(s) != 36 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch i {
		case 8, 13, 18, 23:
			if c != '-' {
				return false
			}
		default:
			if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F') {
				return false
			}
		}
	}
	return true
}

// ValidRunnerID reports whether s is a Runner public id in UUID form.
func ValidRunnerID(s string) bool { return validUUID(s) }

// SameRunner compares two Runner public ids as the rules do: case-insensitively.
func SameRunner(a, b string) bool { return strings.EqualFold(a, b) }

// lowerID is the form the kernel writes ids it produces in.
func lowerID(s string) string { return strings.ToLower(s) }

// smallestKey returns the bytewise-smallest key of v that is not allowed, so a refusal never
// depends on the order in which an object's keys arrived.
func smallestKey(v jsonwire.Value, allowed ...string) (string, bool) {
	found := false
	var least string
	for _, m := range v.Members() {
		ok := false
		for _, a := range allowed {
			if m.Key == a {
				ok = true
				break
			}
		}
		if !ok && (!found || m.Key < least) {
			least, found = m.Key, true
		}
	}
	return least, found
}

// pathKey writes an object key into a path.
func pathKey(key string) string { return "." + key }
