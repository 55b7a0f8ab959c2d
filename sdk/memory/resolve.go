package memory

import (
	"encoding/json"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/nexuskernel/nexus/sdk/announce"
)

// verb is one of the six memory tools.
type verb int

const (
	verbLs verb = iota + 1
	verbRead
	verbGrep
	verbWrite
	verbEdit
	verbDelete
)

// verbs maps both spellings of each memory tool to its verb: the wire names, and the canonical
// names sdk/announce pairs with them. The kernel dispatches by canonical name and the plugin
// host by the row's wire name.
var verbs = func() map[string]verb {
	byWire := map[string]verb{
		ToolLs: verbLs, ToolRead: verbRead, ToolGrep: verbGrep,
		ToolWrite: verbWrite, ToolEdit: verbEdit, ToolDelete: verbDelete,
	}
	out := map[string]verb{}
	for wire, v := range byWire {
		out[wire] = v
		if k, ok := announce.LookupKernelName(wire); ok {
			out[k.Canonical] = v
		}
	}
	return out
}()

func (v verb) mutating() bool { return v == verbWrite || v == verbEdit || v == verbDelete }

// refusal is a memory error result before it is written: the code and its detail as given
// (clipping and control-character replacement happen when the text is written).
type refusal struct {
	code   string
	detail string
	// clip is the detail's character limit; zero keeps the detail whole.
	clip int
}

func pathRefusal(code, path string) *refusal {
	return &refusal{code: code, detail: path, clip: MaxPathDetailChars}
}

func patternRefusal(code, pattern string) *refusal {
	return &refusal{code: code, detail: pattern, clip: MaxPatternDetailChars}
}

// text is the refusal's content: "<code>: <detail>", or the code alone when the detail is
// empty. The detail keeps its first clip characters, and each C0 control character and each
// bidirectional control in it becomes U+FFFD, so a refusal is always one printable line that
// reads as it is stored.
func (r *refusal) text() string {
	detail := clipDetail(r.detail, r.clip)
	if detail == "" {
		return r.code
	}
	return r.code + ": " + detail
}

func clipDetail(detail string, limit int) string {
	var b strings.Builder
	count := 0
	for _, c := range detail {
		if limit > 0 && count == limit {
			break
		}
		count++
		if c < 0x20 || IsBidiControl(c) {
			c = utf8.RuneError
		}
		b.WriteRune(c)
	}
	return b.String()
}

// bindingSet is the frozen memory configuration of one call: the resolved bindings sorted by root
// name, which is the order of every listing and search (docs/agent-tools.md#memory-and-skills).
type bindingSet []Scope

// newBindingSet checks and sorts the bindings. A binding that fails ValidScope, or two with one
// name (a path would be ambiguous), make the configuration unusable; ok is false then, and the
// call answers memory_unavailable since the fault is the caller's configuration, not the input.
func newBindingSet(bindings []Scope) (bindingSet, bool) {
	for _, b := range bindings {
		if ValidScope(b) != nil {
			return nil, false
		}
	}
	set := append(bindingSet(nil), bindings...)
	sort.SliceStable(set, func(i, j int) bool { return set[i].Binding < set[j].Binding })
	for i := 1; i < len(set); i++ {
		if set[i].Binding == set[i-1].Binding {
			return nil, false
		}
	}
	return set, true
}

func (s bindingSet) lookup(root string) (Scope, bool) {
	i := sort.Search(len(s), func(i int) bool { return s[i].Binding >= root })
	if i < len(s) && s[i].Binding == root {
		return s[i], true
	}
	return Scope{}, false
}

// target is a resolved document path.
type target struct {
	path  string // as given, for texts and titles
	scope Scope
	name  string
}

// resolvePath applies docs/agent-tools.md#memory-and-skills to the "path" argument of read, write,
// edit and delete.
func resolvePath(v verb, args arguments, set bindingSet) (target, *refusal) {
	path, ok := args.str("path")
	if !ok {
		return target{}, &refusal{code: CodePathInvalid}
	}
	root, name, hasSlash := strings.Cut(path, "/")
	if v.mutating() && hasSlash && IsReservedName(name) {
		return target{}, pathRefusal(CodeReservedPrefix, path)
	}
	if !hasSlash || ValidName(name) != nil {
		return target{}, pathRefusal(CodePathInvalid, path)
	}
	scope, bound := set.lookup(root)
	if !bound {
		return target{}, pathRefusal(CodeScopeUnavailable, path)
	}
	if v.mutating() && !scope.Writable() {
		return target{}, pathRefusal(CodeReadOnly, path)
	}
	return target{path: path, scope: scope, name: name}, nil
}

// selection is one binding a listing or search covers, with the name prefix inside it.
type selection struct {
	scope  Scope
	prefix string
}

// resolvePrefix applies docs/agent-tools.md#memory-and-skills to the optional "path" of ls and
// grep: absent, null or "" selects every binding; otherwise the text before the first "/" names one
// binding and the text after it, never grammar-checked, is a literal name prefix.
func resolvePrefix(args arguments, set bindingSet) ([]selection, *refusal) {
	if !args.present("path") {
		return selectAll(set), nil
	}
	path, ok := args.str("path")
	if !ok {
		return nil, &refusal{code: CodePathInvalid}
	}
	if path == "" {
		return selectAll(set), nil
	}
	root, prefix, _ := strings.Cut(path, "/")
	scope, bound := set.lookup(root)
	if !bound {
		return nil, pathRefusal(CodeScopeUnavailable, path)
	}
	return []selection{{scope: scope, prefix: prefix}}, nil
}

func selectAll(set bindingSet) []selection {
	out := make([]selection, len(set))
	for i, s := range set {
		out[i] = selection{scope: s}
	}
	return out
}

// Resolve applies a call's path resolution alone (docs/agent-tools.md#memory-and-skills, or
// docs/agent-tools.md#memory-and-skills for ls and grep) against the resolved bindings, without
// touching a store. The kernel uses it before dispatching a call to an overriding provider:
// memory_scope_unavailable and memory_read_only fail such a row at birth. ok is true when
// resolution passes; otherwise code is the refusal word and detail the clipped detail the result
// text would carry. A tool that is not a memory verb answers memory_unknown_verb.
func Resolve(tool string, input json.RawMessage, bindings []Scope) (code, detail string, ok bool) {
	v, known := verbs[tool]
	if !known {
		r := &refusal{code: CodeUnknownVerb, detail: tool}
		return r.code, clipDetail(r.detail, r.clip), false
	}
	set, usable := newBindingSet(bindings)
	if !usable {
		return CodeUnavailable, UnavailableDetail, false
	}
	args, parsed := decodeArguments(input)
	if !parsed {
		return CodePathInvalid, "", false
	}
	var r *refusal
	if v == verbLs || v == verbGrep {
		_, r = resolvePrefix(args, set)
	} else {
		_, r = resolvePath(v, args, set)
	}
	if r != nil {
		return r.code, clipDetail(r.detail, r.clip), false
	}
	return "", "", true
}
