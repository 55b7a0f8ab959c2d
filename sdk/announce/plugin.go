package announce

import (
	"github.com/nexuskernel/nexus/sdk/refusal"
)

// Plugin kinds whose announcements ValidatePlugin checks (docs/development.md#the-plugin-host).
const (
	PluginKindMemory       = "memory"
	PluginKindToolProvider = "tool_provider"
)

// memoryWireNames are the six names a memory plugin announces, in catalog order. They are
// read from the name table so that the table stays the only list.
func memoryWireNames() []string {
	var out []string
	for _, k := range kernelNames {
		if k.Class == ClassOverridable {
			out = append(out, k.Wire)
		}
	}
	return out
}

// ValidatePlugin checks the announcement a plugin of the given kind makes through the plugin host:
// exactly Validate first (the HTTP door's rules, so a refusal there is returned as is), then the
// plugin-only rules of docs/plugins.md#what-the-host-checks, all of which are invalid_announcement
// and carry the name:
//
//   - a kernel wire name outside the memory family and the reserved namespaces (skill,
//     models_list): a plugin serves neither, whereas a runner may;
//   - kind memory: the tools are exactly the six memory wire names, each once (the first
//     unexpected name in list order, then the first missing one in catalog order, at
//     "tools"), and no documents (at "documents");
//   - kind tool_provider: memory wire names are allowed, so the executor can be an override
//     target.
//
// Any other kind is refused invalid_announcement at the root: the host's catalog admits only
// the two kinds, so this guards a programming error rather than a plugin.
func ValidatePlugin(kind string, a Announcement) *refusal.Refusal {
	if kind != PluginKindMemory && kind != PluginKindToolProvider {
		return single(CodeInvalidAnnouncement, "", "A plugin of kind "+quote(kind)+" announces nothing; the kinds are memory and tool_provider.")
	}
	if r := Validate(a); r != nil {
		return r
	}
	var ps problems
	for i, t := range a.Tools {
		if c, ok := ClassOf(t.Name); ok && (c == ClassRoutedBySource || c == ClassOrdinary) {
			ps.add(CodeInvalidAnnouncement, toolPath(i, "name"), t.Name, "%s is a kernel tool a plugin may not serve.", t.Name)
		}
	}
	if kind == PluginKindMemory {
		want := memoryWireNames()
		isMemory := map[string]bool{}
		for _, n := range want {
			isMemory[n] = true
		}
		have := map[string]bool{}
		for i, t := range a.Tools {
			have[t.Name] = true
			if c, ok := ClassOf(t.Name); ok && c != ClassOverridable {
				continue // already reported above
			}
			if !isMemory[t.Name] {
				ps.add(CodeInvalidAnnouncement, toolPath(i, "name"), t.Name, "a memory plugin announces only the six memory tools, not %s.", t.Name)
			}
		}
		for _, n := range want {
			if !have[n] {
				ps.add(CodeInvalidAnnouncement, "tools", n, "a memory plugin announces all six memory tools; %s is missing.", n)
			}
		}
		if len(a.Documents) > 0 {
			ps.add(CodeInvalidAnnouncement, "documents", "", "a memory plugin announces no documents.")
		}
	}
	return refusalOf(ps)
}

func quote(s string) string {
	if p := printable(s); p != "" || s == "" {
		return `"` + p + `"`
	}
	return "(unprintable)"
}
