package envelope

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/nexuskernel/nexus/core/refusal"
	"github.com/nexuskernel/nexus/sdk/jsonwire"
)

// The two block kinds of the content grammar (docs/api.md#the-result-envelope).
const (
	TypeText         = "text"
	TypeResourceLink = "resource_link"
)

// Block is one content block, text or resource_link, as stored. A link's optional fields are
// pointers so that absence survives; Annotations and Meta are stored verbatim (compacted) and
// never interpreted.
type Block struct {
	Type string
	// Text is a text block's text; any string, empty included.
	Text string
	// URI and Name are a link's required fields; the rest are optional and never trusted:
	// the kernel reads an upload's detected type and size, never these.
	URI         string
	Name        string
	MimeType    *string
	Size        *int64
	Title       *string
	Description *string
	Annotations json.RawMessage
	Meta        json.RawMessage
}

// TextBlock returns a text block.
func TextBlock(text string) Block { return Block{Type: TypeText, Text: text} }

// IsLink reports whether b is a resource_link.
func (b Block) IsLink() bool { return b.Type == TypeResourceLink }

// UploadID is the public id a link names, or "" for a text block.
func (b Block) UploadID() string {
	if !b.IsLink() {
		return ""
	}
	return strings.TrimPrefix(b.URI, UploadURIPrefix)
}

// MarshalJSON writes the stored form (appendStored). Encode with HTML escaping off to keep
// the stored bytes; encoding/json's default escapes <, > and & again.
func (b Block) MarshalJSON() ([]byte, error) { return b.appendStored(nil), nil }

// appendStored writes the block in its stored key order — type first, then the fields in the order
// of docs/api.md#the-result-envelope — with minimal string escapes, so that the stored bytes depend
// on the values alone, never on the sender's key order or escapes.
func (b Block) appendStored(out []byte) []byte {
	out = append(out, `{"type":`...)
	out = jsonwire.AppendString(out, b.Type)
	if b.IsLink() {
		out = append(out, `,"uri":`...)
		out = jsonwire.AppendString(out, b.URI)
		out = append(out, `,"name":`...)
		out = jsonwire.AppendString(out, b.Name)
		out = appendOptionalString(out, "mimeType", b.MimeType)
		if b.Size != nil {
			out = append(out, `,"size":`...)
			out = strconv.AppendInt(out, *b.Size, 10)
		}
		out = appendOptionalString(out, "title", b.Title)
		out = appendOptionalString(out, "description", b.Description)
	} else {
		out = append(out, `,"text":`...)
		out = jsonwire.AppendString(out, b.Text)
	}
	if len(b.Annotations) > 0 {
		out = append(out, `,"annotations":`...)
		out = append(out, compact(b.Annotations)...)
	}
	if len(b.Meta) > 0 {
		out = append(out, `,"_meta":`...)
		out = append(out, compact(b.Meta)...)
	}
	return append(out, '}')
}

func appendOptionalString(out []byte, key string, v *string) []byte {
	if v == nil {
		return out
	}
	out = append(out, ',', '"')
	out = append(out, key...)
	out = append(out, '"', ':')
	return jsonwire.AppendString(out, *v)
}

// canonical is the block's canonical JSON (docs/api.md#conventions): keys in byte order, nested
// values canonical too. A non-media link contributes exactly these bytes to the text projection.
func (b Block) canonical() []byte {
	// The stored form has every key once; re-encoding it canonically sorts the keys and
	// canonicalizes annotations and _meta.
	out, _, err := jsonwire.Canonical(b.appendStored(nil))
	if err != nil {
		// Unreachable for a block this package built; fall back to the stored form.
		return b.appendStored(nil)
	}
	return out
}

// canonicalLen is len(b.canonical()), computed without encoding the common case, a text
// block with nothing beside its text, whose text may be a megabyte long.
func (b Block) canonicalLen() int {
	if !b.IsLink() && b.Annotations == nil && b.Meta == nil {
		return len(`{"text":`) + jsonwire.QuotedLen(b.Text) + len(`,"type":`) + jsonwire.QuotedLen(b.Type) + len(`}`)
	}
	return len(b.canonical())
}

// appendContent writes a block list in its stored form.
func appendContent(out []byte, blocks []Block) []byte {
	out = append(out, '[')
	for i, b := range blocks {
		if i > 0 {
			out = append(out, ',')
		}
		out = b.appendStored(out)
	}
	return append(out, ']')
}

// Keys of each block kind, in check order.
var (
	textKeys = []string{"type", "text", "annotations", "_meta"}
	linkKeys = []string{"type", "uri", "name", "mimeType", "size", "title", "description", "annotations", "_meta"}
)

// parseBlock checks one block against the grammar (docs/api.md#the-result-envelope): a shape
// outside it is invalid_content at the offending field, a well-formed block of another type is
// unsupported_content_kind. Within a block the checks run: an object, no repeated key, a string
// type, then the kind's fields in the order of linkKeys or textKeys, then the first unknown key in
// document order.
func parseBlock(i int, raw json.RawMessage) (Block, *refusal.Error) {
	invalid := func(field, msg string) (Block, *refusal.Error) { return Block{}, invalidBlock(i, field, msg) }
	members, err := jsonwire.SplitObject(raw)
	if err != nil {
		return invalid("", "a content block is a JSON object.")
	}
	if k, dup := members.Repeated(); dup {
		return invalid(k, "the key is given more than once.")
	}
	typ, ok := members.Get("type")
	if !ok {
		return invalid("type", "a content block needs a type.")
	}
	kind, ok := jsonwire.DecodeString(typ)
	if !ok || kind == "" {
		return invalid("type", "a content block's type is a non-empty string.")
	}

	var b Block
	var keys []string
	switch kind {
	case TypeText:
		keys = textKeys
		v, ok := members.Get("text")
		if !ok {
			return invalid("text", "a text block needs a text.")
		}
		if b.Text, ok = jsonwire.DecodeString(v); !ok {
			return invalid("text", "a text block's text is a string.")
		}
	case TypeResourceLink:
		keys = linkKeys
		v, ok := members.Get("uri")
		if !ok {
			return invalid("uri", "a resource_link needs a uri.")
		}
		if b.URI, ok = jsonwire.DecodeString(v); !ok || !isUploadURI(b.URI) {
			return invalid("uri", "a resource_link's uri is "+UploadURIPrefix+" followed by a lowercase UUID.")
		}
		v, ok = members.Get("name")
		if !ok {
			return invalid("name", "a resource_link needs a name.")
		}
		if b.Name, ok = jsonwire.DecodeString(v); !ok || b.Name == "" {
			return invalid("name", "a resource_link's name is a non-empty string.")
		}
		for _, f := range []struct {
			key string
			dst **string
		}{{"mimeType", &b.MimeType}, {"size", nil}, {"title", &b.Title}, {"description", &b.Description}} {
			v, ok := members.Get(f.key)
			if !ok {
				continue
			}
			if f.key == "size" {
				n, ok := nonNegativeInteger(v)
				if !ok {
					return invalid("size", "a resource_link's size is an integer of at least 0.")
				}
				b.Size = &n
				continue
			}
			s, ok := jsonwire.DecodeString(v)
			if !ok {
				return invalid(f.key, "a resource_link's "+f.key+" is a string.")
			}
			*f.dst = &s
		}
	default:
		return Block{}, unsupportedBlock(i, kind)
	}
	b.Type = kind

	for _, f := range []struct {
		key string
		dst *json.RawMessage
	}{{"annotations", &b.Annotations}, {"_meta", &b.Meta}} {
		v, ok := members.Get(f.key)
		if !ok {
			continue
		}
		if firstNonSpace(v) != '{' {
			return invalid(f.key, f.key+" is a JSON object.")
		}
		*f.dst = compact(v)
	}
	for _, m := range members {
		if !contains(keys, m.Key) {
			return invalid(m.Key, fmt.Sprintf("a %s block has no key %q.", kind, m.Key))
		}
	}
	return b, nil
}

// blockPath is the path of block i's field, or of the block itself for "".
func blockPath(i int, field string) string {
	if field == "" {
		return fmt.Sprintf("content[%d]", i)
	}
	return fmt.Sprintf("content[%d].%s", i, field)
}

func invalidBlock(i int, field, msg string) *refusal.Error {
	p := blockPath(i, field)
	return refuse(CodeInvalidContent, p, p+": "+msg)
}

func unsupportedBlock(i int, kind string) *refusal.Error {
	p := blockPath(i, "type")
	return refuse(CodeUnsupportedContentKind, p, fmt.Sprintf("%s: %q blocks are not supported; content holds text and resource_link blocks.", p, kind))
}

// checkBlock applies the block grammar to a typed block, in parseBlock's order: what a typed
// value can still break is its kind, a link's uri and name, a size below zero, and annotations
// or _meta that are not one JSON object. An absent field of a typed block is its zero value, so
// an empty uri or name reads as absent.
func checkBlock(i int, b Block) *refusal.Error {
	switch b.Type {
	case "":
		return invalidBlock(i, "type", "a content block needs a type.")
	case TypeText:
	case TypeResourceLink:
		switch {
		case b.URI == "":
			return invalidBlock(i, "uri", "a resource_link needs a uri.")
		case !isUploadURI(b.URI):
			return invalidBlock(i, "uri", "a resource_link's uri is "+UploadURIPrefix+" followed by a lowercase UUID.")
		case b.Name == "":
			return invalidBlock(i, "name", "a resource_link needs a name.")
		case b.Size != nil && *b.Size < 0:
			return invalidBlock(i, "size", "a resource_link's size is an integer of at least 0.")
		}
	default:
		return unsupportedBlock(i, b.Type)
	}
	for _, f := range []struct {
		key string
		raw json.RawMessage
	}{{"annotations", b.Annotations}, {"_meta", b.Meta}} {
		if f.raw == nil {
			continue
		}
		if _, err := jsonwire.SplitObject(f.raw); err != nil {
			return invalidBlock(i, f.key, f.key+" is a JSON object.")
		}
	}
	return nil
}

// storable reports whether the store keeps a typed block as it is (check 11).
func (b Block) storable() bool {
	for _, s := range []string{b.Type, b.Text, b.URI, b.Name} {
		if !storableText(s) {
			return false
		}
	}
	for _, s := range []*string{b.MimeType, b.Title, b.Description} {
		if s != nil && !storableText(*s) {
			return false
		}
	}
	return (b.Annotations == nil || storable(b.Annotations)) && (b.Meta == nil || storable(b.Meta))
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// isUploadURI reports whether s is UploadURIPrefix followed by a lowercase UUID (8-4-4-4-12
// hexadecimal digits). The version is not checked: the store decides whether the id exists.
func isUploadURI(s string) bool {
	id, ok := strings.CutPrefix(s, UploadURIPrefix)
	return ok && IsUploadID(id)
}

// IsUploadID reports whether s is a lowercase UUID in its 36-character form.
func IsUploadID(s string) bool {
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
			if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
				return false
			}
		}
	}
	return true
}

// nonNegativeInteger decodes a size: an integer literal (no fraction, exponent or sign) that
// fits an int64. Sizes are advisory, so a stricter form costs a runner nothing and keeps the
// stored value exact.
func nonNegativeInteger(raw json.RawMessage) (int64, bool) { return jsonwire.NonNegativeInteger(raw) }
