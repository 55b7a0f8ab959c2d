package registry

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"

	"github.com/nexuskernel/nexus/sdk/announce"
)

// MacroPattern is the grammar of a tool-name macro: {{ immediately followed by a word
// immediately followed by }}, no spaces. The word is a wire name, so a macro can name any
// kernel tool in the spelling the reader of the text has declared.
const MacroPattern = `\{\{([a-z][a-z0-9_]*)\}\}`

var macro = regexp.MustCompile(MacroPattern)

// PlainSpelling spells every tool as its kernel wire name: the catalog's render.
func PlainSpelling(wire string) string { return wire }

// isLiveWire reports whether word is the wire name of a registered kernel tool.
func isLiveWire(word string) bool {
	k, ok := announce.LookupKernelName(word)
	return ok && k.Wire == word
}

// MacroWords returns the word of every {{word}} in text that matches MacroPattern, in order
// and with repeats, whether or not the word is a live wire name.
func MacroWords(text string) []string {
	var words []string
	for _, m := range macro.FindAllStringSubmatch(text, -1) {
		words = append(words, m[1])
	}
	return words
}

// Render replaces every macro whose word is a live wire name with spell(word) and leaves all
// other bytes unchanged. A {{word}} that names no kernel tool is ordinary text and stays as
// written (kernel templates never contain one; a client's alias text may), so spell is only
// ever asked about live wire names. It is the one render function: the plain catalog and an
// aliased declaration both go through it, so they cannot drift apart.
func Render(text string, spell func(wire string) string) string {
	locs := macro.FindAllStringSubmatchIndex(text, -1)
	if len(locs) == 0 {
		return text
	}
	var b strings.Builder
	last := 0
	for _, loc := range locs {
		word := text[loc[2]:loc[3]]
		if !isLiveWire(word) {
			continue
		}
		b.WriteString(text[last:loc[0]])
		b.WriteString(spell(word))
		last = loc[1]
	}
	b.WriteString(text[last:])
	return b.String()
}

// RenderSchema renders the description string of each top-level property
// (properties.<p>.description), the only place a schema may carry macros, and keeps every
// other byte as given, key order included. A description the render leaves unchanged keeps
// its original bytes. The walk works on the text, never on a map, since Go sorts map keys.
func RenderSchema(schema json.RawMessage, spell func(wire string) string) (json.RawMessage, error) {
	spans, err := propertyDescriptions(schema)
	if err != nil {
		return nil, err
	}
	out := make([]byte, 0, len(schema))
	last := 0
	for _, s := range spans {
		var text string
		if err := json.Unmarshal(schema[s.start:s.end], &text); err != nil {
			return nil, fmt.Errorf("render schema: property description: %w", err)
		}
		rendered := Render(text, spell)
		if rendered == text {
			continue
		}
		enc, err := encodeCompact(rendered)
		if err != nil {
			return nil, err
		}
		out = append(out, schema[last:s.start]...)
		out = append(out, enc...)
		last = s.end
	}
	out = append(out, schema[last:]...)
	return out, nil
}

// span locates one JSON value inside a document: data[start:end].
type span struct {
	key        string
	start, end int
}

// propertyDescriptions returns the spans of the string values at properties.<p>.description,
// in document order. A schema that is not a JSON object is an error; a properties value or a
// property that is not an object, or a description that is not a string, has nothing to render.
func propertyDescriptions(schema []byte) ([]span, error) {
	if !json.Valid(schema) {
		return nil, fmt.Errorf("render schema: not valid JSON")
	}
	top, err := objectSpans(schema, 0, len(schema))
	if err != nil {
		return nil, fmt.Errorf("render schema: %w", err)
	}
	var out []span
	for _, t := range top {
		if t.key != "properties" || schema[t.start] != '{' {
			continue
		}
		props, err := objectSpans(schema, t.start, t.end)
		if err != nil {
			return nil, err
		}
		for _, p := range props {
			if schema[p.start] != '{' {
				continue
			}
			keys, err := objectSpans(schema, p.start, p.end)
			if err != nil {
				return nil, err
			}
			for _, k := range keys {
				if k.key == "description" && schema[k.start] == '"' {
					out = append(out, k)
				}
			}
		}
	}
	return out, nil
}

// objectSpans lists the members of the JSON object at data[start:end] in document order, each
// with the absolute span of its value. The input must be valid JSON.
func objectSpans(data []byte, start, end int) ([]span, error) {
	dec := json.NewDecoder(bytes.NewReader(data[start:end]))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil, fmt.Errorf("not a JSON object at byte %d", start)
	}
	var out []span
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, err
		}
		key, _ := tok.(string)
		// The decoder stands right after the key; the value begins after the colon.
		valueStart := start + int(dec.InputOffset())
		for data[valueStart] == ':' || isJSONSpace(data[valueStart]) {
			valueStart++
		}
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			return nil, err
		}
		out = append(out, span{key: key, start: valueStart, end: start + int(dec.InputOffset())})
	}
	return out, nil
}

func isJSONSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

// encodeCompact writes v as compact JSON with <, > and & kept literal, as the catalog does.
func encodeCompact(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}
