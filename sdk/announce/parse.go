package announce

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"unicode/utf8"

	"github.com/nexuskernel/nexus/sdk/jsonwire"
	"github.com/nexuskernel/nexus/sdk/refusal"
)

// Top-level keys of an announcement body.
const (
	keyTools       = "tools"
	keyEnvironment = "environment"
	keyDocuments   = "documents"
)

// Keys of a tool entry and of a document, in check order.
var (
	toolKeys     = []string{"name", "effect_profile", "timeout_ms", "description", "input_schema"}
	documentKeys = []string{"name", "description"}
	bodyKeys     = []string{keyTools, keyEnvironment, keyDocuments}
)

// ParseAnnouncement decodes and validates the body of PUT /agent_api/v1/executor/announcement
// strictly, in the door's order (docs/api.md#the-executor-plane), and returns the announcement as
// it is stored (Normalize). It applies every rule of Validate and the JSON-only ones: a key given
// twice or outside an object's closed key set, and a value of the wrong JSON type, are
// invalid_announcement at that key.
//
// Order: a body over MaxBodyBytes is content_too_large; a body that is not UTF-8 or not one
// JSON object is parameter_invalid; an empty body, or tools absent or null, is
// parameter_missing. Then the
// bounds, then the entries: a repeated top-level key, the tools in order (each: not an
// object, a repeated key, then name, effect_profile, timeout_ms, description, input_schema,
// then the first unknown key), the environment, the documents (each: not an object, a
// repeated key, name, description, the first unknown key, then a repeated name), and last
// the first unknown top-level key.
//
// Decisions the documented rules leave open: unknown top-level keys are refused (a
// misspelled "document" would otherwise silently clear the documents of a whole
// replacement); JSON null is a mistyped value everywhere except tools, where it reads as
// absent as it does on every door with a required root; timeout_ms is an integer literal
// (no fraction or exponent), the form every JSON encoder writes for an integer.
func ParseAnnouncement(body []byte) (Announcement, *refusal.Refusal) {
	if len(body) > MaxBodyBytes {
		return Announcement{}, single(CodeContentTooLarge, "", fmt.Sprintf("The announcement is over %d bytes.", MaxBodyBytes))
	}
	if !utf8.Valid(body) {
		return Announcement{}, single(CodeParameterInvalid, "", "The request body is not UTF-8.")
	}
	if len(bytes.TrimSpace(body)) == 0 {
		// An empty body is an absent one (docs/api.md#conventions), and this door requires tools.
		return Announcement{}, single(CodeParameterMissing, keyTools, `The body must carry "tools".`)
	}
	top, err := decodeMembers(bytes.TrimSpace(body))
	if err != nil {
		return Announcement{}, single(CodeParameterInvalid, "", "The request body must be a JSON object.")
	}
	if raw, ok := top.Get(keyTools); !ok || isNull(raw) {
		return Announcement{}, single(CodeParameterMissing, keyTools, `The body must carry "tools".`)
	}
	if r := refusalOf(rawBounds(top)); r != nil {
		return Announcement{}, r
	}

	var ps problems
	var a Announcement
	if k, dup := top.Repeated(); dup {
		ps.add(CodeInvalidAnnouncement, k, "", "the key is given more than once.")
	}
	a.Tools = parseTools(&ps, top)
	if raw, ok := top.Get(keyEnvironment); ok {
		checkEnvironment(&ps, raw)
		a.Environment = raw
	}
	a.Documents = parseDocuments(&ps, top)
	if k, ok := unknownKey(top, bodyKeys); ok {
		ps.add(CodeInvalidAnnouncement, k, "", "an announcement has no key %q; its keys are tools, environment, documents.", k)
	}
	if r := refusalOf(ps); r != nil {
		return Announcement{}, r
	}
	return a.Normalize(), nil
}

// rawBounds lists the bound failures of docs/api.md#the-executor-plane in document order, reading
// only values of the right type: a mistyped value is the entry checks' to refuse.
func rawBounds(top objectMembers) []refusal.Problem {
	var ps problems
	if raw, ok := top.Get(keyTools); ok {
		if items, err := decodeArray(raw); err == nil {
			if len(items) > MaxTools {
				ps.add(CodeValidationFailed, keyTools, "", "%d tools is more than the %d an announcement may hold.", len(items), MaxTools)
			}
			for i, item := range items {
				members, err := decodeMembers(item)
				if err != nil {
					continue
				}
				if d, ok := members.Get("description"); ok {
					if s, ok := jsonwire.DecodeString(d); ok {
						descriptionBound(&ps, i, len(s))
					}
				}
				if s, ok := members.Get("input_schema"); ok {
					rawBound(&ps, toolPath(i, "input_schema"), s, MaxInputSchemaBytes)
				}
			}
		}
	}
	if raw, ok := top.Get(keyEnvironment); ok {
		rawBound(&ps, keyEnvironment, raw, MaxEnvironmentBytes)
	}
	if raw, ok := top.Get(keyDocuments); ok {
		if items, err := decodeArray(raw); err == nil && len(items) > MaxDocuments {
			ps.add(CodeValidationFailed, keyDocuments, "", "%d documents is more than the %d an announcement may hold.", len(items), MaxDocuments)
		}
	}
	return ps
}

func parseTools(ps *problems, top objectMembers) []Tool {
	raw, _ := top.Get(keyTools)
	items, err := decodeArray(raw)
	if err != nil {
		ps.add(CodeInvalidAnnouncement, keyTools, "", "tools is a JSON array.")
		return nil
	}
	tools := make([]Tool, 0, len(items))
	names := map[string]bool{}
	for i, item := range items {
		if t, ok := parseTool(ps, i, item, names); ok {
			tools = append(tools, t)
		}
	}
	return tools
}

// parseTool checks one entry; ok is false when the entry is not an object or repeats a key,
// the shape failures after which none of its fields is read.
func parseTool(ps *problems, i int, raw json.RawMessage, names map[string]bool) (Tool, bool) {
	members, err := decodeMembers(raw)
	if err != nil {
		ps.add(CodeInvalidAnnouncement, toolPath(i, ""), "", "a tool entry is a JSON object.")
		return Tool{}, false
	}
	if k, dup := members.Repeated(); dup {
		ps.add(CodeInvalidAnnouncement, toolPath(i, k), "", "the key is given more than once.")
		return Tool{}, false
	}
	var t Tool

	if v, ok := members.Get("name"); !ok {
		ps.add(CodeInvalidAnnouncement, toolPath(i, "name"), "", "a tool needs a name.")
	} else if s, ok := jsonwire.DecodeString(v); !ok {
		ps.add(CodeInvalidAnnouncement, toolPath(i, "name"), "", "the name is a string.")
	} else {
		t.Name = s
		checkToolName(ps, i, s, names)
	}

	v, _ := members.Get("effect_profile")
	if p, err := ParseEffectProfile(v); err != nil {
		profileProblem(ps, i, err)
	} else {
		t.EffectProfile = Announced(p)
	}

	if v, ok := members.Get("timeout_ms"); ok {
		switch n, kind := jsonInteger(v); kind {
		case notInteger:
			ps.add(CodeInvalidAnnouncement, toolPath(i, "timeout_ms"), "", "timeout_ms is an integer number of milliseconds.")
		case integerOutOfRange:
			ps.add(CodeInvalidAnnouncement, toolPath(i, "timeout_ms"), "", "timeout_ms %s is outside %d..%d.", bytes.TrimSpace(v), MinTimeoutMS, MaxTimeoutMS)
		default:
			t.TimeoutMS = &n
			checkTimeout(ps, i, &n)
		}
	}

	if v, ok := members.Get("description"); ok {
		if s, ok := jsonwire.DecodeString(v); !ok {
			ps.add(CodeInvalidAnnouncement, toolPath(i, "description"), "", "the description is a string.")
		} else {
			t.Description = &s
			checkDescription(ps, i, &s)
		}
	}

	if v, ok := members.Get("input_schema"); ok {
		t.InputSchema = v
		checkInputSchema(ps, i, v)
	}

	if k, ok := unknownKey(members, toolKeys); ok {
		ps.add(CodeInvalidAnnouncement, toolPath(i, k), "", "a tool entry has no key %q; its keys are name, effect_profile, timeout_ms, description, input_schema.", k)
	}
	return t, true
}

func parseDocuments(ps *problems, top objectMembers) []Document {
	raw, ok := top.Get(keyDocuments)
	if !ok {
		return nil
	}
	items, err := decodeArray(raw)
	if err != nil {
		ps.add(CodeInvalidAnnouncement, keyDocuments, "", "documents is a JSON array.")
		return nil
	}
	docs := make([]Document, 0, len(items))
	seen := map[string]bool{}
	for i, item := range items {
		members, err := decodeMembers(item)
		if err != nil {
			ps.add(CodeInvalidAnnouncement, documentPath(i, ""), "", "a document is a JSON object.")
			continue
		}
		if k, dup := members.Repeated(); dup {
			ps.add(CodeInvalidAnnouncement, documentPath(i, k), "", "the key is given more than once.")
			continue
		}
		var d Document
		typed := true
		for _, key := range documentKeys {
			v, ok := members.Get(key)
			if !ok {
				continue // an absent field reads as empty, which the document rules refuse
			}
			s, ok := jsonwire.DecodeString(v)
			if !ok {
				ps.add(CodeInvalidAnnouncement, documentPath(i, key), "", "the %s is a string.", key)
				typed = false
				continue
			}
			if key == "name" {
				d.Name = s
			} else {
				d.Description = s
			}
		}
		if typed {
			checkDocument(ps, i, d, seen)
		}
		if k, ok := unknownKey(members, documentKeys); ok {
			ps.add(CodeInvalidAnnouncement, documentPath(i, k), "", "a document has no key %q; its keys are name, description.", k)
		}
		docs = append(docs, d)
	}
	return docs
}

// unknownKey returns the first key outside known, in document order.
func unknownKey(members objectMembers, known []string) (string, bool) {
	for _, m := range members {
		found := false
		for _, k := range known {
			if m.Key == k {
				found = true
				break
			}
		}
		if !found {
			return m.Key, true
		}
	}
	return "", false
}

func isNull(raw json.RawMessage) bool { return bytes.Equal(bytes.TrimSpace(raw), []byte("null")) }

// decodeArray splits a JSON array into its elements; anything else is an error.
func decodeArray(raw json.RawMessage) ([]json.RawMessage, error) {
	items, err := jsonwire.SplitArray(raw)
	if err != nil {
		return nil, errNotObject
	}
	return items, nil
}

type integerKind int

const (
	isInteger integerKind = iota
	notInteger
	integerOutOfRange // an integer literal beyond int64
)

// jsonInteger decodes an integer literal: a JSON number without fraction or exponent.
func jsonInteger(raw json.RawMessage) (int64, integerKind) {
	lit := bytes.TrimSpace(raw)
	if len(lit) == 0 || !jsonwire.ValidNumber(lit) || bytes.ContainsAny(lit, ".eE") {
		return 0, notInteger
	}
	n, err := strconv.ParseInt(string(lit), 10, 64)
	if err != nil {
		return 0, integerOutOfRange
	}
	return n, isInteger
}
