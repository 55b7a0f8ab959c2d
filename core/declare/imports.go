package declare

import (
	"bytes"

	"github.com/nexuskernel/nexus/core/refusal"
	"github.com/nexuskernel/nexus/sdk/announce"
	"github.com/nexuskernel/nexus/sdk/jsonwire"
)

// Imports are the import fields of a profile, an assembly configuration or a model step
// (docs/agent-tools.md#imports): one concept, a source and its selectors. A nil list is an absent
// or null field. For RunnerToolNames that difference matters: nil imports every model-facing tool
// of the selected Runner, an empty non-nil list none. For ToolProviderTools it does not: nil and
// an empty list import nothing, and ["*"] imports all. (encoding/json decodes null to nil and []
// to an empty slice, which is this convention.)
type Imports struct {
	KernelTools             []string `json:"kernel_tools"`
	RunnerExecutorPublicIDs []string `json:"runner_executor_public_ids"`
	RunnerToolNames         []string `json:"runner_tool_names"`
	// ToolProviderTools selects the workspace's tool providers' tools (plugins, the MCP
	// bridge, HTTP tool providers) by exact name or trailing-"*" pattern.
	ToolProviderTools []string `json:"tool_provider_tools"`
	// EagerToolNames are imported callables offered eagerly; every other import is deferred.
	EagerToolNames []string `json:"eager_tool_names"`
}

// RunnerImportRequested is the condition (docs/agent-tools.md#declaring-tools): candidates are
// declared and runner_tool_names is not [].
func (im Imports) RunnerImportRequested() bool {
	return len(im.RunnerExecutorPublicIDs) > 0 && (im.RunnerToolNames == nil || len(im.RunnerToolNames) > 0)
}

// ReadBack is the form a profile reads back in: kernel_tools, the candidate ids,
// tool_provider_tools and eager_tool_names as arrays ([] when none, ids lowercase),
// runner_tool_names exactly as stored (nil reads as null).
func (im Imports) ReadBack() Imports {
	out := Imports{
		KernelTools:             append([]string{}, im.KernelTools...),
		RunnerExecutorPublicIDs: make([]string, len(im.RunnerExecutorPublicIDs)),
		ToolProviderTools:       append([]string{}, im.ToolProviderTools...),
		EagerToolNames:          append([]string{}, im.EagerToolNames...),
	}
	for i, id := range im.RunnerExecutorPublicIDs {
		out.RunnerExecutorPublicIDs[i] = lowerID(id)
	}
	if im.RunnerToolNames != nil {
		out.RunnerToolNames = append([]string{}, im.RunnerToolNames...)
	}
	return out
}

// DeclaresTools reports whether a profile with this explicit set and these imports has tools,
// which is when its approval_mode is required (docs/api.md#agent-profiles).
func DeclaresTools(explicit *Set, im Imports) bool {
	return explicit.Len() > 0 || len(im.KernelTools) > 0 || im.RunnerImportRequested() || len(im.ToolProviderTools) > 0
}

// ImportSources are the import fields as authored, each its raw JSON, nil when absent.
type ImportSources struct {
	KernelTools             []byte
	RunnerExecutorPublicIDs []byte
	RunnerToolNames         []byte
	ToolProviderTools       []byte
	EagerToolNames          []byte
}

// Given reports whether any import field is present.
func (s ImportSources) Given() bool {
	return s.KernelTools != nil || s.RunnerExecutorPublicIDs != nil || s.RunnerToolNames != nil ||
		s.ToolProviderTools != nil || s.EagerToolNames != nil
}

// ParseImports checks the import fields in the order kernel_tools, runner_executor_public_ids,
// runner_tool_names, tool_provider_tools, eager_tool_names. Within a field: its type, then each
// item in order, then its bound. The first failure is refused invalid or content_too_large with
// the field and the item's path. Selectors (runner_tool_names, tool_provider_tools) are exact
// names or a name with one trailing "*" (announce.ValidImportSelector); kernel_tools takes exact
// canonical names and eager_tool_names exact callables.
func (c *Compiler) ParseImports(src ImportSources) (Imports, error) {
	var im Imports
	var r *refusal.Error
	if im.KernelTools, r = parseList(FieldKernelTools, src.KernelTools, c.checkKernelImport, exact); r != nil {
		return Imports{}, r
	}
	if im.RunnerExecutorPublicIDs, r = parseList(FieldRunnerExecutorPublicIDs, src.RunnerExecutorPublicIDs, checkRunnerID, lowerID); r != nil {
		return Imports{}, r
	}
	if im.RunnerToolNames, r = parseList(FieldRunnerToolNames, src.RunnerToolNames, checkSelector, exact); r != nil {
		return Imports{}, r
	}
	if im.ToolProviderTools, r = parseList(FieldToolProviderTools, src.ToolProviderTools, checkSelector, exact); r != nil {
		return Imports{}, r
	}
	if im.EagerToolNames, r = parseList(FieldEagerToolNames, src.EagerToolNames, checkServedName, exact); r != nil {
		return Imports{}, r
	}
	return im, nil
}

// itemCheck refuses an item of a list by returning why, or returns "".
type itemCheck func(item string) string

// parseList reads one import list: repeats are found by dedupKey (ids compare
// case-insensitively), the grammar of each item by check.
func parseList(field string, raw []byte, check itemCheck, dedupKey func(string) string) ([]string, *refusal.Error) {
	trimmed := bytes.TrimSpace(raw)
	if len(trimmed) == 0 || string(trimmed) == "null" {
		return nil, nil
	}
	v, err := jsonwire.Decode(trimmed)
	if err != nil || !v.IsArray() {
		return nil, refuse(WordInvalid, field, "", "%s must be an array or null", field)
	}
	out := make([]string, 0, v.Len())
	seen := make(map[string]bool, v.Len())
	for j, it := range v.Items() {
		s, ok := it.AsString()
		if !ok {
			return nil, refuse(WordInvalid, field, indexPath("", j), "each item of %s must be a string", field)
		}
		if why := check(s); why != "" {
			return nil, refuse(WordInvalid, field, indexPath("", j), "%s %s", quote(s), why)
		}
		k := dedupKey(s)
		if seen[k] {
			return nil, refuse(WordInvalid, field, indexPath("", j), "%s is listed twice", quote(s))
		}
		seen[k] = true
		out = append(out, s)
	}
	if n := v.EncodedSize(); n > MaxDeclarationBytes {
		return nil, refuse(WordContentTooLarge, field, "", "%s is %d bytes; the bound is %d", field, n, MaxDeclarationBytes)
	}
	return out, nil
}

func (c *Compiler) checkKernelImport(name string) string {
	t := c.resolve(name)
	switch {
	case t == nil:
		return "names no kernel tool (exact canonical names only, no wildcards)"
	case t.entry.Canonical != name:
		return "is a wire name; use the canonical name " + t.entry.Canonical
	}
	return ""
}

func checkRunnerID(id string) string {
	if !validUUID(id) {
		return "is not a Runner public id"
	}
	return ""
}

func checkServedName(name string) string {
	if !validName(name) {
		return "is not a tool name of 1 to 128 characters without NUL"
	}
	return ""
}

// checkSelector is the import selector grammar: an exact name, or a prefix and one trailing "*".
func checkSelector(sel string) string {
	if !announce.ValidImportSelector(sel) {
		return `is not a tool name of 1 to 128 characters without NUL, or such a name's prefix followed by one trailing "*"`
	}
	return ""
}

func exact(s string) string { return s }
