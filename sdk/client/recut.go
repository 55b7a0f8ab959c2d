package client

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"unicode/utf8"
)

// Recut is one anchored edit of a served kernel description template. A pack stores it instead
// of a copy of the kernel's prose, so a paragraph the kernel re-cuts fails the pack loudly at
// its next declaration instead of drifting.
type Recut struct {
	Anchor      string `json:"anchor"`
	Replacement string `json:"replacement"`
}

// Templates maps a kernel canonical name to its served template.
type Templates map[string]string

// CatalogTool is the SDK's plain decoding of one catalog entry (canonical_name, name,
// effect_profile, definition, template).
type CatalogTool = CatalogEntry

// TemplatesFrom indexes the decoded catalog (GET /agent_api/v1/tools) by canonical_name.
func TemplatesFrom(tools []CatalogTool) Templates {
	t := make(Templates, len(tools))
	for _, tool := range tools {
		t[tool.CanonicalName] = tool.Template
	}
	return t
}

// AliasParam is one entry of an alias's params map.
type AliasParam struct {
	MapsTo      string `json:"maps_to"`
	Invert      bool   `json:"invert,omitempty"`
	Description string `json:"description,omitempty"`
}

// AliasSpec is a pack's alias. At most one of Description and Recut is set; with neither, the
// kernel's own text is used. Its JSON form is a pack file's alias (docs/agent-tools.md#adaptation-packs).
type AliasSpec struct {
	Name         string                `json:"name"`
	Canonical    string                `json:"canonical"` // canonical spelling, e.g. "nexus.graph.delegate_task"
	Params       map[string]AliasParam `json:"params,omitempty"`
	Omit         []string              `json:"omit,omitempty"`
	Description  string                `json:"description,omitempty"`
	Recut        *Recut                `json:"recut,omitempty"`
	DeferLoading *bool                 `json:"defer_loading,omitempty"`
}

// ErrInvalidAliasSpec is wrapped by every error of an alias spec that is wrong in itself (as
// opposed to one whose recut no longer fits the served template, which is *AnchorMoved).
var ErrInvalidAliasSpec = errors.New("sdk: invalid alias spec")

// AnchorMovedReason says why a recut no longer fits.
type AnchorMovedReason string

const (
	TemplateMissing AnchorMovedReason = "template_missing"  // no template served for the canonical
	AnchorMissing   AnchorMovedReason = "anchor_missing"    // the anchor does not occur
	AnchorNotUnique AnchorMovedReason = "anchor_not_unique" // the anchor occurs more than once
)

// maxAnchorHead bounds the anchor text an AnchorMoved quotes: enough to find the place in the
// template, short enough for a log line.
const maxAnchorHead = 80

// AnchorMoved reports that a recut no longer fits the served template. A client that gets it
// must not declare a configuration without the entry: it keeps its previous declaration and
// reports the error. There is never a silent fallback to the kernel's text.
type AnchorMoved struct {
	Alias       string // set by Entry; empty from ApplyRecut
	Canonical   string // set by Entry; empty from ApplyRecut
	Reason      AnchorMovedReason
	Occurrences int    // 0 for anchor_missing, >= 2 for anchor_not_unique
	AnchorHead  string // the anchor's first line, trimmed, at most 80 characters
}

func (e *AnchorMoved) Error() string {
	prefix := "sdk: "
	if e.Alias != "" {
		prefix += fmt.Sprintf("alias %q: ", e.Alias)
	}
	of := "the template"
	if e.Canonical != "" {
		of += " of " + e.Canonical
	}
	switch e.Reason {
	case TemplateMissing:
		return prefix + "no template served for " + e.Canonical + "; list the kernel catalog first"
	case AnchorNotUnique:
		return fmt.Sprintf("%srecut anchor occurs %d times in %s; lengthen the anchor (anchor begins %q)", prefix, e.Occurrences, of, e.AnchorHead)
	default:
		return fmt.Sprintf("%srecut anchor not found in %s; re-cut the entry (anchor begins %q)", prefix, of, e.AnchorHead)
	}
}

// ApplyRecut returns template with the single occurrence of r.Anchor replaced by
// r.Replacement, literally, or an *AnchorMoved error when the anchor occurs zero or several
// times (overlapping occurrences count). An empty anchor is ErrInvalidAliasSpec.
func ApplyRecut(template string, r Recut) (string, error) {
	if r.Anchor == "" {
		return "", fmt.Errorf("%w: the recut anchor is empty", ErrInvalidAliasSpec)
	}
	first := strings.Index(template, r.Anchor)
	if first < 0 {
		return "", &AnchorMoved{Reason: AnchorMissing, AnchorHead: anchorHead(r.Anchor)}
	}
	if n := occurrences(template, r.Anchor); n > 1 {
		return "", &AnchorMoved{Reason: AnchorNotUnique, Occurrences: n, AnchorHead: anchorHead(r.Anchor)}
	}
	return template[:first] + r.Replacement + template[first+len(r.Anchor):], nil
}

// occurrences counts the anchor at every starting position, overlapping ones included.
func occurrences(s, anchor string) int {
	n := 0
	for i := 0; i <= len(s)-len(anchor); {
		j := strings.Index(s[i:], anchor)
		if j < 0 {
			break
		}
		n++
		i += j + 1
	}
	return n
}

func anchorHead(anchor string) string {
	line, _, _ := strings.Cut(anchor, "\n")
	line = strings.TrimSpace(line)
	if utf8.RuneCountInString(line) > maxAnchorHead {
		line = string([]rune(line)[:maxAnchorHead])
	}
	return line
}

// check refuses a spec that is wrong in itself, whatever the served templates: a missing name or
// canonical, both a description and a recut, a recut without an anchor, a parameter mapped to
// nothing. Params are checked in name order, so the error names the same one every time.
func (s AliasSpec) check() error {
	switch {
	case s.Name == "" || s.Canonical == "":
		return fmt.Errorf("%w: an alias needs a name and a canonical", ErrInvalidAliasSpec)
	case s.Description != "" && s.Recut != nil:
		return fmt.Errorf("%w: alias %q sets both a description and a recut", ErrInvalidAliasSpec, s.Name)
	case s.Recut != nil && s.Recut.Anchor == "":
		return fmt.Errorf("%w: alias %q: the recut anchor is empty", ErrInvalidAliasSpec, s.Name)
	}
	keys := make([]string, 0, len(s.Params))
	for key := range s.Params {
		keys = append(keys, key)
	}
	sort.Strings(keys)
	for _, key := range keys {
		if s.Params[key].MapsTo == "" {
			return fmt.Errorf("%w: alias %q: parameter %q maps to nothing", ErrInvalidAliasSpec, s.Name, key)
		}
	}
	return nil
}

// aliasEntry is the compact alias sent to the kernel; field order is the key order.
type aliasEntry struct {
	Type     string `json:"type"`
	Function struct {
		Name string `json:"name"`
	} `json:"function"`
	Canonical    string                `json:"canonical"`
	Params       map[string]AliasParam `json:"params,omitempty"`
	Omit         []string              `json:"omit,omitempty"`
	Description  string                `json:"description,omitempty"`
	DeferLoading *bool                 `json:"defer_loading,omitempty"`
}

// Entry builds the compact alias entry to send to the kernel, applying the recut against
// templates[s.Canonical] when s.Recut is set. The result never carries the recut: the kernel
// refuses one.
func (s AliasSpec) Entry(templates Templates) (json.RawMessage, error) {
	if err := s.check(); err != nil {
		return nil, err
	}
	description := s.Description
	if s.Recut != nil {
		template, ok := templates[s.Canonical]
		if !ok {
			return nil, &AnchorMoved{Alias: s.Name, Canonical: s.Canonical, Reason: TemplateMissing, AnchorHead: anchorHead(s.Recut.Anchor)}
		}
		var err error
		if description, err = ApplyRecut(template, *s.Recut); err != nil {
			var moved *AnchorMoved
			if errors.As(err, &moved) {
				moved.Alias, moved.Canonical = s.Name, s.Canonical
				return nil, moved
			}
			return nil, fmt.Errorf("alias %q: %w", s.Name, err)
		}
	}
	e := aliasEntry{Type: "function", Canonical: s.Canonical, Params: s.Params, Omit: s.Omit, Description: description, DeferLoading: s.DeferLoading}
	e.Function.Name = s.Name
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false) // kernel texts quote <task_result>; keep them as written
	if err := enc.Encode(e); err != nil {
		return nil, err
	}
	return json.RawMessage(bytes.TrimSuffix(b.Bytes(), []byte("\n"))), nil
}
