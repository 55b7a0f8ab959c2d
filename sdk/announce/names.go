package announce

// Class is what a kernel name's namespace allows other executors to do with it. Every kernel
// name has exactly one class.
type Class string

const (
	// ClassReserved: no executor may serve the name in the kernel's place.
	ClassReserved Class = "reserved"
	// ClassOverridable: a workspace may hand the whole family to one tool provider.
	ClassOverridable Class = "overridable"
	// ClassRoutedBySource: each call goes where the skill's source was frozen at acceptance.
	ClassRoutedBySource Class = "routed_by_source"
	// ClassOrdinary: in none of the classes above; the kernel always answers it itself.
	ClassOrdinary Class = "ordinary"
)

// KernelName is one row of the kernel name table.
type KernelName struct {
	// Position is the 1-based place of the tool in catalog order.
	Position int
	// Canonical is the three-segment name source.category.name.
	Canonical string
	// Wire is the short name providers and models see. It is stored, never computed from
	// Canonical: a published wire name sits at the front of cached prompt prefixes.
	Wire  string
	Class Class
}

// WireDelegateTask is delegate_task's wire name, which the engine reads on a row's tool_name: a
// row of a kernel tool always carries the wire name (docs/api.md#runs), never an alias.
const WireDelegateTask = "delegate_task"

// kernelNames is the kernel name table in catalog order. Appending a row is a deliberate
// change to docs/agent-tools.md, the golden catalog and the contract pack; a row is never
// reordered, renamed or removed.
var kernelNames = [...]KernelName{
	{1, "nexus.graph.delegate_task", WireDelegateTask, ClassReserved},
	{2, "nexus.graph.wait", "wait", ClassReserved},
	{3, "nexus.human.ask", "ask", ClassReserved},
	{4, "nexus.conversation.spawn", "spawn", ClassReserved},
	{5, "nexus.conversation.send", "send", ClassReserved},
	{6, "nexus.conversation.status", "status", ClassReserved},
	{7, "nexus.conversation.cancel", "cancel", ClassReserved},
	{8, "nexus.conversation.read", "session_read", ClassReserved},
	{9, "nexus.conversation.search", "session_search", ClassReserved},
	{10, "nexus.memory.ls", "memory_ls", ClassOverridable},
	{11, "nexus.memory.read", "memory_read", ClassOverridable},
	{12, "nexus.memory.grep", "memory_grep", ClassOverridable},
	{13, "nexus.memory.write", "memory_write", ClassOverridable},
	{14, "nexus.memory.edit", "memory_edit", ClassOverridable},
	{15, "nexus.memory.delete", "memory_delete", ClassOverridable},
	{16, "nexus.tools.search", "tool_search", ClassReserved},
	{17, "nexus.tools.call", "tool_call", ClassReserved},
	{18, "nexus.runners.list", "runners_list", ClassReserved},
	{19, "nexus.models.list", "models_list", ClassOrdinary},
	{20, "nexus.skill.load", "skill", ClassRoutedBySource},
}

// KernelNames returns the name table in catalog order. The slice is the caller's own.
func KernelNames() []KernelName {
	out := make([]KernelName, len(kernelNames))
	copy(out, kernelNames[:])
	return out
}

// LookupKernelName finds the row whose canonical or wire name is exactly name. Matching is
// case-sensitive and nothing is trimmed: "Memory_Read" and " memory_read" are not kernel names.
func LookupKernelName(name string) (KernelName, bool) {
	// A linear scan over twenty rows keeps the table the only state, with no index to build.
	for _, k := range kernelNames {
		if k.Canonical == name || k.Wire == name {
			return k, true
		}
	}
	return KernelName{}, false
}

// Lookup is LookupKernelName in the shape the plugin SDK documents.
func Lookup(name string) (canonical, wire string, class Class, ok bool) {
	k, ok := LookupKernelName(name)
	return k.Canonical, k.Wire, k.Class, ok
}

// ClassOf answers the class of a kernel name given in either spelling; ok is false when name
// is not a kernel name.
func ClassOf(name string) (class Class, ok bool) {
	k, ok := LookupKernelName(name)
	return k.Class, ok
}

// InReservedNamespace reports whether name, in either spelling, is a kernel tool whose
// namespace is one of the reserved five. An unregistered dotted name such as
// "nexus.graph.other" is not a kernel name, so it answers false; announcement checks refuse it
// by the name grammar instead.
func InReservedNamespace(name string) bool {
	c, ok := ClassOf(name)
	return ok && c == ClassReserved
}
