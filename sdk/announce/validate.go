package announce

import (
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"unicode/utf8"

	"github.com/nexuskernel/nexus/sdk/jsonwire"
	"github.com/nexuskernel/nexus/sdk/refusal"
)

const (
	// ToolNamePattern is the grammar of an announced tool name: no dot, so no announced name
	// can be a canonical kernel spelling, and no space or punctuation a provider would refuse.
	// Its length is bounded by MaxToolNameLength.
	ToolNamePattern = `^[A-Za-z0-9_-]+$`
	// DocumentNamePattern is the grammar of a document name: lowercase words joined by single
	// hyphens, the skill grammar. Its length is bounded by MaxDocumentNameLength.
	DocumentNamePattern = `^[a-z0-9]+(-[a-z0-9]+)*$`
)

var (
	toolName     = regexp.MustCompile(ToolNamePattern)
	documentName = regexp.MustCompile(DocumentNamePattern)
)

// IsToolName reports whether s is a well-formed announced tool name.
func IsToolName(s string) bool { return len(s) <= MaxToolNameLength && toolName.MatchString(s) }

// IsDocumentName reports whether s is a well-formed document name.
func IsDocumentName(s string) bool {
	return len(s) <= MaxDocumentNameLength && documentName.MatchString(s)
}

// Validate applies the announcement door's rules (docs/api.md#the-executor-plane) to an
// announcement, whole: it returns nil when every rule holds, else a refusal naming the first
// failure and listing all of them. Nothing is partially accepted.
//
// Checks run in the door's order. First the bounds: more than MaxTools tools or
// MaxDocuments documents, a description over MaxDescriptionBytes, an input schema or the
// environment over their canonical-JSON bounds; any of them is validation_failed and ends the
// check, so an oversized list is never walked entry by entry. Then the entries in document
// order, tools first, then environment, then documents; for each tool its name (reserved
// namespace before grammar, then duplicates), effect_profile, timeout_ms, description,
// input_schema. At most one failure is reported per field.
//
// Decisions the documented rules leave open, taken so that nothing accepted here can fail
// in the store: a description or document text holding U+0000 or bytes that are not UTF-8 is
// invalid_announcement; raw JSON (environment, input_schema) that repeats a key anywhere, or
// holds a U+0000 or unpaired surrogate escape, is invalid_announcement, because the store and
// every later reader would silently keep one of the repeated values. JSON null is not an
// object, so an environment or input_schema of null is refused as mistyped; omit the field.
func Validate(a Announcement) *refusal.Refusal {
	if r := refusalOf(typedBounds(a)); r != nil {
		return r
	}
	var ps problems
	names := map[string]bool{}
	for i, t := range a.Tools {
		checkToolName(&ps, i, t.Name, names)
		if t.EffectProfile == nil {
			profileProblem(&ps, i, &ProfileError{Problem: ProblemAbsent})
		} else if _, err := t.EffectProfile.Profile(); err != nil {
			profileProblem(&ps, i, err)
		}
		checkTimeout(&ps, i, t.TimeoutMS)
		checkDescription(&ps, i, t.Description)
		checkInputSchema(&ps, i, t.InputSchema)
	}
	checkEnvironment(&ps, a.Environment)
	docs := map[string]bool{}
	for i, d := range a.Documents {
		checkDocument(&ps, i, d, docs)
	}
	return refusalOf(ps)
}

// typedBounds lists the bound failures of docs/api.md#the-executor-plane in document order.
func typedBounds(a Announcement) []refusal.Problem {
	var ps problems
	if len(a.Tools) > MaxTools {
		ps.add(CodeValidationFailed, "tools", "", "%d tools is more than the %d an announcement may hold.", len(a.Tools), MaxTools)
	}
	for i, t := range a.Tools {
		if t.Description != nil {
			descriptionBound(&ps, i, len(*t.Description))
		}
		if len(t.InputSchema) > 0 {
			rawBound(&ps, toolPath(i, "input_schema"), t.InputSchema, MaxInputSchemaBytes)
		}
	}
	if len(a.Environment) > 0 {
		rawBound(&ps, "environment", a.Environment, MaxEnvironmentBytes)
	}
	if len(a.Documents) > MaxDocuments {
		ps.add(CodeValidationFailed, "documents", "", "%d documents is more than the %d an announcement may hold.", len(a.Documents), MaxDocuments)
	}
	return ps
}

func descriptionBound(ps *problems, i, n int) {
	if n > MaxDescriptionBytes {
		ps.add(CodeValidationFailed, toolPath(i, "description"), "", "the description is %d bytes, over the bound of %d.", n, MaxDescriptionBytes)
	}
}

// rawBound measures raw on its canonical JSON. Raw JSON that does not parse is left to the
// entry checks, which refuse it with a better word.
func rawBound(ps *problems, path string, raw []byte, limit int) {
	canon, _, err := jsonwire.Canonical(raw)
	if err != nil {
		return
	}
	if len(canon) > limit {
		ps.add(CodeValidationFailed, path, "", "the value is %d bytes of canonical JSON, over the bound of %d.", len(canon), limit)
	}
}

func toolPath(i int, field string) string {
	if field == "" {
		return fmt.Sprintf("tools[%d]", i)
	}
	return fmt.Sprintf("tools[%d].%s", i, field)
}

func documentPath(i int, field string) string {
	if field == "" {
		return fmt.Sprintf("documents[%d]", i)
	}
	return fmt.Sprintf("documents[%d].%s", i, field)
}

// checkToolName applies the name rules in order: a reserved kernel name in either spelling,
// then the grammar, then uniqueness among the well-formed names before it.
func checkToolName(ps *problems, i int, name string, seen map[string]bool) {
	path := toolPath(i, "name")
	if InReservedNamespace(name) {
		k, _ := LookupKernelName(name)
		ns, _ := NamespaceOf(k.Canonical)
		ps.add(CodeReservedNamespace, path, name, "%s is a kernel tool in the reserved namespace %s.", name, ns)
		return
	}
	switch {
	case name == "":
		ps.add(CodeInvalidAnnouncement, path, "", "a tool needs a name.")
		return
	case !IsToolName(name):
		ps.add(CodeInvalidAnnouncement, path, printable(name), "%q is not a tool name: 1..%d characters of A-Z, a-z, 0-9, _ and -.", name, MaxToolNameLength)
		return
	case seen[name]:
		ps.add(CodeInvalidAnnouncement, path, name, "%s is announced more than once.", name)
		return
	}
	seen[name] = true
}

// printable returns name for a refusal's name key when it is short, valid text; a refusal
// never echoes an arbitrary blob.
func printable(name string) string {
	if len(name) > MaxToolNameLength || !utf8.ValidString(name) || strings.IndexByte(name, 0) >= 0 {
		return ""
	}
	return name
}

// profileProblem reports an effect-profile failure at the key it names.
func profileProblem(ps *problems, i int, err error) {
	path := toolPath(i, "effect_profile")
	var pe *ProfileError
	if errors.As(err, &pe) && pe.Key != "" {
		path += "." + pe.Key
	}
	ps.add(CodeInvalidAnnouncement, path, "", "%s.", err.Error())
}

func checkTimeout(ps *problems, i int, ms *int64) {
	if ms != nil && (*ms < MinTimeoutMS || *ms > MaxTimeoutMS) {
		ps.add(CodeInvalidAnnouncement, toolPath(i, "timeout_ms"), "", "timeout_ms %d is outside %d..%d.", *ms, MinTimeoutMS, MaxTimeoutMS)
	}
}

func checkDescription(ps *problems, i int, d *string) {
	if d == nil {
		return
	}
	path := toolPath(i, "description")
	switch {
	case *d == "":
		ps.add(CodeInvalidAnnouncement, path, "", "a description, when given, is not empty.")
	case !storableText(*d):
		ps.add(CodeInvalidAnnouncement, path, "", "the description holds U+0000 or bytes that are not UTF-8.")
	}
}

// checkInputSchema requires a JSON object whose "type" is exactly "object". The schema is not
// compiled: the door stores it verbatim and never validates calls against it, and compiling
// would pull a schema library into every plugin that imports this package.
func checkInputSchema(ps *problems, i int, raw json.RawMessage) {
	if len(raw) == 0 {
		return
	}
	path := toolPath(i, "input_schema")
	if msg := rawObjectProblem(raw); msg != "" {
		ps.add(CodeInvalidAnnouncement, path, "", "the input schema %s.", msg)
		return
	}
	members, _ := decodeMembers(raw)
	typ, ok := members.Get("type")
	var word string
	if !ok || json.Unmarshal(typ, &word) != nil || word != "object" {
		ps.add(CodeInvalidAnnouncement, path+".type", "", `an input schema's "type" is "object".`)
	}
}

func checkEnvironment(ps *problems, raw json.RawMessage) {
	if len(raw) == 0 {
		return
	}
	if msg := rawObjectProblem(raw); msg != "" {
		ps.add(CodeInvalidAnnouncement, "environment", "", "the environment %s.", msg)
	}
}

// rawObjectProblem says what keeps raw from being a storable JSON object, or "".
func rawObjectProblem(raw []byte) string {
	facts, err := jsonwire.Scan(raw)
	switch {
	case err != nil:
		return "is not valid JSON"
	case firstNonSpace(raw) != '{':
		return "is not a JSON object"
	case facts.DuplicateKey:
		return "repeats a key"
	case facts.Unstorable:
		return "holds U+0000, an unpaired surrogate or bytes that are not UTF-8"
	}
	return ""
}

func firstNonSpace(raw []byte) byte {
	for _, c := range raw {
		switch c {
		case ' ', '\t', '\n', '\r':
			continue
		}
		return c
	}
	return 0
}

// checkDocument applies a document's rules: name grammar, description, then uniqueness, which
// is reported at the entry itself.
func checkDocument(ps *problems, i int, d Document, seen map[string]bool) {
	ok := true
	if !IsDocumentName(d.Name) {
		ok = false
		if d.Name == "" {
			ps.add(CodeInvalidAnnouncement, documentPath(i, "name"), "", "a document needs a name.")
		} else {
			ps.add(CodeInvalidAnnouncement, documentPath(i, "name"), printable(d.Name), "%q is not a document name: lowercase letters and digits in hyphen-separated words, at most %d characters.", d.Name, MaxDocumentNameLength)
		}
	}
	checkDocumentDescription(ps, i, d.Description)
	if ok {
		if seen[d.Name] {
			ps.add(CodeInvalidAnnouncement, documentPath(i, ""), d.Name, "the document %s is announced more than once.", d.Name)
		}
		seen[d.Name] = true
	}
}

func checkDocumentDescription(ps *problems, i int, d string) {
	path := documentPath(i, "description")
	switch {
	case d == "":
		ps.add(CodeInvalidAnnouncement, path, "", "a document needs a description.")
	case len(d) > MaxDocumentDescriptionBytes:
		ps.add(CodeInvalidAnnouncement, path, "", "the description is %d bytes, over the bound of %d.", len(d), MaxDocumentDescriptionBytes)
	case !storableText(d):
		ps.add(CodeInvalidAnnouncement, path, "", "the description holds U+0000 or bytes that are not UTF-8.")
	}
}

// storableText reports whether the store can keep s as text.
func storableText(s string) bool {
	return utf8.ValidString(s) && strings.IndexByte(s, 0) < 0
}
