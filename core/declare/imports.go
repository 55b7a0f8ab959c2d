package declare

import (
	"bytes"

	"github.com/nexuskernel/nexus/core/refusal"
	"github.com/nexuskernel/nexus/sdk/jsonwire"
)

// Imports are the three import fields of a profile, an assembly configuration or a model step
// (docs/agent-tools.md#declaring-tools). A nil list is an absent or null field. For RunnerToolNames
// that difference matters: nil imports every model-facing tool of the selected Runner, an empty
// non-nil list none. (encoding/json decodes null to nil and [] to an empty slice, which is this
// convention.)
type Imports struct {
	KernelTools             []string `json:"kernel_tools"`
	RunnerExecutorPublicIDs []string `json:"runner_executor_public_ids"`
	RunnerToolNames         []string `json:"runner_tool_names"`
}

// RunnerImportRequested is the condition (docs/agent-tools.md#declaring-tools): candidates are
// declared and runner_tool_names is not [].
func (im Imports) RunnerImportRequested() bool {
	return len(im.RunnerExecutorPublicIDs) > 0 && (im.RunnerToolNames == nil || len(im.RunnerToolNames) > 0)
}

// ReadBack is the form a profile reads back in: kernel_tools and the candidate ids as arrays
// ([] when none, ids lowercase), runner_tool_names exactly as stored (nil reads as null).
func (im Imports) ReadBack() Imports {
	out := Imports{
		KernelTools:             append([]string{}, im.KernelTools...),
		RunnerExecutorPublicIDs: make([]string, len(im.RunnerExecutorPublicIDs)),
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
	return explicit.Len() > 0 || len(im.KernelTools) > 0 || im.RunnerImportRequested()
}

// ParseImports checks the three import fields, each given as its raw JSON (nil when absent),
// in the order kernel_tools, runner_executor_public_ids, runner_tool_names. Within a field:
// its type, then each item in order, then its bound. The first failure is refused invalid or
// content_too_large with the field and the item's path.
func (c *Compiler) ParseImports(kernelTools, runnerIDs, runnerToolNames []byte) (Imports, error) {
	var im Imports
	var r *refusal.Error
	if im.KernelTools, r = parseList(FieldKernelTools, kernelTools, c.checkKernelImport, exact); r != nil {
		return Imports{}, r
	}
	if im.RunnerExecutorPublicIDs, r = parseList(FieldRunnerExecutorPublicIDs, runnerIDs, checkRunnerID, lowerID); r != nil {
		return Imports{}, r
	}
	if im.RunnerToolNames, r = parseList(FieldRunnerToolNames, runnerToolNames, checkServedName, exact); r != nil {
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

func exact(s string) string { return s }
